#!/usr/bin/env bash
# Builds kube-apiserver (k8s.io/kubernetes/cmd/kube-apiserver) and etcd (go.etcd.io/etcd/server/v3)
# at the versions go.mod pins, from the Go module proxy, into a cache outside the repository:
#   ${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}/kube-apiserver-<version>/kube-apiserver
#   ${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}/etcd-<version>/etcd
# A binary already there is kept: the build happens once per machine and version. Prints the two
# paths. A cold build (empty module and build caches) takes ~9 min on 2 cores; see README.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

version_of() { awk -v m="$1" '{ for (i = 1; i < NF; i++) if ($i == m && $(i + 1) ~ /^v/) { print $(i + 1); exit } }' go.mod; }
k8s="$(version_of k8s.io/kubernetes)"
etcd="$(version_of go.etcd.io/etcd/server/v3)"
if [[ -z "$k8s" || -z "$etcd" ]]; then
  echo "build.sh: cannot read the k8s.io/kubernetes and go.etcd.io/etcd/server/v3 versions from $here/go.mod" >&2
  exit 1
fi

cache="${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}"
apiserver_bin="$cache/kube-apiserver-$k8s/kube-apiserver"
etcd_bin="$cache/etcd-$etcd/etcd"

go_cmd="$(command -v go || true)"
[[ -z "$go_cmd" && -x /usr/local/go/bin/go ]] && go_cmd=/usr/local/go/bin/go
need_go() {
  if [[ -z "$go_cmd" ]]; then
    echo "build.sh: Go is not installed (looked on PATH and in /usr/local/go/bin); it is needed once to build $1" >&2
    exit 1
  fi
}

# Builds package $1 into $2 through a temporary file, so an interrupted build leaves no binary.
build() {
  local package="$1" out="$2" ldflags="$3" started
  need_go "$out"
  mkdir -p "$(dirname "$out")"
  started=$(date +%s)
  echo "build.sh: building $package -> $out (nice -n 19; a cold build takes minutes)" >&2
  nice -n 19 "$go_cmd" build -buildvcs=false -trimpath -ldflags="$ldflags" -o "$out.tmp.$$" "$package"
  mv -f "$out.tmp.$$" "$out"
  echo "build.sh: built $out in $(($(date +%s) - started)) s" >&2
}

minor="${k8s#v1.}"
minor="${minor%%.*}"
version_pkg=k8s.io/component-base/version
[[ -x "$apiserver_bin" ]] || build k8s.io/kubernetes/cmd/kube-apiserver "$apiserver_bin" \
  "-s -w -X $version_pkg.gitVersion=$k8s -X $version_pkg.gitMajor=1 -X $version_pkg.gitMinor=$minor -X $version_pkg.gitTreeState=clean"
[[ -x "$etcd_bin" ]] || build ./cmd/etcd "$etcd_bin" "-s -w"

echo "$apiserver_bin"
echo "$etcd_bin"
