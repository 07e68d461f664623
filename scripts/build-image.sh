#!/usr/bin/env bash
# Builds the controller image as an OCI archive, without Docker and without pulling anything:
# Debian's buildah (vfs storage in a temporary directory) commits a FROM-scratch image that
# holds only
#   /usr/local/bin/harvester-machine   the executable given: the static launcher and its
#                                      payload (docs/decisions/0007-static-launcher.md)
#   /var/cache/harvester-machine/unpacked/{runtime,app}-<hash>/
#                                      that payload, unpacked here by the executable itself
#                                      (XDG_CACHE_HOME=/var/cache in the image): a start finds
#                                      it and writes nothing, so a read-only root works; the
#                                      runtime's MANIFEST names Node and its libraries' packages
#   /etc/ssl/certs/ca-certificates.crt Debian's CA bundle (NODE_EXTRA_CA_CERTS points at it)
#   /etc/passwd, /etc/group            the unprivileged user 65532 it runs as
#   /tmp                               the only writable directory (mode 1777)
# with entrypoint `harvester-machine controller` and the OCI labels. Reproducible: every
# time stamp is SOURCE_DATE_EPOCH, files and archive entries are in a fixed order with
# fixed owners, so the same inputs give the same archive, byte for byte.
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
command -v buildah >/dev/null 2>&1 || fail "find buildah" "no buildah on PATH; run scripts/setup-release-tools.sh"
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
cp "$exe" "$root$EXE_IN_IMAGE"
chmod 0755 "$root$EXE_IN_IMAGE"
chmod 1777 "$root/tmp"

# The launcher is static: nothing else to copy for it (no loader, no libc in the image).
file_out="$(LC_ALL=C ldd "$exe" 2>&1 || true)"
grep -qE 'not a dynamic executable|statically linked' <<<"$file_out" \
  || fail "check executable" "$exe is dynamically linked; build it with scripts/build-executable.sh (a static launcher)"
# The payload, unpacked by the executable itself where it will look in the image: the
# launcher's first cache is $XDG_CACHE_HOME/harvester-machine/unpacked, and the warm path
# only stats the parts' directories. Nothing else of the host's environment reaches it.
mkdir -p "$root$CACHE_IN_IMAGE"
version_out="$(env -i XDG_CACHE_HOME="$root$CACHE_IN_IMAGE" "$root$EXE_IN_IMAGE" --version 2>&1)" \
  || fail "unpack the payload" "$EXE_IN_IMAGE --version failed: $version_out"
unpacked="$root$CACHE_IN_IMAGE/harvester-machine/unpacked"
parts="$(cd "$unpacked" && ls -A)"
[ "$(echo "$parts" | grep -cE '^(runtime|app)-[0-9a-f]{20}$')" = 2 ] && [ "$(echo "$parts" | wc -l)" = 2 ] \
  || fail "unpack the payload" "expected one runtime and one app directory in $unpacked, found: $parts"

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
  --disable-compression=false "$ctr" "oci:$work/layout:$IMAGE_NAME:$VERSION" >/dev/null \
  || fail "buildah commit" "see buildah's message above"

# oci-archive is a tar of the layout; tarred here so that its entries are reproducible too.
mkdir -p "$(dirname "$output")"
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --format=gnu \
  -C "$work/layout" -cf "$output.partial" . || fail "pack archive" "tar failed"
mv -f "$output.partial" "$output"
node -e '
  const idx = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(idx.manifests[0].digest);' "$work/layout/index.json"
