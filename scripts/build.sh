#!/usr/bin/env bash
# npm run build: the single executables, runnable without Node installed:
#   build/bin/docker-machine-driver-harvester   (the rancher-machine plugin)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
t=$(date +%s.%N)
bash scripts/build-executable.sh src/plugin/main.ts build/bin/docker-machine-driver-harvester >/dev/null
size=$(stat -c %s build/bin/docker-machine-driver-harvester)
echo "built build/bin/docker-machine-driver-harvester ($((size / 1048576)) MiB) in $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
