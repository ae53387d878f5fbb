#!/bin/bash
# run.sh - runs the libFuzzer targets built by `make fuzz-build`, one after
# the other, FUZZ_SECONDS each (default 60), and prints a table of
# executions per target.  Usage: fuzz/run.sh [TARGET ...] (default: all).
#
# Each target starts from its committed seeds (fuzz/corpus/T) and
# regression inputs (fuzz/regress/T) with its dictionary (fuzz/dict/T.dict);
# inputs that reach new code are kept in $FUZZ_BUILD/corpus/T (never in the
# committed seeds), crashing inputs in $FUZZ_BUILD/crashes/T/ and the log
# in $FUZZ_BUILD/logs/T.log.  The table gives, per target, executions,
# seconds, coverage edges and inputs kept in $FUZZ_BUILD/corpus/T.
# Exits 1 if any target crashed or broke a property: fix the bug, then
# copy the input into fuzz/regress/T/ so that make test replays it from
# then on.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${FUZZ_BUILD:-build-fuzz}
secs=${FUZZ_SECONDS:-60}
[ $# -eq 0 ] && set -- proto record name cli
case "$secs" in ''|*[!0-9]*) echo "fuzz: FUZZ_SECONDS must be a number" >&2
                             exit 2 ;; esac

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
report=""
failed=0
for t in "$@"; do
  bin=$out/fuzz_$t
  if [ ! -x "$bin" ]; then
    echo "fuzz: $bin is missing (make fuzz-build)" >&2
    failed=1
    continue
  fi
  mkdir -p "$out/corpus/$t" "$out/crashes/$t" "$out/logs" \
           "$root/fuzz/regress/$t"
  log=$out/logs/$t.log
  dict=()
  [ -f "$root/fuzz/dict/$t.dict" ] && dict=(-dict="$root/fuzz/dict/$t.dict")
  echo "=== fuzz_$t: ${secs}s"
  start=$(date +%s)
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "${dict[@]}" \
    -artifact_prefix="$out/crashes/$t/" \
    "$out/corpus/$t" "$root/fuzz/corpus/$t" "$root/fuzz/regress/$t" \
    >"$log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' \
         "$log" | tail -n 1)
  [ -z "$runs" ] && runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" |
                           tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | sed 's/cov: //')
  kept=$(find "$out/corpus/$t" -type f | wc -l)
  status=ok
  if [ "$rc" -ne 0 ]; then
    status="CRASH (exit $rc): see $log and $out/crashes/$t/"
    failed=1
    grep -m 5 -E 'ERROR|property broken|runtime error|SUMMARY' "$log" >&2
  fi
  report+=$(printf '%-8s %12s execs %6ss %8s edges %6s kept  %s' \
            "$t" "${runs:-?}" "$took" "${cov:-?}" "$kept" "$status")$'\n'
done
echo
echo "=== fuzz summary (FUZZ_SECONDS=$secs)"
printf '%s' "$report"
exit $failed
