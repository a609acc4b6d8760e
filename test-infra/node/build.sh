#!/usr/bin/env bash
# Builds the binaries of a real Kubernetes node from the Go module proxy, at the versions the four
# Go modules beside this script pin, into a cache outside the repository:
#   <cache>/kubelet-<version>/kubelet                  (kubelet/: k8s.io/kubernetes/cmd/kubelet)
#   <cache>/containerd-<version>/{containerd,containerd-shim-runc-v2,ctr}   (containerd/)
#   <cache>/crictl-<version>/crictl                    (crictl/: sigs.k8s.io/cri-tools)
#   <cache>/cni-plugins-<version>/{bridge,macvlan,loopback,host-local,portmap}   (cni-plugins/)
# where <cache> is ${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}. A binary already
# there is kept: the build happens once per machine and version. Prints the four folders. A cold
# build takes ~7 min on 2 cores; see README.md. runc comes from Debian (scripts/run.mjs).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

version_of() { awk -v m="$2" '{ for (i = 1; i < NF; i++) if ($i == m && $(i + 1) ~ /^v/) { print $(i + 1); exit } }' "$1/go.mod"; }
cache="${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}"

go_cmd="$(command -v go || true)"
[[ -z "$go_cmd" && -x /usr/local/go/bin/go ]] && go_cmd=/usr/local/go/bin/go

# build <module dir> <package> <out> <ldflags> [tags]: through a temporary file, so an interrupted
# build leaves no binary; static (CGO_ENABLED=0), niced so that running tests keep the CPU.
build() {
  local dir="$1" package="$2" out="$3" ldflags="$4" tags="${5:-}" started
  if [[ -z "$go_cmd" ]]; then
    echo "build.sh: Go is not installed (looked on PATH and in /usr/local/go/bin); it is needed once to build $out" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$out")"
  started=$(date +%s)
  echo "build.sh: building $package -> $out (nice -n 19; a cold build takes minutes)" >&2
  (cd "$dir" && CGO_ENABLED=0 nice -n 19 "$go_cmd" build -buildvcs=false -trimpath -tags="$tags" \
    -ldflags="$ldflags" -o "$out.tmp.$$" "$package")
  mv -f "$out.tmp.$$" "$out"
  echo "build.sh: built $out in $(($(date +%s) - started)) s" >&2
}

k8s="$(version_of kubelet k8s.io/kubernetes)"
ctrd="$(version_of containerd github.com/containerd/containerd/v2)"
crictl="$(version_of crictl sigs.k8s.io/cri-tools)"
cni="$(version_of cni-plugins github.com/containernetworking/plugins)"
if [[ -z "$k8s" || -z "$ctrd" || -z "$crictl" || -z "$cni" ]]; then
  echo "build.sh: cannot read the pinned versions from $here/{kubelet,containerd,crictl,cni-plugins}/go.mod" >&2
  exit 1
fi

minor="${k8s#v1.}"
minor="${minor%%.*}"
version_pkg=k8s.io/component-base/version
out="$cache/kubelet-$k8s"
[[ -x "$out/kubelet" ]] || build kubelet k8s.io/kubernetes/cmd/kubelet "$out/kubelet" \
  "-s -w -X $version_pkg.gitVersion=$k8s -X $version_pkg.gitMajor=1 -X $version_pkg.gitMinor=$minor -X $version_pkg.gitTreeState=clean"

out="$cache/containerd-$ctrd"
ctrd_ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$ctrd"
for cmd in containerd containerd-shim-runc-v2 ctr; do
  [[ -x "$out/$cmd" ]] || build containerd "github.com/containerd/containerd/v2/cmd/$cmd" "$out/$cmd" \
    "$ctrd_ldflags" no_btrfs,no_devmapper,no_zfs
done

out="$cache/crictl-$crictl"
[[ -x "$out/crictl" ]] || build crictl sigs.k8s.io/cri-tools/cmd/crictl "$out/crictl" \
  "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$crictl"

out="$cache/cni-plugins-$cni"
cni_ldflags="-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$cni"
for plugin in main/bridge main/macvlan main/loopback ipam/host-local meta/portmap; do
  [[ -x "$out/${plugin#*/}" ]] || build cni-plugins "github.com/containernetworking/plugins/plugins/$plugin" \
    "$out/${plugin#*/}" "$cni_ldflags"
done

echo "$cache/kubelet-$k8s"
echo "$cache/containerd-$ctrd"
echo "$cache/crictl-$crictl"
echo "$cache/cni-plugins-$cni"
