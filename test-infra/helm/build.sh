#!/usr/bin/env bash
# Builds helm (helm.sh/helm/v4/cmd/helm, a `tool` of this module) at the version go.mod pins, from
# the Go module proxy, into a cache outside the repository:
#   ${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}/helm-<version>/helm
# A binary already there is kept: the build happens once per machine and version. Prints the path.
# charts/ipamkit's tests run `helm lint` and `helm template` with it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

version="$(awk '$1 == "helm.sh/helm/v4" && $2 ~ /^v/ { print $2; exit }' go.mod)"
if [[ -z "$version" ]]; then
  echo "build.sh: cannot read the helm.sh/helm/v4 version from $here/go.mod" >&2
  exit 1
fi
cache="${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}"
out="$cache/helm-$version/helm"

if [[ ! -x "$out" ]]; then
  go_cmd="$(command -v go || true)"
  [[ -z "$go_cmd" && -x /usr/local/go/bin/go ]] && go_cmd=/usr/local/go/bin/go
  if [[ -z "$go_cmd" ]]; then
    echo "build.sh: Go is not installed (looked on PATH and in /usr/local/go/bin); it is needed once to build $out" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$out")"
  started=$(date +%s)
  echo "build.sh: building helm.sh/helm/v4/cmd/helm $version -> $out (nice -n 19)" >&2
  # through a temporary file, so an interrupted build leaves no binary
  nice -n 19 "$go_cmd" build -buildvcs=false -trimpath \
    -ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$version" \
    -o "$out.tmp.$$" helm.sh/helm/v4/cmd/helm
  mv -f "$out.tmp.$$" "$out"
  echo "build.sh: built $out in $(($(date +%s) - started)) s" >&2
fi
echo "$out"
