#!/usr/bin/env bash
# The main job: sets everything up (npm packages, control-plane binaries, TypeScript), builds
# what Rancher's jobs run (rancher-machine and the plugin executable, both cached), then runs
# the sandbox walkthrough end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
node dist/sandbox/bin/walkthrough-binaries.js
exec node dist/sandbox/bin/walkthrough.js "$@"
