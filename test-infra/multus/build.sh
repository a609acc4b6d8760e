#!/usr/bin/env bash
# Builds Multus' thin CNI plugin (gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/multus, a `tool`
# of the module beside this script) at the version go.mod pins, from the Go module proxy, and copies
# the module's own deployment manifest (its NetworkAttachmentDefinition CRD) beside it:
#   <cache>/multus-<version>/multus
#   <cache>/multus-<version>/multus-daemonset.yml
# where <cache> is ${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}. The proxy serves
# exact versions only (no version list), so `go install …@v4.2.2` fails; a module that requires it
# builds. Kept once built. Prints the two paths.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../lib.sh"

module=gopkg.in/k8snetworkplumbingwg/multus-cni.v4
version="$(version_of "$here/go.mod" "$module")"
if [[ -z "$version" ]]; then
  echo "build.sh: cannot read the $module version from $here/go.mod" >&2
  exit 1
fi
dir="$cache/multus-$version"
go_build "$here" "$module/cmd/multus" "$dir/multus" "-s -w -X $module/pkg/multus.version=$version"

if [[ ! -f "$dir/multus-daemonset.yml" ]]; then
  need_go "$dir/multus-daemonset.yml"
  src="$(cd "$here" && "$go_cmd" mod download -json "$module@$version" | awk -F'"' '$2 == "Dir" { print $4 }')"
  if [[ -z "$src" || ! -f "$src/deployments/multus-daemonset.yml" ]]; then
    echo "build.sh: no deployments/multus-daemonset.yml in the module source of $module@$version (${src:-not downloaded})" >&2
    exit 1
  fi
  cp "$src/deployments/multus-daemonset.yml" "$dir/.multus-daemonset.yml.tmp.$$"
  chmod 644 "$dir/.multus-daemonset.yml.tmp.$$"
  mv -f "$dir/.multus-daemonset.yml.tmp.$$" "$dir/multus-daemonset.yml"
fi
echo "$dir/multus"
echo "$dir/multus-daemonset.yml"
