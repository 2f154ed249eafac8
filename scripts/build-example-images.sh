#!/bin/sh
# Builds the reference agents' images on this machine with no registry and no pull: each example is
# compiled, staged with the packages it needs from this checkout (scripts/stage-example.mjs), and
# built FROM the local Node base image (scripts/build-node-image.sh, built first when missing).
# Tags: localhost/agentrt/<example>:latest. With Docker and the public base image, use
# examples/Dockerfile instead (linux/arm64 and amd64).
#
#   sh scripts/build-example-images.sh                      # all five
#   sh scripts/build-example-images.sh weather mcp-server   # some
set -eu
cd "$(dirname "$0")/.."
. scripts/image-engine.sh
"$engine" image inspect "$base_image" >/dev/null 2>&1 || sh scripts/build-node-image.sh
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
for example in ${*:-weather sdk-agent custom-agent mcp-server a2a-agent}; do
  case "$example" in
    mcp-server) port=8000 ;; # each protocol's container contract (the runtime sets PORT itself)
    a2a-agent) port=9000 ;;
    *) port=8080 ;;
  esac
  npx tsc -b "examples/$example"
  node scripts/stage-example.mjs "$example" "$stage/app"
  printf '%s\n' "FROM $base_image" 'COPY app /app' 'WORKDIR /app' \
    "ENV NODE_ENV=production PORT=$port HOST=0.0.0.0 OTEL_SERVICE_NAME=$example" "EXPOSE $port" \
    'CMD ["node", "--require", "@agentrt/instrument", "dist/main.js"]' >"$stage/Containerfile"
  "$engine" build -q -t "localhost/agentrt/$example:latest" "$stage" >/dev/null
  echo "localhost/agentrt/$example:latest ($("$engine" image inspect -f '{{.Size}}' "localhost/agentrt/$example:latest" | awk '{printf "%.0f MB", $1/1e6}'))"
  rm -rf "$stage/app"
done
