# check.sh - sourced by the suites that count their own checks
# (suite_pipeline.sh, suite_loops.sh, suite_owner.sh): check and finish.
# Set SUITE (the name in the last line) before sourcing.
# shellcheck shell=bash
passed=0 failed=0
# check NAME COMMAND...: counts and prints one check.
check() {
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   - $name"
  else failed=$((failed + 1)); echo "FAIL - $name"; fi
}
# finish: "SUITE: N passed, M failed", exits 1 on a failure.
finish() { echo "$SUITE: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }
