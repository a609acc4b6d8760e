#!/usr/bin/env bash
# `pnpm image`: builds ipamkit's OCI image with buildah — no daemon, no base image (built `from
# scratch`) — and writes it as an OCI archive an operator pushes with skopeo or imports with ctr:
#   scripts/build-image.sh [OUT.tar]      default: dist/image/ipamkit-<version>.oci.tar
#   skopeo copy oci-archive:OUT.tar docker://REGISTRY/ipamkit:<version>
# Contents (every entrypoint runs with /usr/bin/node; no shell in the image):
#   /usr/bin/node (this machine's, stripped) and the libraries ldd lists for it (glibc, libstdc++ …)
#   /app/dist/ipamkit            the static CNI binary (installed onto the host by ipamkit-install)
#   /app/dist/ipamkit-node, ipamkit-*.cjs (+ .v8cache)   the plugin's Node files (direct mode, the agent's stores)
#   /app/dist/ipamkit-agent      the node-local agent
#   /app/dist/ipamkit-install    the DaemonSet's installer; /app/dist/ipamkit-probe its agent probe
#   /app/reconciler/ipamkit-reconciler.cjs   the reconciler
#   /app/cli/ipamkit-cli.cjs     the ipamkit command (pools, show, audit, release)
#   /app/proto                   etcd3's gRPC schema, which both read at load time
# Needs root (buildah's vfs storage, kept in a temporary directory and removed afterwards),
# Debian's buildah (apt-get install -y buildah), Node 20 and the workspace's dependencies
# (pnpm install). IPAMKIT_IMAGE_TAG overrides the image reference inside the archive.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="$(awk '$1 == "appVersion:" { gsub(/"/, "", $2); print $2; exit }' "$root/charts/ipamkit/Chart.yaml")"
out="${1:-$root/dist/image/ipamkit-$version.oci.tar}"
tag="${IPAMKIT_IMAGE_TAG:-ipamkit:$version}"

fail() {
  echo "build-image.sh: $*" >&2
  exit 1
}
command -v buildah >/dev/null || fail "buildah is not installed: apt-get install -y buildah"
command -v node >/dev/null || fail "node is not on PATH"
[[ $(id -u) -eq 0 ]] || fail "run as root (buildah's vfs storage without a user namespace)"
started=$(date +%s.%N)

# 1. the files: the plugin and agent, the installer and probe, the reconciler and CLI bundles.
# IPAMKIT_PLUGIN_DIST / IPAMKIT_INSTALL_DIST name already built dist/ directories to take instead
# of building examples/cni-plugin and examples/install (the image test passes its own copies, so
# that the build does not empty a dist/ other tests are running from).
work="$(mktemp -d /tmp/ipamkit-image-XXXXXX)"
ctr=""
cleanup() {
  [[ -n "$ctr" ]] && buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs rm "$ctr" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
stage="$work/rootfs"
mkdir -p "$stage/app/dist" "$stage/usr/bin" "$stage/tmp"
chmod 1777 "$stage/tmp"
plugin_files=(ipamkit ipamkit-node ipamkit-agent ipamkit-direct.cjs ipamkit-etcd.cjs ipamkit-etcd.cjs.v8cache
  ipamkit-kubernetes.cjs ipamkit-kubernetes.cjs.v8cache package.json)
if [[ -n "${IPAMKIT_PLUGIN_DIST:-}" ]]; then
  (cd "$IPAMKIT_PLUGIN_DIST" && cp "${plugin_files[@]}" "$stage/app/dist/") || fail "IPAMKIT_PLUGIN_DIST=$IPAMKIT_PLUGIN_DIST lacks the plugin's files"
else
  # the plugin's build empties its dist/ first: a test run rebuilding it meanwhile can pull files
  # away, so build and copy again (up to 3 times) until one copy is whole
  for attempt in 1 2 3; do
    if (cd "$root/examples/cni-plugin" && node build.mjs) && (cd "$root/examples/cni-plugin/dist" && cp "${plugin_files[@]}" "$stage/app/dist/"); then
      break
    fi
    [[ $attempt -eq 3 ]] && fail "examples/cni-plugin: node build.mjs failed 3 times"
    echo "build-image.sh: the plugin's build or copy failed (attempt $attempt); again" >&2
  done
fi
install_dist="${IPAMKIT_INSTALL_DIST:-}"
if [[ -z "$install_dist" ]]; then
  (cd "$root/examples/install" && node build.mjs)
  install_dist="$root/examples/install/dist"
fi
cp "$install_dist/ipamkit-install" "$install_dist/ipamkit-probe" "$stage/app/dist/" || fail "no ipamkit-install/ipamkit-probe in $install_dist"
node "$root/examples/install/image/bundle-programs.mjs" "$stage/app"

# 2. Node and the shared libraries it links (the paths ldd resolves, and the dynamic loader)
node_bin="$(readlink -f "$(command -v node)")"
# without its symbols (~12 MB of the ~99 MB binary; binutils' strip when present)
if command -v strip >/dev/null; then strip -o "$stage/usr/bin/node" "$node_bin"; else cp "$node_bin" "$stage/usr/bin/node"; fi
ldd "$node_bin" | awk '/=> \// { print $3 } /^[ \t]*\/[^ ]+ \(/ { print $1 }' | while read -r lib; do
  mkdir -p "$stage$(dirname "$lib")"
  cp -L "$lib" "$stage$lib"
done

env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin chroot "$stage" /usr/bin/node -e 0 || fail "node does not start inside the staged root file system ($stage)"

# 3. the image, from scratch
bah=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
ctr="$("${bah[@]}" from scratch)"
"${bah[@]}" copy "$ctr" "$stage" / >/dev/null
"${bah[@]}" config \
  --env PATH=/usr/bin \
  --workingdir /app \
  --entrypoint '["/usr/bin/node"]' \
  --cmd '["/app/dist/ipamkit-install", "--help"]' \
  --label "org.opencontainers.image.title=ipamkit" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.description=ipamkit: CNI IPAM plugin, node agent, installer, reconciler and CLI" \
  "$ctr"
mkdir -p "$(dirname "$out")"
rm -f "$out"
"${bah[@]}" commit --quiet --format oci --disable-compression=false "$ctr" "oci-archive:$out:$tag" >/dev/null
elapsed=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "build-image.sh: $out ($tag): $(du -h "$out" | cut -f1) archive, rootfs $(du -sh "$stage" | cut -f1), built in ${elapsed} s" >&2
echo "$out"
