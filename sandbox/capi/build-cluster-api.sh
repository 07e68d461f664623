#!/usr/bin/env bash
# Builds (once) and caches Cluster API's core controller-manager, its CRDs and its webhook
# configuration, from the Go module proxy, for each version named (default: every version the
# sandbox runs, see versions.ts). Prints one line per version: "<version> <dir>", where
#   <dir>/bin/manager          the manager (`go install sigs.k8s.io/cluster-api@<version>`: the
#                              module root's main package is the core manager)
#   <dir>/crds/*.yaml          the module's config/crd/bases
#   <dir>/webhook/manifests.yaml  the module's config/webhook/manifests.yaml
# Everything else goes to stderr.
#
# Cache: $HARVESTER_MACHINE_CACHE (default ~/.cache/harvester-machine)/cluster-api-<version>-<go>,
# keyed by the Cluster API and the Go versions. Every failure prints one line: which step
# failed and what to do.
set -euo pipefail

# Keep in step with sandbox/capi/versions.ts.
DEFAULT_VERSIONS=(v1.10.6 v1.13.6)
CACHE_ROOT="${HARVESTER_MACHINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/harvester-machine}"
MODULE=sigs.k8s.io/cluster-api

fail() { echo "build-cluster-api: step '$1' failed: $2" >&2; exit 1; }
say() { echo "build-cluster-api: $*" >&2; }

command -v go >/dev/null 2>&1 \
  || fail "find Go" "no 'go' on PATH; install Go >= 1.24 (Cluster API is built from the Go module proxy)"
GO_VERSION="$(go env GOVERSION)"

TMP_DIRS=()
cleanup() { for d in "${TMP_DIRS[@]}"; do chmod -R u+w "$d" 2>/dev/null || true; rm -rf "$d"; done; }
trap cleanup EXIT

# The module's source directory in the module cache (downloaded if missing; checksums verified).
module_dir() { # module_dir <version> <tmp>
  (cd "$2" && go mod download -json "$MODULE@$1") 2>>"$2/build.log" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n 1
}

build_one() {
  local version="$1"
  case "$version" in
    v1.[0-9]*.[0-9]*) ;;
    *) fail "check version" "'$version' is not a pinned Cluster API tag such as ${DEFAULT_VERSIONS[0]}" ;;
  esac
  local dir="$CACHE_ROOT/cluster-api-$version-$GO_VERSION"
  if [ -x "$dir/bin/manager" ] && [ -f "$dir/webhook/manifests.yaml" ] && [ -n "$(ls "$dir/crds" 2>/dev/null)" ]; then
    echo "$version $dir"
    return
  fi
  mkdir -p "$dir" || fail "create cache" "cannot create $dir; make it writable or set HARVESTER_MACHINE_CACHE"
  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/build-cluster-api.XXXXXX")" || fail "create temp dir" "mktemp failed; check ${TMPDIR:-/tmp}"
  TMP_DIRS+=("$tmp")
  : >"$tmp/build.log"

  if [ ! -x "$dir/bin/manager" ]; then
    say "building the Cluster API manager $version (cold: about 2 min on 2 cores, plus module downloads)"
    local t0=$SECONDS
    if ! GOBIN="$tmp/bin" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "$MODULE@$version" >>"$tmp/build.log" 2>&1; then
      cp "$tmp/build.log" "$dir/build.log" 2>/dev/null || true
      fail "go install" "go install $MODULE@$version failed ($(grep -v '^[[:space:]]*$' "$tmp/build.log" | tail -n 1 | cut -c 1-200)); see $dir/build.log and check 'go env GOPROXY'"
    fi
    mkdir -p "$dir/bin" && mv -f "$tmp/bin/cluster-api" "$dir/bin/manager" \
      || fail "install" "cannot write $dir/bin/manager; check free space and permissions"
    say "built the Cluster API manager $version in $((SECONDS - t0)) s"
  fi

  local src
  src="$(module_dir "$version" "$tmp")"
  { [ -n "$src" ] && [ -d "$src/config/crd/bases" ] && [ -f "$src/config/webhook/manifests.yaml" ]; } \
    || fail "find CRDs" "$MODULE@$version has no config/crd/bases or config/webhook/manifests.yaml in the module cache; run 'go clean -modcache' if it is damaged, then retry"
  local next="$dir/manifests.$$"
  rm -rf "$next" && mkdir -p "$next/crds" "$next/webhook" \
    && cp "$src"/config/crd/bases/*.yaml "$next/crds/" && cp "$src/config/webhook/manifests.yaml" "$next/webhook/" \
    && chmod -R u+w "$next" && rm -rf "$dir/crds" "$dir/webhook" && mv "$next/crds" "$next/webhook" "$dir/" && rmdir "$next" \
    || fail "copy manifests" "cannot write $dir/crds and $dir/webhook; check free space"
  echo "$version $dir"
}

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=("${DEFAULT_VERSIONS[@]}")
for v in "${versions[@]}"; do build_one "$v"; done
