#!/usr/bin/env bash
# The main job: sets everything up, then runs the sandbox walkthrough end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node dist/sandbox/bin/walkthrough.js "$@"
