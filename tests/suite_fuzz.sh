#!/bin/bash
# suite_fuzz.sh - replays every committed fuzz input (fuzz/corpus/T: seeds,
# fuzz/regress/T: inputs that once crashed a target, each since fixed)
# through $BUILD/fuzz/replay_T, the fuzz targets built with the project's
# compiler and flags (sanitizers too under make test SANITIZE=...).  A
# crash, a sanitizer report or a broken property fails the check; so does
# an empty seed corpus (nothing would be checked).  Takes about a second.
# Last line: "fuzz: N passed, M failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
BUILD=${BUILD:-build}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
passed=0 failed=0

check() {
  local what=$1; shift
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "ok   $what: $out"
    passed=$((passed + 1))
  else
    echo "FAIL $what (exit $rc):"
    printf '%s\n' "$out" | tail -n 30
    failed=$((failed + 1))
  fi
}

# Non-empty directory with at least one file?
has_files() { [ -n "$(find "$1" -type f 2>/dev/null | head -n 1)" ]; }

for t in proto record name cli auth binary; do
  bin=$BUILD/fuzz/replay_$t
  if [ ! -x "$bin" ]; then
    echo "FAIL $t: $bin is missing (make $bin)"
    failed=$((failed + 1))
    continue
  fi
  if has_files "$root/fuzz/corpus/$t"; then
    check "$t seeds" "$bin" "$root/fuzz/corpus/$t"
  else
    echo "FAIL $t seeds: fuzz/corpus/$t is empty"
    failed=$((failed + 1))
  fi
  if has_files "$root/fuzz/regress/$t"; then
    check "$t regressions" "$bin" "$root/fuzz/regress/$t"
  fi
done

# The replay driver must itself be able to fail.
if [ -x "$BUILD/fuzz/replay_name" ]; then
  if "$BUILD/fuzz/replay_name" "$root/fuzz/no-such-input" >/dev/null 2>&1; then
    echo "FAIL replay driver: a missing input was not an error"
    failed=$((failed + 1))
  else
    echo "ok   replay driver: a missing input is an error"
    passed=$((passed + 1))
  fi
fi

echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
