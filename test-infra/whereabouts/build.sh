#!/usr/bin/env bash
# Builds Whereabouts' CNI binary (github.com/k8snetworkplumbingwg/whereabouts/cmd, the module's
# package main) at the version go.mod pins, from the Go module proxy, into a cache outside the
# repository, and copies the module's own CRDs (doc/crds/*.yaml) beside it:
#   ${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}/whereabouts-<version>/whereabouts
#   ${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}/whereabouts-<version>/ip-control-loop
#   ${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}/whereabouts-<version>/daemonset-install.yaml
#   ${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}/whereabouts-<version>/crds/*.yaml
# A binary already there is kept: the build happens once per machine and version. Prints the
# binary's path and the CRD folder. A cold build takes ~2 min on 2 cores; see README.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

module=github.com/k8snetworkplumbingwg/whereabouts
version="$(awk -v m="$module" '{ for (i = 1; i < NF; i++) if ($i == m && $(i + 1) ~ /^v/) { print $(i + 1); exit } }' go.mod)"
if [[ -z "$version" ]]; then
  echo "build.sh: cannot read the $module version from $here/go.mod" >&2
  exit 1
fi

cache="${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}"
dir="$cache/whereabouts-$version"
bin="$dir/whereabouts"
crds="$dir/crds"

go_cmd="$(command -v go || true)"
[[ -z "$go_cmd" && -x /usr/local/go/bin/go ]] && go_cmd=/usr/local/go/bin/go
need_go() {
  if [[ -z "$go_cmd" ]]; then
    echo "build.sh: Go is not installed (looked on PATH and in /usr/local/go/bin); it is needed once to build $bin" >&2
    exit 1
  fi
}

if [[ ! -x "$bin" ]]; then
  need_go
  mkdir -p "$dir"
  started=$(date +%s)
  echo "build.sh: building $module/cmd $version -> $bin (nice -n 19)" >&2
  # The version variables hack/build-go.sh of the module sets, so `whereabouts --version` names it.
  ldflags="-s -w -X $module/pkg/version.Version=$version -X $module/pkg/version.ReleaseStatus=released"
  CGO_ENABLED=0 nice -n 19 "$go_cmd" build -buildvcs=false -trimpath -ldflags="$ldflags" -o "$bin.tmp.$$" "$module/cmd"
  mv -f "$bin.tmp.$$" "$bin"
  echo "build.sh: built $bin in $(($(date +%s) - started)) s" >&2
fi

# Whereabouts' pod controller and reconciler (its DaemonSet's `ip-control-loop`), from the same
# module: the cluster tests run it beside Whereabouts' binary as its own install does.
control_loop="$dir/ip-control-loop"
if [[ ! -x "$control_loop" ]]; then
  need_go
  started=$(date +%s)
  echo "build.sh: building $module/cmd/controlloop $version -> $control_loop (nice -n 19)" >&2
  ldflags="-s -w -X $module/pkg/version.Version=$version -X $module/pkg/version.ReleaseStatus=released"
  CGO_ENABLED=0 nice -n 19 "$go_cmd" build -buildvcs=false -trimpath -ldflags="$ldflags" -o "$control_loop.tmp.$$" "$module/cmd/controlloop"
  mv -f "$control_loop.tmp.$$" "$control_loop"
  echo "build.sh: built $control_loop in $(($(date +%s) - started)) s" >&2
fi

# Whereabouts' node-slice controller (cmd/nodeslicecontroller, a `tool` of this module), for the
# node-slice interop suites: the same version, built the same way, beside the CNI binary.
slicer="$dir/node-slice-controller"
if [[ ! -x "$slicer" ]]; then
  need_go
  mkdir -p "$dir"
  started=$(date +%s)
  echo "build.sh: building $module/cmd/nodeslicecontroller $version -> $slicer (nice -n 19)" >&2
  CGO_ENABLED=0 nice -n 19 "$go_cmd" build -buildvcs=false -trimpath -ldflags="-s -w" -o "$slicer.tmp.$$" "$module/cmd/nodeslicecontroller"
  mv -f "$slicer.tmp.$$" "$slicer"
  echo "build.sh: built $slicer in $(($(date +%s) - started)) s" >&2
fi

# The CRDs come from the same module version, so the tests install exactly what Whereabouts expects.
# Each is copied through a temporary file too; a complete set is marked by the .complete file.
if [[ ! -f "$crds/.complete" ]]; then
  need_go
  src="$("$go_cmd" mod download -json "$module@$version" | awk -F'"' '$2 == "Dir" { print $4 }')"
  if [[ -z "$src" || ! -d "$src/doc/crds" ]]; then
    echo "build.sh: no doc/crds in the module source of $module@$version (${src:-not downloaded})" >&2
    exit 1
  fi
  mkdir -p "$crds"
  for file in "$src"/doc/crds/whereabouts.cni.cncf.io_*.yaml; do
    cp "$file" "$crds/.$(basename "$file").tmp.$$"
    chmod 644 "$crds/.$(basename "$file").tmp.$$"
    mv -f "$crds/.$(basename "$file").tmp.$$" "$crds/$(basename "$file")"
  done
  touch "$crds/.complete"
fi

# Whereabouts' own install manifest (its RBAC, ConfigMap and DaemonSet), from the same module: the
# cluster tests install Whereabouts from it.
manifest="$dir/daemonset-install.yaml"
if [[ ! -f "$manifest" ]]; then
  need_go
  src="$("$go_cmd" mod download -json "$module@$version" | awk -F'"' '$2 == "Dir" { print $4 }')"
  if [[ -z "$src" || ! -f "$src/doc/crds/daemonset-install.yaml" ]]; then
    echo "build.sh: no doc/crds/daemonset-install.yaml in the module source of $module@$version (${src:-not downloaded})" >&2
    exit 1
  fi
  cp "$src/doc/crds/daemonset-install.yaml" "$manifest.tmp.$$"
  chmod 644 "$manifest.tmp.$$"
  mv -f "$manifest.tmp.$$" "$manifest"
fi

echo "$bin"
echo "$control_loop"
echo "$manifest"
echo "$crds"
