#!/usr/bin/env bash
# The whole test suite: the set-up of all it needs (scripts/setup.sh --for tests, idempotent),
# type check and lint, then every test file (unit tests beside the code, integration tests
# against real control planes).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/setup.sh --for tests

npx eslint --max-warnings=0 . || { echo "test: lint failed (see above)" >&2; exit 1; }
npm run --silent lint:cycles >/dev/null || { npm run --silent lint:cycles; echo "test: an import circle in src/ (see above)" >&2; exit 1; }

mapfile -t all_files < <(find dist -name '*_test.js' -not -path '*/node_modules/*' | sort)
# Files that start control planes first, short ones after; files that another file runs on its
# shared sandbox (test/shared-sandbox/) are left to it (test/support/test-order.ts).
order="$(node dist/test/support/test-order.js "${all_files[@]}")" || { echo "test: could not order the test files" >&2; exit 1; }
mapfile -t files <<<"$order"
[ "${#files[@]}" -gt 0 ] && [ -n "${files[0]}" ] || { echo "test: no test file to run" >&2; exit 1; }
suite_start=$(date +%s)
status=0
# Secrets scan: the sandbox's credential factories and the tests append every secret they make
# to a ledger and keep the output they capture beside it; the runner's output goes there too
# (a second reporter), and after the suite all of it is searched for those secrets.
scan_dir="$(mktemp -d)"
trap 'rm -rf "$scan_dir"' EXIT
export HM_SECRET_LEDGER="$scan_dir/ledger.jsonl"
reporter=tap; [ -t 1 ] && reporter=spec # node's default for this output
# Three files at a time: each integration file (or group of them, ADR 0031) runs its own sandbox (about 3.5 GB with Harvester's
# and KubeVirt's processes) and waits on them much of the time; two at a time left a fifth of the
# 2 cores idle (ADR 0029).
node --test --test-concurrency="${TEST_CONCURRENCY:-3}" --test-timeout=600000 \
  --test-reporter="$reporter" --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$scan_dir/runner-output.tap" \
  "${files[@]}" || status=$?
node dist/test/support/secret-scan.js "$scan_dir" || status=1
end=$(date +%s)
echo "test suite: $((end - suite_start)) s (${#all_files[@]} files in ${#files[@]} processes); total with setup: $((end - start)) s"
exit $status
