#!/usr/bin/env bash
# Builds the controller image as an OCI archive, without Docker and without pulling anything:
# Debian's buildah (vfs storage in a temporary directory) commits a FROM-scratch image, and
# skopeo compresses its one layer with zstd; the image holds only
#   /usr/local/bin/harvester-machine   the executable given without its payload: the static
#                                      launcher and the payload's index, every part marked
#                                      detached (launcher/cmd/pack -detach; ADR 0020), which
#                                      runs the parts only from verified unpacked directories
#   /var/cache/harvester-machine/unpacked/{runtime,app}-<hash>/
#                                      the payload, unpacked here by the full executable itself
#                                      (XDG_CACHE_HOME=/var/cache in the image), each part with
#                                      its completion marker: a start finds and verifies it and
#                                      writes nothing, so a read-only root works; the runtime's
#                                      MANIFEST names Node and its libraries' packages
#   /etc/ssl/certs/ca-certificates.crt Debian's CA bundle (NODE_EXTRA_CA_CERTS points at it)
#   /etc/passwd, /etc/group            the unprivileged user 65532 it runs as
#   /tmp                               the only writable directory (mode 1777)
# and in its environment V8's young generation at 2 MiB semi-spaces, its old generation at half
# the container's memory limit and glibc's malloc at two arenas (NODE_OPTIONS, MALLOC_ARENA_MAX;
# sandbox/release/artifacts.ts CONTROLLER_IMAGE_ENV): without the cap V8 lets a controller
# syncing 20,000 machines grow past the chart's 256 Mi before it collects (ADR 0019)
# with entrypoint `harvester-machine controller` and the OCI labels. The payload is in it once
# (the full executable beside it would hold it a second time, compressed). The layer is
# zstd-compressed (tar+zstd, image-spec 1.1; containerd 1.5+, CRI-O, podman, Docker 23+ pull it):
# gzip cannot bring Node below 38 MiB. Reproducible: every time stamp is SOURCE_DATE_EPOCH,
# files and archive entries are in a fixed order with fixed owners, so the same inputs give
# the same archive, byte for byte.
#
# Usage: build-image.sh <executable> <output.oci.tar>
#   VERSION REVISION SOURCE_DATE_EPOCH SOURCE_URL  the labels (defaults: package.json, git)
#   IMAGE_NAME                                     name in the archive (harvester-machine/controller)
# Prints the image's manifest digest (sha256:…) on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

exe="${1:?usage: build-image.sh <executable> <output.oci.tar>}"
output="${2:?usage: build-image.sh <executable> <output.oci.tar>}"
fail() { echo "build-image: step '$1' failed: $2" >&2; exit 1; }

[ -x "$exe" ] || fail "check executable" "$exe is not an executable file"
for tool in buildah skopeo go; do
  command -v "$tool" >/dev/null 2>&1 || fail "find $tool" "no $tool on PATH; run scripts/setup-release-tools.sh (Go: >= 1.25)"
done
VERSION="${VERSION:-$(node -p 'require("./package.json").version')}"
REVISION="${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
SOURCE_URL="${SOURCE_URL:-$(node -p 'const r = require("./package.json").repository; (r && (r.url || r)) || ""')}"
LICENSE="$(node -p 'require("./package.json").license')"
IMAGE_NAME="${IMAGE_NAME:-harvester-machine/controller}"
CREATED="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
EXE_IN_IMAGE=/usr/local/bin/harvester-machine
CACHE_IN_IMAGE=/var/cache

work="$(mktemp -d "${TMPDIR:-/tmp}/build-image.XXXXXX")"
bah() { buildah --storage-driver vfs --root "$work/storage" --runroot "$work/run" "$@"; }
cleanup() {
  [ -n "${ctr:-}" ] && bah rm "$ctr" >/dev/null 2>&1
  chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"
}
trap cleanup EXIT

# --- the root file system -----------------------------------------------------
root="$work/rootfs"
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/usr/share/harvester-machine" "$root/tmp"
chmod 1777 "$root/tmp"

# The launcher is static: nothing else to copy for it (no loader, no libc in the image).
file_out="$(LC_ALL=C ldd "$exe" 2>&1 || true)"
grep -qE 'not a dynamic executable|statically linked' <<<"$file_out" \
  || fail "check executable" "$exe is dynamically linked; build it with scripts/build-executable.sh (a static launcher)"
# The payload, unpacked by the full executable itself where the image's will look: the
# launcher's first cache is $XDG_CACHE_HOME/harvester-machine/unpacked. Nothing else of the
# host's environment reaches it.
# It runs under the image's name: the name picks its role (a docker-machine-driver-* is the plugin).
mkdir -p "$root$CACHE_IN_IMAGE" "$work/full"
full="$work/full/harvester-machine"
cp "$exe" "$full" && chmod 0755 "$full"
version_out="$(env -i XDG_CACHE_HOME="$root$CACHE_IN_IMAGE" "$full" --version 2>&1)" \
  || fail "unpack the payload" "harvester-machine --version failed: $version_out"
