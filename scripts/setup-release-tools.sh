#!/usr/bin/env bash
# Installs what `npm run release` and the release tests need, idempotently:
#   - Debian's buildah, podman, runc, skopeo (image build without Docker, run, copy) and
#     docker-registry (the CNCF distribution registry: the release tests push to it)
#   - helm, built from the Go module proxy (`go install helm.sh/helm/v3/cmd/helm@VERSION`)
#     into the shared cache, keyed by the helm and Go versions, like kube-apiserver.
# Prints the directory holding helm on stdout; progress and failures go to stderr.
#
#   HELM_VERSION             (default below)
#   HARVESTER_MACHINE_CACHE  cache root (default ${XDG_CACHE_HOME:-~/.cache}/harvester-machine)
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
CACHE_ROOT="${HARVESTER_MACHINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/harvester-machine}"
DEBIAN_PACKAGES=(buildah podman runc skopeo ca-certificates docker-registry)

fail() { echo "setup-release-tools: step '$1' failed: $2" >&2; exit 1; }

missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "setup-release-tools: installing Debian's ${missing[*]}" >&2
  { $sudo_cmd apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >&2 \
    || fail "install ${missing[*]}" "apt-get install failed; install the Debian packages ${missing[*]} by hand"
  # The package enables a registry service on every interface; the tests start their own on
  # 127.0.0.1 only, so a machine with systemd gets the binary and not the service.
  if [[ " ${missing[*]} " == *" docker-registry "* ]] && [ -d /run/systemd/system ]; then
    $sudo_cmd systemctl disable --now docker-registry >&2 || true
  fi
fi

command -v go >/dev/null 2>&1 || fail "find Go" "no 'go' on PATH; install Go >= 1.24 (helm is built from the Go module proxy)"
GO_VERSION="$(go env GOVERSION)"
HELM_DIR="$CACHE_ROOT/helm-$HELM_VERSION-$GO_VERSION/bin"
if ! [ -x "$HELM_DIR/helm" ] || ! "$HELM_DIR/helm" version --short >/dev/null 2>&1; then
  echo "setup-release-tools: building helm $HELM_VERSION with $GO_VERSION (cold: a few minutes on 2 cores)" >&2
  mkdir -p "$HELM_DIR"
  # helm reads its own version from these variables; `go install` alone would report "v3.x+unknown".
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  GOBIN="$HELM_DIR.partial" CGO_ENABLED=0 go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2 \
    || { rm -rf "$HELM_DIR.partial"; fail "build helm" "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION failed; check 'go env GOPROXY' and retry"; }
  mv -f "$HELM_DIR.partial/helm" "$HELM_DIR/helm" && rmdir "$HELM_DIR.partial"
  "$HELM_DIR/helm" version --short >/dev/null || fail "check helm" "the built $HELM_DIR/helm does not run"
fi
echo "$HELM_DIR"
