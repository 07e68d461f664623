#!/usr/bin/env bash
# Builds (once) and caches KubeVirt's virt-api and virt-controller from the Go module proxy, and
# the objects virt-operator would install for them (manifests/main.go, run once per version and
# generator source). Prints one line: "<version> <dir> <manifests>", where
#   <dir>/bin/virt-api, <dir>/bin/virt-controller
#   <manifests> = <dir>/manifests-<generator sum>.jsonl: CRDs, RBAC, webhook configurations and
#   APIServices, one JSON object per line
# Everything else goes to stderr.
#
# kubevirt.io/kubevirt as the proxy serves it names its staging directories in two `replace`
# lines (kubevirt.io/api, kubevirt.io/client-go => ./staging/...), which the module zip does not
# carry, and has a go.work that names them too: the module is copied, those two lines are pointed
# at the published modules of the same version, and it is built with the workspace off.
#
# Cache: $HARVESTER_MACHINE_CACHE (default ~/.cache/harvester-machine)/kubevirt-<version>-<go>.
# Every failure prints one line: which step failed and what to do.
set -euo pipefail

# Keep in step with sandbox/kubevirt/version.ts.
DEFAULT_VERSION=v1.7.0
CACHE_ROOT="${HARVESTER_MACHINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/harvester-machine}"
MODULE=kubevirt.io/kubevirt
HERE="$(cd "$(dirname "$0")" && pwd)"
GENERATOR="$HERE/manifests/main.go"

fail() { echo "build-kubevirt: step '$1' failed: $2" >&2; exit 1; }
say() { echo "build-kubevirt: $*" >&2; }

command -v go >/dev/null 2>&1 \
  || fail "find Go" "no 'go' on PATH; install Go >= 1.24 (KubeVirt is built from the Go module proxy)"
GO_VERSION="$(go env GOVERSION)"

version="${1:-$DEFAULT_VERSION}"
case "$version" in
  v1.[0-9]*.[0-9]*) ;;
  *) fail "check version" "'$version' is not a pinned KubeVirt tag such as $DEFAULT_VERSION" ;;
esac
dir="$CACHE_ROOT/kubevirt-$version-$GO_VERSION"
generator_sum="$(sha256sum "$GENERATOR" | cut -c 1-12)"
manifests="$dir/manifests-$generator_sum.jsonl"
if [ -x "$dir/bin/virt-api" ] && [ -x "$dir/bin/virt-controller" ] && [ -s "$manifests" ]; then
  echo "$version $dir $manifests"
  exit 0
fi

mkdir -p "$dir" || fail "create cache" "cannot create $dir; make it writable or set HARVESTER_MACHINE_CACHE"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/build-kubevirt.XXXXXX")" || fail "create temp dir" "mktemp failed; check ${TMPDIR:-/tmp}"
trap 'chmod -R u+w "$tmp" 2>/dev/null || true; rm -rf "$tmp"' EXIT
log="$tmp/build.log"
: >"$log"

src_dir="$( (cd "$tmp" && go mod download -json "$MODULE@$version") 2>>"$log" \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n 1)"
[ -n "$src_dir" ] && [ -f "$src_dir/go.mod" ] \
  || fail "download" "go mod download $MODULE@$version failed ($(tail -n 1 "$log" | cut -c 1-200)); check 'go env GOPROXY'"

src="$tmp/src"
cp -r "$src_dir" "$src" && chmod -R u+w "$src" || fail "copy module" "cannot copy $src_dir to $tmp; check free space"
rm -f "$src/go.work" "$src/go.work.sum"
(cd "$src" && go mod edit \
  -replace "kubevirt.io/api=kubevirt.io/api@$version" \
  -replace "kubevirt.io/client-go=kubevirt.io/client-go@$version") \
  || fail "point replace lines" "go mod edit failed in the copy of $MODULE@$version"
mkdir -p "$src/cmd/hm-kubevirt-manifests" && cp "$GENERATOR" "$src/cmd/hm-kubevirt-manifests/main.go"

# Warm (only the generator changed), Go's build cache makes this a link step.
say "building virt-api and virt-controller $version (cold: about 4 CPU-minutes, plus module downloads)"
t0=$SECONDS
if ! (cd "$src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X kubevirt.io/client-go/version.gitVersion=$version" \
    -o "$tmp/bin/" ./cmd/virt-api ./cmd/virt-controller ./cmd/hm-kubevirt-manifests) >>"$log" 2>&1; then
  cp "$log" "$dir/build.log" 2>/dev/null || true
  fail "go build" "building $MODULE@$version failed ($(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c 1-200)); see $dir/build.log"
fi
say "built virt-api and virt-controller $version in $((SECONDS - t0)) s"

"$tmp/bin/hm-kubevirt-manifests" --namespace=kubevirt >"$tmp/manifests.jsonl" 2>>"$log" \
  || fail "generate manifests" "the manifest generator failed ($(tail -n 1 "$log" | cut -c 1-200))"
mkdir -p "$dir/bin" \
  && mv -f "$tmp/bin/virt-api" "$tmp/bin/virt-controller" "$dir/bin/" \
  && mv -f "$tmp/manifests.jsonl" "$manifests" \
  || fail "install" "cannot write $dir; check free space and permissions"
echo "$version $dir $manifests"
