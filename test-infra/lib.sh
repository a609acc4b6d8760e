# Shared by test-infra/*/build.sh (sourced, never run): the binary cache, the Go command, and a
# build that goes through a temporary file, so that an interrupted build leaves no binary.

# ${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}: outside the repository, keyed by version.
cache="${IPAMKIT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ipamkit}"
go_cmd="$(command -v go || true)"
[[ -z "$go_cmd" && -x /usr/local/go/bin/go ]] && go_cmd=/usr/local/go/bin/go
export GOTOOLCHAIN=local

# version_of <go.mod> <module>: the version go.mod requires (a require line or a line of a block).
version_of() { awk -v m="$2" '{ for (i = 1; i < NF; i++) if ($i == m && $(i + 1) ~ /^v/) { print $(i + 1); exit } }' "$1"; }

need_go() {
  if [[ -z "$go_cmd" ]]; then
    echo "build.sh: Go is not installed (looked on PATH and in /usr/local/go/bin); it is needed once to build $1" >&2
    exit 1
  fi
}

# go_build <module dir> <package> <out> <ldflags>: static (CGO_ENABLED=0), niced so that running
# tests keep the CPU; a binary already at <out> is kept (once per machine and version).
go_build() {
  local dir="$1" package="$2" out="$3" ldflags="$4" started
  [[ -x "$out" ]] && return 0
  need_go "$out"
  mkdir -p "$(dirname "$out")"
  started=$(date +%s)
  echo "build.sh: building $package -> $out (nice -n 19; a cold build takes minutes)" >&2
  (cd "$dir" && CGO_ENABLED=0 nice -n 19 "$go_cmd" build -buildvcs=false -trimpath -ldflags="$ldflags" -o "$out.tmp.$$" "$package")
  mv -f "$out.tmp.$$" "$out"
  echo "build.sh: built $out in $(($(date +%s) - started)) s" >&2
}

# k8s_ldflags <version>: the version variables Kubernetes' own build sets (`--version` names it).
k8s_ldflags() {
  local minor="${1#v1.}"
  minor="${minor%%.*}"
  local pkg=k8s.io/component-base/version
  echo "-s -w -X $pkg.gitVersion=$1 -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
}
