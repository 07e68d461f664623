#!/usr/bin/env bash
# Builds (once) and caches the real rancher-machine binary that the interop
# tests drive, from the Go module proxy. Prints the binary's path on stdout;
# everything else goes to stderr.
#
#   RANCHER_MACHINE_VERSION  tag of github.com/rancher/machine to build (pinned
#                            default below; never "latest": upstream's v0.16.x
#                            tags are plain docker-machine without cmd/rancher-machine)
#   HARVESTER_MACHINE_CACHE  cache root (default ${XDG_CACHE_HOME:-~/.cache}/harvester-machine)
#
# Why not `go install …@version`: the module's go.mod has a replace directive
# (github.com/urfave/cli), and `go install pkg@version` refuses such modules.
# So: download the module, build it from a writable copy of its source in a
# temporary directory, and keep only the binary, keyed by tag and Go version.
#
# The default is the newest tag that the Go module proxy serves here AND that
# the checksum database verifies: v0.15.0-rancher144 and -rancher141 are not
# served; -rancher142 and -rancher143 are served but their checksum look-up
# fails, so `go mod download` refuses them (on purpose: we do not turn
# verification off).
#
# Every failure prints exactly one line on stderr:
#   build-rancher-machine: step '<step>' failed: <what to do>
# and exits non-zero; when the Go build itself failed, the line names the log file
# that holds the full Go output. Progress lines ("building …", 2-3 minutes cold on
# 2 cores) are printed only when stderr is a terminal.
set -euo pipefail

MODULE="github.com/rancher/machine"
DEFAULT_VERSION="v0.15.0-rancher140"
VERSION="${RANCHER_MACHINE_VERSION:-$DEFAULT_VERSION}"
CACHE_ROOT="${HARVESTER_MACHINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/harvester-machine}"

TMP_DIR=""
cleanup() {
  if [ -n "$TMP_DIR" ] && [ -d "$TMP_DIR" ]; then
    chmod -R u+w "$TMP_DIR" 2>/dev/null || true
    rm -rf "$TMP_DIR"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

OUT_DIR=""
fail() { # fail <step> <what to do>
  echo "build-rancher-machine: step '$1' failed: $2" >&2
  # Leave no empty cache directory behind for a version that never built.
  if [ -n "$OUT_DIR" ]; then rmdir "$OUT_DIR" 2>/dev/null || true; fi
  exit 1
}
say() { # progress, only for a person watching
  if [ -t 2 ]; then echo "build-rancher-machine: $*" >&2; fi
}

# One line out of a JSON string field of `go mod download -json` (tab-indented,
# one field per line); JSON escapes such as \n and \t are left as they are.
json_field() { # json_field <name> <file>
  sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" "$2" | head -n 1
}

# --- check the inputs -------------------------------------------------------
case "$VERSION" in
  v[0-9]*.[0-9]*.[0-9]*) ;;
  *) fail "check version" "RANCHER_MACHINE_VERSION='$VERSION' is not a pinned tag; set it to a tag such as $DEFAULT_VERSION (or unset it)" ;;
esac
command -v go >/dev/null 2>&1 \
  || fail "find Go" "no 'go' on PATH; install Go >= 1.25 (rancher-machine is built from the Go module proxy)"
GO_VERSION="$(go env GOVERSION 2>/dev/null)" || GO_VERSION=""
[ -n "$GO_VERSION" ] || fail "find Go" "'go env GOVERSION' printed nothing; check the Go installation"

OUT_DIR="$CACHE_ROOT/rancher-machine-$VERSION-$GO_VERSION"
BIN="$OUT_DIR/rancher-machine"
LOG="$OUT_DIR/build.log"

# --- reuse the cached binary --------------------------------------------------
if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
  echo "$BIN"
  exit 0
fi

[ -w "$OUT_DIR" ] || { mkdir -p "$OUT_DIR" 2>/dev/null && [ -w "$OUT_DIR" ]; } \
  || { OUT_DIR=""; fail "create cache" "cannot create or write $CACHE_ROOT/rancher-machine-$VERSION-$GO_VERSION; make it writable or set HARVESTER_MACHINE_CACHE to a writable directory"; }
TMP_DIR="$(mktemp -d "${TMPDIR:-/tmp}/build-rancher-machine.XXXXXX")" \
  || fail "create temp dir" "mktemp failed; check that ${TMPDIR:-/tmp} is writable and has free space"
