# Sourced by the image scripts: the pinned Node on PATH, the engine that builds ($engine: podman, or
# AGENTRT_CONTAINER_ENGINE), and the local Node base image's tag ($base_image). Needs $0's name.
. scripts/ensure-node.sh >/dev/null
engine="${AGENTRT_CONTAINER_ENGINE:-podman}"
command -v "$engine" >/dev/null 2>&1 || { echo "$(basename "$0" .sh): $engine is not installed" >&2; exit 1; }
base_image="localhost/agentrt/node:$(node -p 'process.versions.node.split(".")[0]')"
