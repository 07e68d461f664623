#!/usr/bin/env bash
# npm run release: everything an operator installs, in release/ (made anew each run):
#   docker-machine-driver-harvester-amd64.tar.gz (+ .sha256)  the node driver, as Rancher's
#                                       NodeDriver URL expects it (the executable at the root,
#                                       named docker-machine-driver-harvester: the plugin)
#   harvester-machine-linux-amd64       the same executable, for operators' machines (the CLI)
#   harvester-machine-controller-<version>.oci.tar   the controller image (scripts/build-image.sh)
#   harvester-machine-controller-<version>.tgz       the Helm chart, its image pointing at that image
# Reproducible: the same commit gives the same bytes (time stamps from SOURCE_DATE_EPOCH,
# default the commit's time; fixed owners and order; gzip -n).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
fail() { echo "release: step '$1' failed: $2" >&2; exit 1; }

# EXECUTABLE, when given, is used as built (the tests pass the cached one); RELEASE_DIR moves
# the output. There is one executable (scripts/build-executable.sh): the plugin under the name
# docker-machine-driver-harvester (rancher-machine runs it by that name), the CLI under any
# other, the controller for `controller` (the image's entrypoint).
RELEASE_DIR="${RELEASE_DIR:-release}"
if [ -z "${EXECUTABLE:-}" ]; then
  bash scripts/build.sh >&2
  EXECUTABLE=build/bin/harvester-machine
fi
[ -x "$EXECUTABLE" ] || fail "find the executable" "$EXECUTABLE is not an executable file"
helm_dir="$(bash scripts/setup-release-tools.sh)"

VERSION="$(node -p 'require("./package.json").version')"
export VERSION
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
export REVISION="${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
# Reproducible archives: fixed time stamps, owners and order.
tar_repro() { tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --format=gnu "$@"; }

rm -rf "$RELEASE_DIR"
mkdir -p "$RELEASE_DIR"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# --- the node driver --------------------------------------------------------------
driver=docker-machine-driver-harvester
install -m 0755 "$EXECUTABLE" "$work/$driver"
tar_repro -C "$work" -cf - "$driver" | gzip -n -9 >"$RELEASE_DIR/$driver-amd64.tar.gz"
(cd "$RELEASE_DIR" && sha256sum "$driver-amd64.tar.gz" >"$driver-amd64.tar.gz.sha256")
install -m 0755 "$EXECUTABLE" "$RELEASE_DIR/harvester-machine-linux-amd64"

# --- the controller image ---------------------------------------------------------
image="$RELEASE_DIR/harvester-machine-controller-$VERSION.oci.tar"
digest="$(bash scripts/build-image.sh "$EXECUTABLE" "$image")" || fail "build image" "see above"

# --- the chart --------------------------------------------------------------------
# Packaged from a copy with every time stamp set, then re-packed: helm writes the current
# time into its archive headers.
cp -R deploy/helm/harvester-machine-controller "$work/chart"
"$helm_dir/helm" lint "$work/chart" >/dev/null || fail "helm lint" "run helm lint deploy/helm/harvester-machine-controller"
"$helm_dir/helm" package "$work/chart" --version "$VERSION" --app-version "$VERSION" -d "$work/pkg" >/dev/null \
  || fail "helm package" "see helm's message above"
mkdir "$work/unpacked"
tar -xzmf "$work/pkg/harvester-machine-controller-$VERSION.tgz" -C "$work/unpacked"
tar_repro -C "$work/unpacked" -cf - harvester-machine-controller | gzip -n -9 >"$RELEASE_DIR/harvester-machine-controller-$VERSION.tgz"

echo "$RELEASE_DIR/ (version $VERSION, revision $REVISION, SOURCE_DATE_EPOCH $SOURCE_DATE_EPOCH), in $(elapsed "$t0") s:"
(cd "$RELEASE_DIR" && for f in *; do printf '  %-52s %6s MiB\n' "$f" "$(awk -v s="$(stat -c %s "$f")" 'BEGIN { printf "%.1f", s / 1048576 }')"; done)
echo "  node driver checksum: $(cut -d' ' -f1 "$RELEASE_DIR/$driver-amd64.tar.gz.sha256")"
echo "  image harvester-machine/controller:$VERSION, digest $digest"
