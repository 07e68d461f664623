#!/usr/bin/env bash
# Sets up everything the tests, the sandbox and the walkthrough need, on a fresh machine:
# npm packages (from the lockfile), Debian's etcd-server, openssl, squid and microsocks, kube-apiserver,
# kube-controller-manager and kube-scheduler, Cluster API's controller-manager (sandbox/capi) and
# KubeVirt's virt-api and virt-controller (sandbox/kubevirt) and Harvester's own harvester and
# webhook (sandbox/harvester), built from the Go module proxy
# (cached outside the repo), and the compiled TypeScript. Idempotent: a second
# run reuses everything and takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "setup: $*" >&2; }
seconds() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(seconds)" 'BEGIN { printf "%.1f", b - a }'; }

node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$node_major" -lt 20 ]; then
  say "step 'check Node': Node >= 20 is required (found $(node --version 2>/dev/null || echo none))"
  exit 1
fi

if ! command -v openssl >/dev/null 2>&1; then
  say "installing Debian's openssl"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq openssl >&2 \
    || { say "step 'install openssl' failed: install Debian's openssl package"; exit 1; }
fi

# One setup at a time per cache: two clones (or CI jobs) sharing the cache would otherwise
# build the same binaries at once (each build doubling the other's CPU time) and race on
# their output; the second waits, then finds everything cached.
cache_root="${HARVESTER_MACHINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/harvester-machine}"
mkdir -p "$cache_root" || { say "step 'create cache': cannot create $cache_root; set HARVESTER_MACHINE_CACHE"; exit 1; }
exec 9>"$cache_root/.setup.lock"
if ! flock -n 9; then
  say "another setup is using $cache_root; waiting for it"
  flock 9
fi

bash scripts/setup-executable-tools.sh
bash scripts/setup-proxies.sh

lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat node_modules/.hm-lock-sum 2>/dev/null)" != "$lock_sum" ]; then
  t=$(seconds)
  npm ci --no-audit --no-fund --loglevel=error >&2 || { say "step 'npm ci' failed: check that the npm registry is reachable"; exit 1; }
  echo "$lock_sum" > node_modules/.hm-lock-sum
  say "npm packages installed in $(elapsed "$t") s"
fi

t=$(seconds)
bin_dir="$(bash sandbox/control-plane/build-binaries.sh)"
echo "control-plane build: $(elapsed "$t") s ($bin_dir)"

t=$(seconds)
bash scripts/setup-release-tools.sh >/dev/null
say "release tools (buildah, podman, runc, skopeo, helm) ready in $(elapsed "$t") s"

t=$(seconds)
capi_dirs="$(bash sandbox/capi/build-cluster-api.sh | cut -d' ' -f1 | tr '\n' ' ')"
echo "cluster-api build: $(elapsed "$t") s (${capi_dirs% })"

t=$(seconds)
kubevirt_dir="$(bash sandbox/kubevirt/build-kubevirt.sh | cut -d' ' -f2)"
echo "kubevirt build: $(elapsed "$t") s ($kubevirt_dir)"

# Harvester v1.8.0's own harvester and webhook (sandbox/harvester): cold about 10 minutes on
# 2 shared cores, cached by Harvester and Go version.
t=$(seconds)
harvester_dir="$(bash sandbox/harvester/build-harvester.sh | cut -d' ' -f2)"
echo "harvester build: $(elapsed "$t") s ($harvester_dir)"

t=$(seconds)
kubectl_path="$(bash scripts/setup-kubectl.sh)"
say "kubectl for the README's sandbox by hand: $kubectl_path ($(elapsed "$t") s)"

t=$(seconds)
rm -rf dist
npx tsc -p . || { say "step 'compile TypeScript' failed: see the errors above"; exit 1; }
say "compiled in $(elapsed "$t") s"
