#!/usr/bin/env bash
# The whole test suite: setup (idempotent), type check and lint, then every test file
# (unit tests beside the code, integration tests against real control planes).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/setup.sh

npx eslint --max-warnings=0 . || { echo "test: lint failed (see above)" >&2; exit 1; }

mapfile -t files < <(find dist -name '*_test.js' -not -path '*/node_modules/*' | sort)
suite_start=$(date +%s)
status=0
# Two files at a time: each integration file runs its own control plane (~400 MB, 2 cores).
node --test --test-concurrency="${TEST_CONCURRENCY:-2}" --test-timeout=600000 "${files[@]}" || status=$?
end=$(date +%s)
echo "test suite: $((end - suite_start)) s (${#files[@]} files); total with setup: $((end - start)) s"
exit $status
