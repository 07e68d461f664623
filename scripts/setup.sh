#!/usr/bin/env bash
# Sets up a fresh machine (Debian, Node >= 20, Go) for one purpose:
#
#   setup.sh [--for tests]        everything (the default): what the test suite, `npm run sandbox`
#                                 and docs/sandbox-by-hand.md need (Harvester's own harvester
#                                 and webhook among them: sandbox/harvester)
#   setup.sh --for walkthrough    only what `npm run walkthrough` needs: no squid or microsocks,
#                                 no release tools (buildah, podman, skopeo, helm), one Cluster API
#                                 version, no kubectl; but Harvester's own harvester and webhook,
#                                 rancher-machine and the plugin executable
#   setup.sh ... --list           the phases that mode runs, with their cold estimates; runs nothing
#
# Each phase prints one line: what it does, how long it takes cold on 2 shared cores (measured),
# how long it took. apt's, npm's and Go's output go to a log in the cache directory, named once
# at the start; a failing phase prints the log's path and its last lines and stops the set-up
# (exit non-zero, naming the phase). Everything built is cached outside the repository under
# $HARVESTER_MACHINE_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/harvester-machine), keyed by
# version, so a second run takes seconds. Go's own caches follow Go's variables (GOMODCACHE,
# GOCACHE, GOPROXY, ...); the versions follow the build scripts' variables (KUBE_VERSION,
# HELM_VERSION, RANCHER_MACHINE_VERSION, HARVESTER_MACHINE_CAPI_VERSION for the walkthrough's
# Cluster API).
#
# One more phase is one more `phase NAME COLD_SECONDS COMMAND...` line in run_phases below.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/setup-phases.sh
. scripts/setup-phases.sh

usage() { echo "usage: setup.sh [--for walkthrough|tests] [--list]" >&2; exit 2; }
mode=tests
while [ $# -gt 0 ]; do
  case "$1" in
    --for) [ $# -ge 2 ] || usage; mode="$2"; shift 2 ;;
    --for=*) mode="${1#--for=}"; shift ;;
    --list) SETUP_LIST=1; shift ;;
    *) usage ;;
  esac
done
case "$mode" in walkthrough | tests) ;; *) usage ;; esac

# The versions, as the build scripts default them (each script is the one place that names its
# version), so the phase lines say what is built.
script_default() { # script_default <file> <sed expression printing the version>
  local v
  v="$(sed -n "$2" "$1" | head -n 1)"
  [ -n "$v" ] || { echo "setup: cannot read the default version from $1" >&2; exit 1; }
  echo "$v"
}
kube_version="${KUBE_VERSION:-$(script_default sandbox/control-plane/build-binaries.sh 's/^KUBE_VERSION="${KUBE_VERSION:-\(v[^}]*\)}"$/\1/p')}"
helm_version="${HELM_VERSION:-$(script_default scripts/setup-release-tools.sh 's/^HELM_VERSION="${HELM_VERSION:-\(v[^}]*\)}"$/\1/p')}"
read -r -a capi_versions <<<"$(script_default sandbox/capi/build-cluster-api.sh 's/^DEFAULT_VERSIONS=(\(.*\))$/\1/p')"
kubevirt_version="$(script_default sandbox/kubevirt/build-kubevirt.sh 's/^DEFAULT_VERSION=\(v.*\)$/\1/p')"
harvester_version="$(script_default sandbox/harvester/build-harvester.sh 's/^DEFAULT_VERSION=\(v.*\)$/\1/p')"
rancher_machine_version="${RANCHER_MACHINE_VERSION:-$(script_default scripts/build-rancher-machine.sh 's/^DEFAULT_VERSION="\(v.*\)"$/\1/p')}"
# The walkthrough runs the sandbox's default Cluster API (sandbox/capi/versions.ts), which
# HARVESTER_MACHINE_CAPI_VERSION changes; the tests also run the second one.
walkthrough_capi="${HARVESTER_MACHINE_CAPI_VERSION:-${capi_versions[0]}}"

# --- the phases -----------------------------------------------------------------------------

