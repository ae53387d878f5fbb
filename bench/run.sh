#!/bin/bash
# run.sh - the benchmark driver behind `make bench` and `make bench-smoke`.
# It starts a private memcached on a free loopback port (tests/memcached.sh)
# and three logcounterd daemons on it ($BUILD/logcounterd, one with its
# coalescing and --prefetch off (the per-request path; the daemon's default is
# --prefetch auto), one --no-coalesce, one --prefetch auto, each with its
# own log, on free 127.0.0.1 ports), with --peers also the peers (bench/peers.sh: two
# redis-server, AOF everysec and always, and a PostgreSQL), runs the bench
# against them, draws the charts with gnuplot, and stops the daemons, the
# peers and memcached and removes their scratch data on any exit.
#
#   bench/run.sh           the full run with $BUILD/bench: prints the table
#                          and writes bench/results/{latest.csv,
#                          latest-restore.csv,latest.txt,throughput.png,
#                          latency.png}
#   bench/run.sh --peers   the same with $BUILD/bench-peers and the peers
#                          (what make bench runs): also latest-peers.csv
#                          and peers.png; a peer that cannot be started
#                          gets rows saying why, and the run goes on
#   bench/run.sh --smoke   the sanity run for the test suite: a fraction of
#                          a second per case, tiny logs, results under
#                          $BUILD/bench-smoke, no charts; prints
#                          "bench-smoke: N passed, M failed", exit 1 on
#                          failure.  No peers unless --peers is given too
#                          (make bench-peers-smoke); then each must run.
#
# Settings (BENCH_SECONDS, BENCH_RUNS, BENCH_RECORDS_MAX, ...) come from the
# environment: see `$BUILD/bench --help`.  The smoke run ignores them.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/port.sh
BUILD=${BUILD:-build}
bin=$BUILD/bench
lcd=$BUILD/logcounterd
smoke=0
peers=0
for arg in "$@"; do
  case "$arg" in
    --smoke) smoke=1 ;;
    --peers) peers=1 bin=$BUILD/bench-peers ;;
    -h|--help) sed -n '2,28s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "usage: bench/run.sh [--smoke] [--peers]" >&2; exit 2 ;;
  esac
