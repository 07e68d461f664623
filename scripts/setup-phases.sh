# The set-up's phase runner, sourced by scripts/setup.sh (and by test/setup-phases_test.ts).
#
#   phase NAME EXPECTED_COLD_SECONDS COMMAND [ARG...]
#
# runs COMMAND (a program or a shell function) with its stdout and stderr appended to
# $SETUP_LOG, and prints exactly one line on stderr:
#
#   setup: NAME (cold ~EXPECTED_COLD_SECONDS s) ... 2.1 s
#
# The first part is printed before COMMAND starts, so a person watching sees what is being
# waited for. When COMMAND fails, the line ends "failed after T s (exit S)", then the log's path
# and the last lines COMMAND printed follow, and the shell that sourced this file exits with COMMAND's status.
# A shell function runs in a subshell with `set -e` in force (never as an `if` condition, where
# bash would ignore it); Ctrl-C stops it as usual.
#
# With SETUP_LIST=1 nothing runs: each phase prints "setup: NAME (cold ~N s)" only, so
# `setup.sh --list` says what a mode would do.

SETUP_LOG_TAIL_LINES="${SETUP_LOG_TAIL_LINES:-25}"

setup_seconds() { date +%s.%N; }
setup_elapsed() { awk -v a="$1" -v b="$(setup_seconds)" 'BEGIN { printf "%.1f", b - a }'; }

phase() {
  local name="$1" cold="$2"
  shift 2
  if [ "${SETUP_LIST:-}" = 1 ]; then
    echo "setup: $name (cold ~$cold s)" >&2
    return 0
  fi
  : "${SETUP_LOG:?phase: SETUP_LOG names no log file}"
  printf 'setup: %s (cold ~%s s) ... ' "$name" "$cold" >&2
  printf '\n==== %s phase: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$name" >>"$SETUP_LOG"
  local from t0 status=0
  from=$(($(wc -c <"$SETUP_LOG") + 1))
  t0="$(setup_seconds)"
  local errexit=""
  case "$-" in *e*) errexit=1 ;; esac
  set +e
  (
    set -e
    "$@"
  ) >>"$SETUP_LOG" 2>&1
  status=$?
  [ -z "$errexit" ] || set -e
  local took
  took="$(setup_elapsed "$t0")"
  if [ "$status" -eq 0 ]; then
    echo "$took s" >&2
    return 0
  fi
  echo "failed after $took s (exit $status)" >&2
  {
    if [ "$(wc -c <"$SETUP_LOG")" -ge "$from" ]; then
      echo "setup: phase '$name' failed; its output is in $SETUP_LOG, the last lines:"
      tail -c "+$from" "$SETUP_LOG" | tail -n "$SETUP_LOG_TAIL_LINES" | awk '{ print "  | " $0 }'
    else
      echo "setup: phase '$name' failed and printed nothing (log: $SETUP_LOG)"
    fi
  } >&2
  printf '==== phase %s failed (exit %s)\n' "$name" "$status" >>"$SETUP_LOG"
  exit "$status"
}
