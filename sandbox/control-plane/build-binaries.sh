#!/usr/bin/env bash
# Builds (once) and caches the real control-plane binaries the sandbox runs:
# kube-apiserver, kube-controller-manager and kube-scheduler from the Go module proxy
# through a wrapper module, and etcd from Debian's etcd-server. Prints the bin directory.
#
# Cache: $HARVESTER_MACHINE_CACHE (default ~/.cache/harvester-machine), keyed by
# the Kubernetes version and the Go version, so a rebuild happens only when
# either changes. Every failure prints one line: which step failed, what to do.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.33.13}"
CACHE_ROOT="${HARVESTER_MACHINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/harvester-machine}"

fail() { echo "build-binaries: $1" >&2; exit 1; }

command -v go >/dev/null 2>&1 \
  || fail "step 'find Go': no 'go' on PATH; install Go >= 1.24 (the control plane is built from the Go module proxy)"
GO_VERSION="$(go env GOVERSION)"
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
BIN_DIR="$CACHE_ROOT/kube-$KUBE_VERSION-$GO_VERSION/bin"

ensure_etcd() {
  if command -v etcd >/dev/null 2>&1; then return; fi
  [ -x /usr/bin/etcd ] && return
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "build-binaries: installing Debian's etcd-server" >&2
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq etcd-server; } >&2 \
    || fail "step 'install etcd': apt-get install etcd-server failed; install it by hand (Debian package etcd-server)"
  # Debian starts an etcd service on install where systemd runs; the sandbox runs its own.
  $sudo systemctl disable --now etcd >/dev/null 2>&1 || true
}

build_kube() {
  # Only what is missing: a cache from before kube-scheduler was added gains just that one,
  # and a binary another sandbox may be running is never rewritten.
  local missing=()
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    [ -x "$BIN_DIR/$c" ] || missing+=("k8s.io/kubernetes/cmd/$c")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  local work="$CACHE_ROOT/kube-$KUBE_VERSION-$GO_VERSION/wrapper"
  mkdir -p "$work" "$BIN_DIR"
  local staging=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
    cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
    cri-client csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms
    kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
    mount-utils pod-security-admission sample-apiserver)
  {
    echo "module harvester-machine.local/controlplane"
    echo
    echo "go 1.24.0"
    echo
    echo "godebug default=go1.24"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo "replace ("
    for m in "${staging[@]}"; do echo "	k8s.io/$m => k8s.io/$m $STAGING_VERSION"; done
    echo ")"
  } >"$work/go.mod"
  cat >"$work/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
  echo "build-binaries: building ${missing[*]##*/} $KUBE_VERSION (cold, all three: 10-25 min on 2 cores)" >&2
  (cd "$work" && go mod tidy >&2) \
    || fail "step 'go mod tidy' for k8s.io/kubernetes $KUBE_VERSION failed; check that the Go module proxy is reachable (go env GOPROXY) and retry"
  local minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  (cd "$work" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
    -o "$BIN_DIR/" "${missing[@]}" >&2) \
    || fail "step 'go build' of kube-apiserver/kube-controller-manager/kube-scheduler failed; see the Go output above"
}

ensure_etcd
build_kube
echo "$BIN_DIR"
