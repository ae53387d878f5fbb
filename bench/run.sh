#!/bin/bash
# run.sh - the benchmark driver behind `make bench` and `make bench-smoke`.
# It starts a private memcached on a free loopback port (tests/memcached.sh),
# runs $BUILD/bench against it, draws the charts with gnuplot, and stops
# memcached and removes its scratch logs on any exit.
#
#   bench/run.sh           the full run: prints the table and writes
#                          bench/results/{latest.csv,latest-restore.csv,
#                          latest.txt,throughput.png,latency.png}
#   bench/run.sh --smoke   the sanity run for the test suite: a fraction of
#                          a second per case, tiny logs, results under
#                          $BUILD/bench-smoke, no charts; prints
#                          "bench-smoke: N passed, M failed", exit 1 on failure
#
# Settings (BENCH_SECONDS, BENCH_RUNS, BENCH_RECORDS_MAX, ...) come from the
# environment: see `$BUILD/bench --help`.  The smoke run ignores them.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
bin=$BUILD/bench
smoke=0
case "${1:-}" in
  --smoke) smoke=1 ;;
  "") ;;
  -h|--help) sed -n '2,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "usage: bench/run.sh [--smoke]" >&2; exit 2 ;;
esac
if [ ! -x "$bin" ]; then
  echo "bench/run.sh: $bin is missing: build it with make bench" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/logcounter-bench.XXXXXX")
# The logs live under $BUILD, on the disk a deployment would use (not a
# tmpfs /tmp, where a sync costs nothing).
data=$BUILD/bench-data.$$
cleanup() {
  tests/memcached.sh stop "$work"
  rm -rf "$work" "$data"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE
port=$(tests/memcached.sh start "$work")
export BENCH_MEMCACHED="--SERVER=127.0.0.1:$port"
export BENCH_DIR=$data

if [ "$smoke" = 1 ]; then
  export BENCH_SECONDS=0.4 BENCH_RUNS=1 BENCH_THREADS=1,2,4,8 \
         BENCH_RECORDS_MAX=2000 BENCH_RESTORE_REPEATS=3 BENCH_CASES= \
         BENCH_OUT=$BUILD/bench-smoke
  "$bin" --check >"$work/out" 2>"$work/err" || {
    cat "$work/out" "$work/err"
    grep '^bench-smoke:' "$work/out" >/dev/null || echo "bench-smoke: 0 passed, 1 failed"
    exit 1
  }
  grep '^bench-smoke:' "$work/out"
  exit 0
fi

out=${BENCH_OUT:-bench/results}
export BENCH_OUT=$out
mkdir -p "$out"
"$bin" | tee "$out/latest.txt"

if ! command -v gnuplot >/dev/null 2>&1; then
  echo "bench/run.sh: gnuplot is missing (tests/deps.sh gnuplot-nox): no charts" >&2
  exit 0
fi
# One series per case, mode and block of the throughput rows, in file order.
series=$(awk -F, 'NR > 1 && $1 != "restore" && $1 != "prune" && !seen[$1 FS $2 FS $4]++ \
                  { print $1, $2, $4 }' "$out/latest.csv")
if [ -z "$series" ]; then
  echo "bench/run.sh: no throughput rows: no charts" >&2
  exit 0
fi
cases=$(echo "$series" | awk '{ print $1 }' | tr '\n' ' ')
modes=$(echo "$series" | awk '{ print $2 }' | tr '\n' ' ')
blocks=$(echo "$series" | awk '{ print $3 }' | tr '\n' ' ')
machine=$(head -1 "$out/latest.txt" | sed 's/^logcounter [^ ]* benchmark on //')
gnuplot -e "dir='$out'; cases='$cases'; modes='$modes'; blocks='$blocks'; machine='$machine'" \
  bench/plot.gp
echo "bench: wrote $out/latest.csv, $out/latest-restore.csv, $out/throughput.png, $out/latency.png"
