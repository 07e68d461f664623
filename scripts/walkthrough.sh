#!/usr/bin/env bash
# The main job: sets up what the walkthrough needs (scripts/setup.sh --for walkthrough: npm
# packages, control-plane binaries, one Cluster API version, KubeVirt, TypeScript, rancher-machine
# and the plugin executable, all cached), then runs the sandbox walkthrough end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --for walkthrough
exec node dist/sandbox/bin/walkthrough.js "$@"
