#!/bin/sh
# Builds a local Node base image, localhost/agentrt/node:<major>, from the Node that
# scripts/ensure-node.sh provides and this machine's own shell tools: no registry, no pull. The
# image holds node, sh (dash), bash, a few coreutils and mount with the shared libraries they load, and
# /etc files for the `agent` user (65534). Agents' images build FROM it (scripts/build-example-images.sh).
#
#   sh scripts/build-node-image.sh            # podman (docker with AGENTRT_CONTAINER_ENGINE=docker)
set -eu
cd "$(dirname "$0")/.."
. scripts/image-engine.sh
tag="$base_image"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT

# A program and every shared library it loads, at the same paths as here.
add() {
  install -D -m 0755 "$1" "$root$2"
  ldd "$1" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
    [ -e "$root$lib" ] || install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
  done
}
add "$(command -v node)" /usr/bin/node
for tool in dash bash cat env id ls mkdir rm sleep dd head tail grep tr wc du cut seq setsid touch chmod cp mv ln mount umount; do
  add "$(command -v "$tool")" "/usr/bin/$tool"
done
ln -s dash "$root/usr/bin/sh"
ln -s usr/bin "$root/bin"
for dir in lib lib64; do [ -d "$root/usr/$dir" ] && ln -s "usr/$dir" "$root/$dir"; done
mkdir -p "$root/etc" "$root/tmp" "$root/app" "$root/proc" "$root/dev" "$root/sys"
chmod 1777 "$root/tmp"
printf 'root:x:0:0:root:/root:/bin/sh\nagent:x:65534:65534:agent:/tmp:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nagent:x:65534:\n' >"$root/etc/group"
cp /etc/nsswitch.conf "$root/etc/" 2>/dev/null || true
[ -d /etc/ssl/certs ] && mkdir -p "$root/etc/ssl" && cp -rL /etc/ssl/certs "$root/etc/ssl/"
tar -C "$root" -c . | "$engine" import \
  --change 'USER 65534:65534' --change 'WORKDIR /app' --change 'ENV PATH=/usr/bin' --change 'ENV HOME=/tmp' \
  --change 'CMD ["node"]' - "$tag" >/dev/null
echo "$tag ($("$engine" image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
