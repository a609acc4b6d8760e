#!/usr/bin/env bash
# Builds monitoring-check (main.go: the Prometheus Operator's ServiceMonitor and PrometheusRule
# decoded strictly into the operator's own Go types) at the version go.mod pins, from the Go module
# proxy, into a cache outside the repository:
#   ${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}/monitoring-check-<version>/monitoring-check
# A binary already there is kept: the build happens once per machine and version. Prints the path.
# charts/ipamkit's tests (examples/install/src/chart-metrics.test.ts) run it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

module=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring
version="$(awk -v m="$module" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' go.mod)"
if [[ -z "$version" ]]; then
  echo "build.sh: cannot read the $module version from $here/go.mod" >&2
  exit 1
fi
cache="${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}"
# the source is part of the key: a changed main.go builds anew
sum="$(sha256sum main.go | cut -c1-12)"
out="$cache/monitoring-check-$version-$sum/monitoring-check"

if [[ ! -x "$out" ]]; then
  go_cmd="$(command -v go || true)"
  [[ -z "$go_cmd" && -x /usr/local/go/bin/go ]] && go_cmd=/usr/local/go/bin/go
  if [[ -z "$go_cmd" ]]; then
    echo "build.sh: Go is not installed (looked on PATH and in /usr/local/go/bin); it is needed once to build $out" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$out")"
  started=$(date +%s)
  echo "build.sh: building monitoring-check ($module $version) -> $out (nice -n 19)" >&2
  GOTOOLCHAIN=local nice -n 19 "$go_cmd" build -buildvcs=false -trimpath -ldflags="-s -w" -o "$out.tmp.$$" .
  mv -f "$out.tmp.$$" "$out"
  echo "build.sh: built $out in $(($(date +%s) - started)) s" >&2
fi
echo "$out"
