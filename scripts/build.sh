#!/usr/bin/env bash
# npm run build: the single executable, runnable without Node or a libc installed
# (scripts/build-executable.sh), under its two names:
#   build/bin/harvester-machine                 the CLI; `harvester-machine controller` the controller
#   build/bin/docker-machine-driver-harvester   the same file (a hard link): the rancher-machine plugin
#   build/bin/harvester-machine.runtime.txt     what the runtime holds: Node, libraries, Debian packages
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
t=$(date +%s.%N)
mkdir -p build/bin
bash scripts/build-executable.sh build/bin/harvester-machine.partial >/dev/null
mv build/bin/harvester-machine.partial build/bin/harvester-machine
ln -f build/bin/harvester-machine build/bin/docker-machine-driver-harvester
bash scripts/build-executable.sh --manifest >build/bin/harvester-machine.runtime.txt
size=$(stat -c %s build/bin/harvester-machine)
mib=$(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1048576 }')
echo "built build/bin/harvester-machine ($size bytes, $mib MiB; build/bin/docker-machine-driver-harvester is the same file) in $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
