#!/usr/bin/env bash
# Builds the control-plane parts a real cluster needs beside the suite's kube-apiserver, from the
# same k8s.io/kubernetes release (go.mod beside this script pins it), into a cache outside the
# repository:
#   <cache>/kube-controller-manager-<version>/kube-controller-manager
#   <cache>/kube-scheduler-<version>/kube-scheduler
#   <cache>/kubectl-<version>/kubectl
# where <cache> is ${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}. A binary already
# there is kept: the build happens once per machine and version. Prints the three paths.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../lib.sh"

k8s="$(version_of "$here/go.mod" k8s.io/kubernetes)"
if [[ -z "$k8s" ]]; then
  echo "build.sh: cannot read the k8s.io/kubernetes version from $here/go.mod" >&2
  exit 1
fi
for cmd in kube-controller-manager kube-scheduler kubectl; do
  go_build "$here" "k8s.io/kubernetes/cmd/$cmd" "$cache/$cmd-$k8s/$cmd" "$(k8s_ldflags "$k8s")"
done
for cmd in kube-controller-manager kube-scheduler kubectl; do echo "$cache/$cmd-$k8s/$cmd"; done