# The Go output goes to a log in the temp dir; it is kept (as $LOG) only when
# the build runs, so a version that fails to download leaves nothing behind.
TMP_LOG="$TMP_DIR/build.log"
: >"$TMP_LOG"

say "building $MODULE@$VERSION with $GO_VERSION (log: $LOG)"

# --- download the module source (checksums verified by Go as usual) ---------
DL_JSON="$TMP_DIR/download.json"
if ! (cd "$TMP_DIR" && go mod download -json "$MODULE@$VERSION") >"$DL_JSON" 2>>"$TMP_LOG"; then
  err="$(json_field Error "$DL_JSON")"
  case "$err" in
    *"403 Forbidden"* | *"404 Not Found"*"/@v/"* | *"unknown revision"* | *"invalid version"*)
      fail "download" "the Go module proxy does not serve $MODULE@$VERSION; set RANCHER_MACHINE_VERSION to a served tag (default $DEFAULT_VERSION)" ;;
    *"verifying"*)
      fail "download" "the checksum database cannot verify $MODULE@$VERSION here; set RANCHER_MACHINE_VERSION to a verifiable tag (default $DEFAULT_VERSION)" ;;
    *)
      [ -n "$err" ] || err="$(grep -v '^[[:space:]]*$' "$TMP_LOG" | tail -n 1)"
      fail "download" "go mod download $MODULE@$VERSION failed (${err:0:300}); check 'go env GOPROXY' and the network, then retry" ;;
  esac
fi
SRC_DIR="$(json_field Dir "$DL_JSON")"
COMMIT="$(json_field Hash "$DL_JSON")"
{ [ -n "$SRC_DIR" ] && [ -d "$SRC_DIR" ]; } \
  || fail "download" "go mod download printed no module directory for $MODULE@$VERSION; run 'go clean -modcache' if the module cache is damaged, then retry"
{ [ -d "$SRC_DIR/cmd/rancher-machine" ] && [ -f "$SRC_DIR/go.mod" ]; } \
  || fail "download" "$MODULE@$VERSION has no go.mod or no cmd/rancher-machine (upstream v0.16.x tags are plain docker-machine); pick a v0.15.0-rancherNNN tag"

# --- build from a writable copy ---------------------------------------------
{ cp -R "$SRC_DIR" "$TMP_DIR/src" && chmod -R u+w "$TMP_DIR/src"; } \
  || fail "copy source" "cannot copy $SRC_DIR into $TMP_DIR; check free space in ${TMPDIR:-/tmp}"

# The version shown by `rancher-machine --version` lives in package
# github.com/rancher/machine/version; upstream's scripts/build also passes
# -X main.VERSION, which sets nothing in this tree, so we set the real ones.
LDFLAGS="-s -w -X $MODULE/version.Version=$VERSION -X $MODULE/version.GitCommit=${COMMIT:-unknown}"
if ! (cd "$TMP_DIR/src" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "$LDFLAGS" \
  -o "$TMP_DIR/rancher-machine" ./cmd/rancher-machine) >>"$TMP_LOG" 2>&1; then
  cp "$TMP_LOG" "$LOG" 2>/dev/null || true
  last="$(grep -v '^[[:space:]]*$' "$TMP_LOG" | tail -n 1 | cut -c 1-200)"
  fail "go build" "building ./cmd/rancher-machine of $MODULE@$VERSION failed (${last:-no output}); see $LOG (a newer Go or a different RANCHER_MACHINE_VERSION may help)"
fi

# --- install into the cache atomically and check it runs --------------------
{ cp "$TMP_DIR/rancher-machine" "$OUT_DIR/.rancher-machine.$$" && mv -f "$OUT_DIR/.rancher-machine.$$" "$BIN"; } \
  || { rm -f "$OUT_DIR/.rancher-machine.$$"; fail "install" "cannot write $BIN; check free space and permissions in $OUT_DIR"; }
if ! "$BIN" --version >>"$TMP_LOG" 2>&1; then
  rm -f "$BIN"
  cp "$TMP_LOG" "$LOG" 2>/dev/null || true
  fail "check binary" "the built $BIN does not run '--version'; see $LOG"
fi
cp "$TMP_LOG" "$LOG" 2>/dev/null || true

say "built $("$BIN" --version 2>&1 | head -n 1)"
echo "$BIN"
