#!/usr/bin/env bash
# kubectl for docs/sandbox-by-hand.md and its test: the one on PATH when there is one,
# else built once from the Go module proxy at the control plane's Kubernetes version and
# cached under $HARVESTER_MACHINE_CACHE (default ~/.cache/harvester-machine). Prints the
# path of the kubectl to use; put its directory on PATH when it is not /usr/bin's.
set -euo pipefail

if [ -z "${HM_BUILD_KUBECTL:-}" ] && command -v kubectl >/dev/null 2>&1; then
  command -v kubectl
  exit 0
fi

KUBE_VERSION="${KUBE_VERSION:-v1.33.13}"
CACHE_ROOT="${HARVESTER_MACHINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/harvester-machine}"
fail() { echo "setup-kubectl: $1" >&2; exit 1; }
command -v go >/dev/null 2>&1 || fail "step 'find Go': no kubectl on PATH and no 'go' to build one; install kubectl or Go >= 1.24"
GO_VERSION="$(go env GOVERSION)"
DIR="$CACHE_ROOT/kubectl-$KUBE_VERSION-$GO_VERSION"
if [ -x "$DIR/bin/kubectl" ]; then
  echo "$DIR/bin/kubectl"
  exit 0
fi
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
mkdir -p "$DIR/wrapper" "$DIR/bin"
staging=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
  cri-client csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms
  kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver)
{
  printf 'module harvester-machine.local/kubectl\n\ngo 1.24.0\n\ngodebug default=go1.24\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$KUBE_VERSION"
  for m in "${staging[@]}"; do printf '\tk8s.io/%s => k8s.io/%s %s\n' "$m" "$m" "$STAGING_VERSION"; done
  printf ')\n'
} >"$DIR/wrapper/go.mod"
printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kubectl"\n' >"$DIR/wrapper/tools.go"
echo "setup-kubectl: building kubectl $KUBE_VERSION from the Go module proxy (once, then cached)" >&2
(cd "$DIR/wrapper" && go mod tidy >&2) || fail "step 'go mod tidy' failed; check that the Go module proxy is reachable (go env GOPROXY)"
minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
(cd "$DIR/wrapper" && CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
  -o "$DIR/bin/kubectl" k8s.io/kubernetes/cmd/kubectl >&2) || fail "step 'go build' of kubectl failed; see the Go output above"
echo "$DIR/bin/kubectl"