done
for b in "$bin" "$lcd"; do
  if [ ! -x "$b" ]; then
    echo "bench/run.sh: $b is missing: build it with make bench" >&2
    exit 1
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/logcounter-bench.XXXXXX")
# The logs live under $BUILD, on the disk a deployment would use (not a
# tmpfs /tmp, where a sync costs nothing).
data=$BUILD/bench-data.$$
dlogs=$BUILD/bench-daemon.$$
pdir=$BUILD/bench-peers.$$
daemons=()
# Stops every daemon started here: SIGTERM (they sync and close their
# logs), then SIGKILL after 10 s.
stop_daemons() {
  local pid i
  for pid in "${daemons[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${daemons[@]}"; do
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  daemons=()
}
cleanup() {
  stop_daemons
  [ "$peers" = 1 ] && bench/peers.sh stop "$pdir"
  tests/memcached.sh stop "$work"
  rm -rf "$work" "$data" "$dlogs"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE
# new-counters adds two keys per name (the counter and its claim): room for
# tens of millions of names (-M: a full memcached answers errors, not
# evictions; 1 GiB filled up in the 2026-12-03 run, at about 80 bytes a key)
port=$(LC_MEMCACHED_MB=${BENCH_MEMCACHED_MB:-6144} tests/memcached.sh start "$work")
export BENCH_MEMCACHED="--SERVER=127.0.0.1:$port"
export BENCH_DIR=$data

# start_daemon NAME ARGS...: logcounterd on a free 127.0.0.1 port with the
# log $dlogs/NAME and the bench's memcached; sets dport once it answers.
start_daemon() {
  local name=$1 tries=0 pid i l
  shift
  mkdir -p "$dlogs"
  while [ $tries -lt 20 ]; do
    tries=$((tries + 1))
    dport=$(free_port) || continue
    "$lcd" --db "$dlogs/$name" --memcached "$BENCH_MEMCACHED" \
      -l "${listen_pre:-}127.0.0.1:$dport${listen_more:-}" "$@" \
      2>>"$work/daemon-$name.log" &
    pid=$!
    daemons+=("$pid")
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      if (exec 3<>"/dev/tcp/127.0.0.1/$dport" && printf 'version\r\n' >&3 &&
          IFS= read -r -t 2 l <&3 && [[ $l == VERSION* ]]) 2>/dev/null; then
        return 0
      fi
      sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    unset 'daemons[-1]'
    grep -q "Address already in use" "$work/daemon-$name.log" || break
  done
  echo "bench/run.sh: cannot start $lcd:" >&2
  tail -n 5 "$work/daemon-$name.log" >&2
  return 1
}
# new-counters leaves a counter in this daemon per call: no limit on names.
# BENCH_DAEMON_FLAGS: more options for this daemon (an A/B of a setting).
# BENCH_STANDBY=1: the coalesce and prefetch daemons each serve a standby
# (--replication-listen; the standby, --standby-of, runs beside them, on
# its own log): the cost of high availability, in an A/B against
# BENCH_STANDBY=0 (the default).
# plan_standby: ha_flags for the next primary; follow NAME: its standby.
ha_flags=() ha_port=""
plan_standby() {
  ha_flags=() ha_port=""
  [ "${BENCH_STANDBY:-0}" = 1 ] || return 0
  ha_port=$(free_port) || return 1
  ha_flags=(--replication-listen "127.0.0.1:$ha_port")
}
follow() { # NAME: the standby of the primary planned last
  [ -n "$ha_port" ] || return 0
  local keep=$dport
  start_daemon "$1-standby" --standby-of "127.0.0.1:$ha_port" || return 1
  dport=$keep
}
# The prefetch daemon also listens with TLS (daemon-incr tls-pipe100,
# BENCH_DAEMON_TLS), with a throwaway self-signed certificate in $work;
# its plain port is notls:.  No openssl command: no TLS case.
tls_flags=() listen_pre="" listen_more=""
if command -v openssl >/dev/null 2>&1 && tport=$(free_port) &&
   openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/tls.key" \
     -out "$work/tls.pem" -days 2 -subj "/CN=127.0.0.1" 2>/dev/null; then
  tls_flags=(--tls-cert "$work/tls.pem" --tls-key "$work/tls.key")
  listen_pre="notls:" listen_more=",127.0.0.1:$tport"
fi
tls_more=$listen_more listen_pre="" listen_more=""
# shellcheck disable=SC2086
plan_standby && start_daemon coalesce --prefetch off --max-counters 1000000000 \
  "${ha_flags[@]}" ${BENCH_DAEMON_FLAGS:-} && follow coalesce
export BENCH_DAEMON="--SERVER=127.0.0.1:$dport"
start_daemon no-coalesce --no-coalesce
export BENCH_DAEMON_NOCOALESCE="--SERVER=127.0.0.1:$dport"
[ -n "$tls_more" ] && listen_pre="notls:" listen_more=$tls_more
plan_standby && start_daemon prefetch --prefetch auto "${tls_flags[@]}" \
  "${ha_flags[@]}" &&
  { listen_pre="" listen_more=""; follow prefetch; }
export BENCH_DAEMON_PREFETCH="--SERVER=127.0.0.1:$dport"
[ -n "$tls_more" ] && export BENCH_DAEMON_TLS="--SERVER=127.0.0.1:$tport"
if [ "$peers" = 1 ]; then
  # BENCH_REDIS_EVERYSEC, BENCH_REDIS_ALWAYS, BENCH_PG: an address each, or
  # "none: WHY"
  while IFS= read -r line; do
    if [[ $line == BENCH_*=* ]]; then export "${line?}"; fi
  done < <(bench/peers.sh start "$pdir")
fi

if [ "$smoke" = 1 ]; then
  export BENCH_SECONDS=0.4 BENCH_RUNS=1 BENCH_THREADS=1,2,4,8 BENCH_WIDE_THREADS=32,64 \
         BENCH_RECORDS_MAX=2000 BENCH_RESTORE_REPEATS=3 BENCH_CASES= \
         BENCH_TALLIES=2000 BENCH_TALLY_CHANGES=1000 \
         BENCH_OUT=$BUILD/bench-smoke
  "$bin" --check >"$work/out" 2>"$work/err" || {
    cat "$work/out" "$work/err" "$work"/daemon-*.log
    grep '^bench-smoke:' "$work/out" >/dev/null || echo "bench-smoke: 0 passed, 1 failed"
    exit 1
  }
  [ "$peers" = 1 ] ||
    echo "bench-smoke: peers (Redis, PostgreSQL) not run: $bin has none (make bench-peers-smoke runs them)"
  grep '^bench-smoke:' "$work/out"
  exit 0
fi

out=${BENCH_OUT:-bench/results}
export BENCH_OUT=$out
mkdir -p "$out"
"$bin" | tee "$out/latest.txt"
stop_daemons
if [ "$peers" = 1 ]; then bench/peers.sh stop "$pdir"; fi

if ! command -v gnuplot >/dev/null 2>&1; then
  echo "bench/run.sh: gnuplot is missing (tests/deps.sh gnuplot-nox): no charts" >&2
  exit 0
fi
# One series per case, mode and block of the throughput rows, in file order
# (the peers have their own chart, below).
series=$(awk -F, 'NR > 1 && $1 != "restore" && $1 != "prune" && $1 != "tally-flush" &&
                  $1 !~ /^(redis|pg)-/ && !seen[$1 FS $2 FS $4]++ \
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
wrote="$out/latest.csv, $out/latest-restore.csv, $out/throughput.png, $out/latency.png"
rm -f "$out/peers.png"
if grep -q -E '^(redis|pg)-' "$out/latest.csv"; then
  gnuplot -e "dir='$out'; machine='$machine'" bench/plot-peers.gp
  wrote="$wrote, $out/latest-peers.csv, $out/peers.png"
fi
echo "bench: wrote $wrote"