npm_packages() {
  local lock_sum
  lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
  [ "$(cat node_modules/.hm-lock-sum 2>/dev/null)" = "$lock_sum" ] && return 0
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" >node_modules/.hm-lock-sum
}

# openssl (the sandbox's certificates), zstd and binutils (the plugin executable).
debian_tools() {
  if ! command -v openssl >/dev/null 2>&1; then
    local sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq openssl
  fi
  bash scripts/setup-executable-tools.sh
}

compile() {
  rm -rf dist
  npx tsc -p .
}

# The cold estimates: measured on the 2 shared cores this project is developed on, with other
# builds running (load 8-20; idle cores take about half): each phase once with empty caches.
# kubectl's is a guess (here it came from PATH); it shares the control plane's modules.
run_phases() {
  phase "npm packages from package-lock.json" 30 npm_packages
  phase "Debian's openssl, zstd and binutils, if missing" 30 debian_tools
  if [ "$mode" = tests ]; then
    phase "Debian's squid and microsocks for the proxy tests, if missing" 30 bash scripts/setup-proxies.sh
  fi
  phase "control-plane build: etcd-server, kube-apiserver, kube-controller-manager, kube-scheduler $kube_version" 1100 \
    bash sandbox/control-plane/build-binaries.sh
  if [ "$mode" = tests ]; then
    phase "release tools: Debian's buildah, podman, runc, skopeo, docker-registry; helm $helm_version" 370 \
      bash scripts/setup-release-tools.sh
    local v
    for v in "${capi_versions[@]}"; do
      phase "Cluster API manager $v" 250 bash sandbox/capi/build-cluster-api.sh "$v"
    done
  else
    phase "Cluster API manager $walkthrough_capi" 250 bash sandbox/capi/build-cluster-api.sh "$walkthrough_capi"
  fi
  phase "KubeVirt virt-api and virt-controller $kubevirt_version" 300 bash sandbox/kubevirt/build-kubevirt.sh "$kubevirt_version"
  # The walkthrough runs on Harvester's own webhook and controllers too (docs/decisions/0023).
  phase "Harvester $harvester_version's own harvester and webhook" 600 bash sandbox/harvester/build-harvester.sh "$harvester_version"
  if [ "$mode" = tests ]; then
    phase "kubectl $kube_version for docs/sandbox-by-hand.md" 120 bash scripts/setup-kubectl.sh
  fi
  phase "compile TypeScript" 40 compile
  # Built from the compiled sources, each cached by version or by a hash of its inputs: the jobs'
  # binaries (and for the tests, the release artifacts) are made here once, not inside a test.
  if [ "$mode" = walkthrough ]; then
    phase "rancher-machine $rancher_machine_version and the plugin executable" 350 \
      node dist/sandbox/bin/job-binaries.js
  else
    phase "rancher-machine $rancher_machine_version, the plugin executable and the release artifacts" 400 \
      node dist/sandbox/bin/job-binaries.js --release
  fi
}

if [ "${SETUP_LIST:-}" = 1 ]; then
  run_phases
  exit 0
fi

# --- preconditions, cache, lock, log -------------------------------------------------------------

node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$node_major" -lt 20 ]; then
  echo "setup: step 'check Node': Node >= 20 is required (found $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

cache_root="${HARVESTER_MACHINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/harvester-machine}"
mkdir -p "$cache_root" || { echo "setup: step 'create cache': cannot create $cache_root; set HARVESTER_MACHINE_CACHE" >&2; exit 1; }

# One setup at a time per cache: two clones (or CI jobs) sharing the cache would otherwise
# build the same binaries at once (each build doubling the other's CPU time) and race on
# their output; the second waits, then finds everything cached.
exec 9>"$cache_root/.setup.lock"
if ! flock -n 9; then
  echo "setup: another setup is using $cache_root; waiting for it" >&2
  flock 9
fi

SETUP_LOG="$cache_root/setup.log"
: >"$SETUP_LOG"
echo "setup: for the $mode in $cache_root; apt's, npm's and Go's output go to $SETUP_LOG" >&2
start="$(setup_seconds)"
run_phases
echo "setup: ready for the $mode in $(setup_elapsed "$start") s" >&2
