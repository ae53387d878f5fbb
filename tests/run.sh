#!/bin/bash
# run.sh - runs the suite: each cmocka test program given as an argument
# (default: $BUILD/tests/test_*), then the script suites (CLI, daemon, bench
# smoke run) when they exist, and ends with one line "N passed, M failed"
# counting every cmocka test and every scripted check.  A program that crashes, hangs (LC_TEST_TIMEOUT seconds,
# default 900) or fails in its group setup counts each of its tests that did
# not report OK as failed (at least one); a script suite that outlasts
# LC_TEST_TIMEOUT is stopped and counts as failed.  Exits non-zero if
# anything failed.
#
# Each test program starts and stops its own memcached.  LC_TEST_SCALE=N
# divides the big counts (for sanitizer builds); it is passed through.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export BUILD=${BUILD:-build}
limit=${LC_TEST_TIMEOUT:-900}

if [ $# -eq 0 ]; then
  set -- "$BUILD"/tests/test_*
fi

log=$(mktemp)
supp=$(mktemp)
trap 'rm -f "$log" "$supp"' EXIT

# Sanitizer builds (make test SANITIZE=...): a finding fails the run.
# LevelDB and libmemcached are not instrumented, so ThreadSanitizer cannot
# see their own synchronisation (LevelDB reads its memtable lock-free by
# design): reports with their frames are suppressed.
printf 'race:libleveldb.so\nrace:libmemcached.so\nrace:libmemcachedutil.so\n' >"$supp"
export TSAN_OPTIONS="suppressions=$supp ${TSAN_OPTIONS:-halt_on_error=0}"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
passed=0 failed=0
summary=""

for bin in "$@"; do
  name=$(basename "$bin")
  echo "=== $name"
  if [ ! -x "$bin" ]; then
    echo "run.sh: $bin: not an executable" >&2
    failed=$((failed + 1))
    summary+="$name: missing"$'\n'
    continue
  fi
  start=$(date +%s)
  : >"$log"
  timeout -k 10 "$limit" "$bin" >"$log" 2>&1 &
  pid=$!
  tail -f --pid=$pid -n +1 "$log" 2>/dev/null &
  tailpid=$!
  wait $pid
  rc=$?
  wait $tailpid 2>/dev/null
  secs=$(( $(date +%s) - start ))
  total=$(sed -n 's/^\[==========\] Running \([0-9][0-9]*\) test(s)\..*/\1/p' "$log" | head -n 1)
  p=$(sed -n 's/^\[  PASSED  \] \([0-9][0-9]*\) test(s)\..*/\1/p' "$log" | tail -n 1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9][0-9]*\) test(s).*/\1/p' "$log" | tail -n 1)
  if [ -z "$p" ]; then
    # No summary: crashed, killed or timed out.  Count what reported OK.
    p=$(grep -c '^\[       OK \]' "$log")
    f=$(( ${total:-0} - p ))
    [ "$f" -lt 1 ] && f=1
  fi
  f=${f:-0}
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1
  fi
  if [ "$rc" -ne 0 ]; then
    why="exit status $rc"
    [ "$rc" -eq 124 ] && why="timed out after ${limit}s"
    [ "$rc" -eq 137 ] && why="killed after timing out"
    [ "$rc" -gt 128 ] && [ "$rc" -ne 137 ] && why="killed by signal $((rc - 128))"
    echo "run.sh: $name: $why" >&2
  fi
  passed=$((passed + p))
  failed=$((failed + f))
  summary+="$name: $p passed, $f failed (${secs}s)"$'\n'
done

# Script suites: each ends with a line "NAME: N passed, M failed".
extra=""
# LC_TEST_SKIP=a,b: script suites not to run (the sanitizer runs of
# .ci/run skip those their sanitizer has nothing to find in); each is
# named in the summary.
run_suite() {
  local name=$1; shift
  if [[ ",${LC_TEST_SKIP:-}," == *",$name,"* ]]; then
    extra+="$name: skipped (LC_TEST_SKIP)"$'\n'
    return
  fi
  echo "=== $name"
  local start=$SECONDS
  : >"$log"   # before tail starts, so that it never shows the last suite's
  timeout -k 10 "$limit" "$@" >"$log" 2>&1 &
  local pid=$!
  tail -f --pid=$pid -n +1 "$log" 2>/dev/null &
  local tailpid=$!
  wait $pid
  local rc=$?
  wait $tailpid 2>/dev/null
  local line cp cf
  line=$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed\$" "$log" | tail -n 1)
  if [ -n "$line" ]; then
    cp=$(echo "$line" | sed 's/^.*: \([0-9]*\) passed, \([0-9]*\) failed$/\1/')
    cf=$(echo "$line" | sed 's/^.*: \([0-9]*\) passed, \([0-9]*\) failed$/\2/')
  else
    cp=0 cf=1
  fi
  [ "$rc" -ne 0 ] && [ "$cf" -eq 0 ] && cf=1
  [ "$rc" -eq 124 ] && echo "run.sh: $name: timed out after ${limit}s" >&2
  [ "$rc" -eq 137 ] && echo "run.sh: $name: killed (SIGKILL: its timeout's, or from outside)" >&2
  passed=$((passed + cp))
  failed=$((failed + cf))
  extra+="$name: $cp passed, $cf failed ($((SECONDS - start))s)"$'\n'
}

[ -f "$here/cli_test.sh" ] && run_suite cli bash "$here/cli_test.sh"
[ -f "$here/daemon_test.sh" ] &&
  run_suite daemon bash "$here/daemon_test.sh"
# Further suites (tests/suite_NAME.sh, e.g. fuzz regression replay, chaos).
for s in "$here"/suite_*.sh; do
  [ -f "$s" ] || continue
  n=$(basename "$s" .sh); n=${n#suite_}
  run_suite "$n" bash "$s"
done
[ -x "$BUILD/bench" ] && run_suite bench-smoke bash "$here/../bench/run.sh" --smoke

echo
echo "=== summary"
printf '%s' "$summary"
printf '%s' "$extra"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