unpacked="$root$CACHE_IN_IMAGE/harvester-machine/unpacked"
parts="$(cd "$unpacked" && ls -A)"
[ "$(echo "$parts" | grep -cE '^(runtime|app)-[0-9a-f]{20}$')" = 2 ] && [ "$(echo "$parts" | wc -l)" = 2 ] \
  || fail "unpack the payload" "expected one runtime and one app directory in $unpacked, found: $parts"
# The image's executable: the same launcher and index, without the payload's bytes.
(cd launcher && CGO_ENABLED=0 go build -mod=readonly -trimpath -buildvcs=false -o "$work/pack" ./cmd/pack) \
  || fail "build pack" "go build in launcher/ failed (see above)"
"$work/pack" -o "$root$EXE_IN_IMAGE" -detach "$full" || fail "detach the payload" "pack -detach failed (see above)"
chmod 0755 "$root$EXE_IN_IMAGE"
detached_out="$(env -i XDG_CACHE_HOME="$root$CACHE_IN_IMAGE" "$root$EXE_IN_IMAGE" --version 2>&1)" \
  || fail "check the detached executable" "$EXE_IN_IMAGE --version failed: $detached_out"
[ "$detached_out" = "$version_out" ] \
  || fail "check the detached executable" "it printed '$detached_out', the full executable '$version_out'"

ca=/etc/ssl/certs/ca-certificates.crt
[ -f "$ca" ] || fail "copy CA bundle" "$ca is missing; install Debian's ca-certificates"
cp -L "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
echo "$ca ca-certificates $(dpkg-query -W -f='${Version}' ca-certificates 2>/dev/null || echo unknown)" \
  >"$root/usr/share/harvester-machine/ca-bundle.txt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
find "$root" -type d -not -path "$root/tmp" -exec chmod 0755 {} +
find "$root/etc" "$root/usr/share" -type f -exec chmod 0644 {} +

tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --format=gnu \
  -C "$root" -cf "$work/rootfs.tar" . || fail "pack root file system" "tar failed"

# --- the image -----------------------------------------------------------------
ctr="$(bah from --pull=false scratch)" || fail "buildah from scratch" "see buildah's message above"
bah add --quiet "$ctr" "$work/rootfs.tar" / >/dev/null || fail "buildah add" "see buildah's message above"
bah config \
  --entrypoint "[\"$EXE_IN_IMAGE\", \"controller\"]" --cmd '' \
  --user 65532:65532 --workingdir /tmp \
  --env HOME=/tmp --env XDG_CACHE_HOME="$CACHE_IN_IMAGE" --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
  --env "NODE_OPTIONS=--max-semi-space-size=2 --max-old-space-size-percentage=50" --env MALLOC_ARENA_MAX=2 \
  --label "org.opencontainers.image.title=harvester-machine-controller" \
  --label "org.opencontainers.image.description=Rancher-side cleanup controller of the harvester-machine node driver" \
  --label "org.opencontainers.image.version=$VERSION" \
  --label "org.opencontainers.image.revision=$REVISION" \
  --label "org.opencontainers.image.licenses=$LICENSE" \
  --label "org.opencontainers.image.source=$SOURCE_URL" \
  --label "org.opencontainers.image.created=$CREATED" \
  --created-by "scripts/build-image.sh" \
  "$ctr" || fail "buildah config" "see buildah's message above"
bah commit --quiet --format oci --timestamp "$SOURCE_DATE_EPOCH" --identity-label=false \
  --disable-compression=true "$ctr" "oci:$work/plain:$IMAGE_NAME:$VERSION" >/dev/null \
  || fail "buildah commit" "see buildah's message above"
# buildah 1.28 writes gzip or nothing; skopeo recompresses the uncompressed layer (klauspost's
# zstd at its best level: deterministic, the same bytes each time).
skopeo copy --quiet --dest-compress-format zstd --dest-compress-level 20 \
  "oci:$work/plain:$IMAGE_NAME:$VERSION" "oci:$work/layout:$IMAGE_NAME:$VERSION" \
  || fail "compress the layer" "skopeo copy failed (see above)"

# oci-archive is a tar of the layout; tarred here so that its entries are reproducible too.
mkdir -p "$(dirname "$output")"
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --format=gnu \
  -C "$work/layout" -cf "$output.partial" . || fail "pack archive" "tar failed"
mv -f "$output.partial" "$output"
node -e '
  const idx = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(idx.manifests[0].digest);' "$work/layout/index.json"
