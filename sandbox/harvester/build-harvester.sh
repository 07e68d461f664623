#!/usr/bin/env bash
# Builds (once) and caches Harvester's own `harvester` (its controllers and API server) and
# `webhook` from the Go module proxy, and copies the module's two charts beside them (the
# sandbox reads the flags, RBAC and CRDs from there). Prints one line: "<version> <dir>", where
#   <dir>/bin/harvester, <dir>/bin/webhook
#   <dir>/charts/harvester       the module's deploy/charts/harvester (Deployments, RBAC, values)
#   <dir>/charts/harvester-crd   the module's deploy/charts/harvester-crd (Harvester's CRDs)
#   <dir>/crds/*.yaml            CRDs of projects Harvester's controllers and webhook read, as each
#                                publishes them in the module version Harvester's go.mod names:
#                                Longhorn (longhorn-manager k8s/crds.yaml) and
#                                harvester-network-controller (manifests/crds)
# Everything else goes to stderr.
#
# github.com/harvester/harvester as the proxy serves it builds once it is copied out of the
# (read-only) module cache and its go.work, if any, is removed. One line is added before the
# build: the webhook's TLS listener (rancher/dynamiclistener, `ListenOpts.BindHost`, which
# Harvester leaves empty: every interface) binds to 127.0.0.1, as every server here must; nothing
# else in Harvester is changed. The `harvester` binary needs no change: the sandbox runs it with
# its HTTP and HTTPS ports at 0 (none opened) and its profiler on 127.0.0.1.
#
# Cache: $HARVESTER_MACHINE_CACHE (default ~/.cache/harvester-machine)/harvester-<version>-<go>.
# Every failure prints one line: which step failed and what to do.
set -euo pipefail

# Keep in step with sandbox/harvester/version.ts.
DEFAULT_VERSION=v1.8.0
CACHE_ROOT="${HARVESTER_MACHINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/harvester-machine}"
MODULE=github.com/harvester/harvester

fail() { echo "build-harvester: step '$1' failed: $2" >&2; exit 1; }
say() { echo "build-harvester: $*" >&2; }

command -v go >/dev/null 2>&1 \
  || fail "find Go" "no 'go' on PATH; install Go >= 1.24 (Harvester is built from the Go module proxy)"
GO_VERSION="$(go env GOVERSION)"

version="${1:-$DEFAULT_VERSION}"
case "$version" in
  v1.[0-9]*.[0-9]*) ;;
  *) fail "check version" "'$version' is not a pinned Harvester tag such as $DEFAULT_VERSION" ;;
esac
dir="$CACHE_ROOT/harvester-$version-$GO_VERSION"
if [ -x "$dir/bin/harvester" ] && [ -x "$dir/bin/webhook" ] \
  && [ -f "$dir/charts/harvester/Chart.yaml" ] && [ -d "$dir/charts/harvester-crd/templates" ] \
  && [ -f "$dir/crds/longhorn.yaml" ] && [ -f "$dir/crds/network.harvesterhci.io_vlanconfigs.yaml" ]; then
  echo "$version $dir"
  exit 0
fi

mkdir -p "$dir" || fail "create cache" "cannot create $dir; make it writable or set HARVESTER_MACHINE_CACHE"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/build-harvester.XXXXXX")" || fail "create temp dir" "mktemp failed; check ${TMPDIR:-/tmp}"
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
webhook_server="$src/pkg/webhook/server/server.go"
grep -q 'CertNamespace: s.options.Namespace,' "$webhook_server" \
  && ! grep -q 'BindHost' "$webhook_server" \
  && sed -i 's/^\([[:space:]]*\)CertNamespace: s.options.Namespace,$/&\n\1BindHost:      "127.0.0.1",/' "$webhook_server" \
  && grep -q 'BindHost:      "127.0.0.1",' "$webhook_server" \
  || fail "bind the webhook to 127.0.0.1" "$MODULE@$version's pkg/webhook/server/server.go no longer has the line this script extends (CertNamespace in ListenOpts); read it and update the script"

if [ ! -x "$dir/bin/harvester" ] || [ ! -x "$dir/bin/webhook" ]; then
  say "building harvester and webhook $version (cold: about 10 minutes on 2 shared cores, plus module downloads)"
  t0=$SECONDS
  # As Harvester's scripts/build stamps a tagged release: its version, and server-version's default.
  ldflags="-s -w -X github.com/harvester/harvester/pkg/version.Version=$version"
  ldflags="$ldflags -X github.com/harvester/harvester/pkg/settings.InjectDefaults={\"server-version\":\"$version\"}"
  if ! (cd "$src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" \
      -o "$tmp/bin/" ./cmd/webhook .) >>"$log" 2>&1; then
    cp "$log" "$dir/build.log" 2>/dev/null || true
    fail "go build" "building $MODULE@$version failed ($(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c 1-200)); see $dir/build.log"
  fi
  say "built harvester and webhook $version in $((SECONDS - t0)) s"
  mkdir -p "$dir/bin" && mv -f "$tmp/bin/harvester" "$tmp/bin/webhook" "$dir/bin/" \
    || fail "install" "cannot write $dir/bin; check free space and permissions"
fi

{ [ -f "$src/deploy/charts/harvester/Chart.yaml" ] && [ -d "$src/deploy/charts/harvester-crd/templates" ]; } \
  || fail "find charts" "$MODULE@$version has no deploy/charts/harvester or deploy/charts/harvester-crd"
next="$dir/charts.$$"
rm -rf "$next" && mkdir -p "$next" \
  && cp -r "$src/deploy/charts/harvester" "$src/deploy/charts/harvester-crd" "$next/" \
  && rm -rf "$dir/charts" && mv "$next" "$dir/charts" \
  || fail "copy charts" "cannot write $dir/charts; check free space"
# The dependencies' CRDs, from the module versions Harvester's go.mod resolves to (replace lines included).
deps="$( (cd "$src" && GOWORK=off GOFLAGS=-mod=mod go list -m -f '{{.Path}} {{.Dir}}' \
  github.com/longhorn/longhorn-manager github.com/harvester/harvester-network-controller) 2>>"$log")" \
  || fail "find dependency CRDs" "go list -m failed in $MODULE@$version ($(tail -n 1 "$log" | cut -c 1-200))"
longhorn_dir="$(echo "$deps" | awk '$1 == "github.com/longhorn/longhorn-manager" { print $2 }')"
network_dir="$(echo "$deps" | awk '$1 == "github.com/harvester/harvester-network-controller" { print $2 }')"
{ [ -f "$longhorn_dir/k8s/crds.yaml" ] && [ -d "$network_dir/manifests/crds" ]; } \
  || fail "find dependency CRDs" "longhorn-manager's k8s/crds.yaml or harvester-network-controller's manifests/crds missing ($longhorn_dir, $network_dir)"
next="$dir/crds.$$"
rm -rf "$next" && mkdir -p "$next" \
  && cp "$longhorn_dir/k8s/crds.yaml" "$next/longhorn.yaml" \
  && cp "$network_dir"/manifests/crds/*.yaml "$next/" \
  && chmod -R u+w "$next" && rm -rf "$dir/crds" && mv "$next" "$dir/crds" \
  || fail "copy dependency CRDs" "cannot write $dir/crds; check free space"
echo "$version $dir"
