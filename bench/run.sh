#!/bin/bash
# run.sh - the benchmark driver behind `make bench` and `make bench-smoke`.
# It starts a private memcached on a free loopback port (tests/memcached.sh)
# and three logcounterd daemons on it ($BUILD/logcounterd, one with its
# coalescing and --prefetch off (the per-request path; the daemon's default is
# --prefetch auto), one --no-coalesce, one --prefetch auto, each with its
# own log, on free 127.0.0.1 ports), with --peers also the peers (bench/peers.sh: two
# redis-server, AOF everysec and always, and a PostgreSQL), runs the bench
# against them, draws the charts with gnuplot, and stops the daemons, the
# peers and memcached and removes their scratch data on any exit.  It
# passes the bench the PIDs of memcached and of the --prefetch auto daemon:
# their own CPU time per million requests is reported beside ids/s.
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
#                          The standby line runs (below), the cluster
#                          line only with BENCH_CLUSTER=1.
#
#   BENCH_STANDBY=1        also the line daemon-incr standby: a default
#                          daemon (--prefetch auto, --standby-mode
#                          required, --replication-listen) and its standby
#                          (--standby-of), in sync before the bench starts
#   BENCH_CLUSTER=1        also daemon-incr cluster: a one-member etcd
#                          (Debian's etcd-server) and three default nodes
#                          (--etcd, --cluster, --node, --replication-listen),
#                          the clients on the primary (its stats'
#                          cluster_role) once its sync standby is in sync
#                          Both are compared with the lone --prefetch auto
#                          daemon in the same run (the table's footer, the
#                          CSV's ratio_to_daemon); BENCH_STANDBY=0
#                          leaves the standby out of the smoke run.  All
#                          on free 127.0.0.1 ports.
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
    -h|--help) sed -n '2,47s/^# \{0,1\}//p' "$0"; exit 0 ;;
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
daemons=() followers=()
# stop_pids PID...: SIGTERM (they sync and close their logs), then SIGKILL
# after 10 s.
stop_pids() {
  local pid i
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
# Stops every daemon started here, the standbys (followers) last, one
# after the other: a primary stopping gives its unused ids back under a
# floor its standby must acknowledge (a standby gone first costs its
# --standby-timeout), and two cluster standbys stopped at once were seen
# to keep one running until the SIGKILL.
stop_daemons() {
  local f
  [ ${#daemons[@]} -gt 0 ] && stop_pids "${daemons[@]}"
  for f in "${followers[@]}"; do stop_pids "$f"; done
  daemons=() followers=()
}
# follower: the daemon started last is a standby (stopped last)
follower() {
  followers+=("${daemons[-1]}")
  unset 'daemons[-1]'
}
# BENCH_CLUSTER's etcd: stopped after the nodes (SIGTERM, SIGKILL after 10 s)
etcd_pid=""
stop_etcd() {
  [ -n "$etcd_pid" ] || return 0
  kill -TERM "$etcd_pid" 2>/dev/null || true
  local i=0
  while kill -0 "$etcd_pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "$etcd_pid" 2>/dev/null || true
  wait "$etcd_pid" 2>/dev/null || true
  etcd_pid=""
}
cleanup() {
  stop_daemons
  stop_etcd
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
# its process, for its CPU time per request (memcached-incr, raw-pipe100)
for ((i = 0; i < 50; i++)); do [ -s "$work/memcached.pid" ] && break; sleep 0.1; done
BENCH_MEMCACHED_PID=$(cat "$work/memcached.pid" 2>/dev/null || echo 0)
export BENCH_MEMCACHED_PID
export BENCH_DIR=$data

# start_daemon NAME ARGS...: logcounterd on a free 127.0.0.1 port with the
# log $dlogs/NAME and the bench's memcached; sets dport and dpid (its
# process) once it answers.
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
        dpid=$pid
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
# The prefetch daemon also listens with TLS (daemon-incr tls-pipe100,
# BENCH_DAEMON_TLS), with a throwaway self-signed certificate in $work;
# its plain port is notls:.  No openssl command: no TLS case.
tls_flags=() tls_more=""
if command -v openssl >/dev/null 2>&1 && tport=$(free_port) &&
   openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/tls.key" \
     -out "$work/tls.pem" -days 2 -subj "/CN=127.0.0.1" 2>/dev/null; then
  tls_flags=(--tls-cert "$work/tls.pem" --tls-key "$work/tls.key")
  tls_more=",127.0.0.1:$tport"
fi
# new-counters leaves a counter in this daemon per call: no limit on names.
# BENCH_DAEMON_FLAGS: more options for this daemon (an A/B of a setting).
# shellcheck disable=SC2086
start_daemon coalesce --prefetch off --max-counters 1000000000 ${BENCH_DAEMON_FLAGS:-}
export BENCH_DAEMON="--SERVER=127.0.0.1:$dport"
start_daemon no-coalesce --no-coalesce
export BENCH_DAEMON_NOCOALESCE="--SERVER=127.0.0.1:$dport"
# the default daemon, "the lone daemon" the standby and cluster lines are
# compared with; its CPU per request is measured (BENCH_DAEMON_PREFETCH_PID)
[ -n "$tls_more" ] && listen_pre="notls:" listen_more=$tls_more
start_daemon prefetch --prefetch auto "${tls_flags[@]}"
listen_pre="" listen_more=""
export BENCH_DAEMON_PREFETCH="--SERVER=127.0.0.1:$dport" BENCH_DAEMON_PREFETCH_PID=$dpid
[ -n "$tls_more" ] && export BENCH_DAEMON_TLS="--SERVER=127.0.0.1:$tport"

# stat_of PORT NAME: the value of STAT NAME in that daemon's stats ("":
# none or no answer within 2 s)
stat_of() {
  local l
  (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'stats\r\n' >&3 &&
    while IFS= read -r -t 2 l <&3; do
      l=${l%$'\r'}
      [ "$l" = END ] && break
      [[ $l == "STAT $2 "* ]] && echo "${l#"STAT $2 "}"
    done) 2>/dev/null || true
}
# wait_stat PORT NAME VALUE SECONDS: until STAT NAME is VALUE
wait_stat() {
  local end=$((SECONDS + $4))
  while [ $SECONDS -le "$end" ]; do
    [ "$(stat_of "$1" "$2")" = "$3" ] && return 0
    sleep 0.1
  done
  return 1
}
# fail_ha WHAT LOG...: says what did not start, with the logs' tails
fail_ha() {
  local what=$1 l
  shift
  echo "bench/run.sh: $what" >&2
  [ "$smoke" = 1 ] && echo "bench-smoke: 0 passed, 1 failed ($what)"
  for l in "$@"; do tail -n 5 "$work/daemon-$l.log" >&2 2>/dev/null || true; done
  exit 1
}

# The smoke run has the standby line unless BENCH_STANDBY=0 (about 1.5 s
# on 2 loaded cores), and the cluster line only with BENCH_CLUSTER=1: it
# costs 3.5 s or more, and on a machine loaded past 20 the primary was
# seen to lose its 5 s lease (EFENCED), which would fail make test.
standby=${BENCH_STANDBY:-$smoke} cluster=${BENCH_CLUSTER:-0}
[ "$smoke" = 1 ] && [ "$cluster" != 1 ] &&
  echo "bench-smoke: daemon-incr cluster not run (BENCH_CLUSTER=1 bench/run.sh --smoke runs it)"
# BENCH_STANDBY=1: daemon-incr standby, a default daemon (--prefetch auto,
# --standby-mode required) with --replication-listen, and its standby
# (--standby-of, the defaults, its own log), on the same memcached; the
# bench starts once the primary's stats say replication_standby sync.
if [ "$standby" = 1 ]; then
  ha_port=$(free_port)
  start_daemon standby-primary --prefetch auto --standby-mode required \
    --replication-listen "127.0.0.1:$ha_port"
  sb_port=$dport sb_pid=$dpid
  start_daemon standby-standby --standby-of "127.0.0.1:$ha_port"
  follower
  wait_stat "$sb_port" replication_standby sync 30 ||
    fail_ha "BENCH_STANDBY: the standby did not come in sync within 30 s" \
      standby-primary standby-standby
  export BENCH_DAEMON_STANDBY="--SERVER=127.0.0.1:$sb_port" BENCH_DAEMON_STANDBY_PID=$sb_pid
fi

# BENCH_CLUSTER=1: daemon-incr cluster, three default nodes (--prefetch
# auto, --leader-ttl at its default) on a one-member etcd of their own
# (free 127.0.0.1 ports, data in $work), each with --replication-listen;
# the clients go to the node whose stats say cluster_role primary, once it
# names its synchronous standby and that one is in sync.
if [ "$cluster" = 1 ]; then
  command -v etcd >/dev/null 2>&1 ||
    fail_ha "BENCH_CLUSTER: no etcd (Debian's etcd-server: tests/deps.sh etcd-server)"
  ec=$(free_port) ep=$(free_port)
  etcd --name bench --data-dir "$work/etcd" \
    --listen-client-urls "http://127.0.0.1:$ec" \
    --advertise-client-urls "http://127.0.0.1:$ec" \
    --listen-peer-urls "http://127.0.0.1:$ep" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ep" \
    --initial-cluster "bench=http://127.0.0.1:$ep" \
    --initial-cluster-state new >>"$work/daemon-etcd.log" 2>&1 &
  etcd_pid=$!
  ok=0
  for ((i = 0; i < 100; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$ec" && printf 'GET /health HTTP/1.0\r\n\r\n' >&3 &&
        timeout 1 cat <&3) 2>/dev/null | grep -q '"health":"true"'; then
      ok=1; break
    fi
    kill -0 "$etcd_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ "$ok" = 1 ] || fail_ha "BENCH_CLUSTER: etcd did not start" etcd
  declare -A cl_port=() cl_pid=()
  for n in 1 2 3; do
    start_daemon "cluster-n$n" --prefetch auto --standby-mode required \
      --etcd "http://127.0.0.1:$ec" --cluster bench --node "n$n" \
      --replication-listen "127.0.0.1:$(free_port)"
    cl_port[$n]=$dport cl_pid[$n]=$dpid
  done
  prim="" end=$((SECONDS + 60))
  while [ -z "$prim" ] && [ $SECONDS -le $end ]; do
    for n in 1 2 3; do
      if [ "$(stat_of "${cl_port[$n]}" cluster_role)" = primary ] &&
         [ -n "$(stat_of "${cl_port[$n]}" cluster_sync_standby)" ] &&
         [ "$(stat_of "${cl_port[$n]}" replication_standby)" = sync ]; then
        prim=$n
      fi
    done
    [ -n "$prim" ] || sleep 0.2
  done
  [ -n "$prim" ] || fail_ha "BENCH_CLUSTER: no primary with a synchronous standby in sync within 60 s" \
    etcd cluster-n1 cluster-n2 cluster-n3
  # the other two are stopped after it, one after the other
  for n in 1 2 3; do
    [ "$n" = "$prim" ] && continue
    for i in "${!daemons[@]}"; do
      [ "${daemons[$i]}" = "${cl_pid[$n]}" ] && unset 'daemons[i]'
    done
    followers+=("${cl_pid[$n]}")
  done
  daemons=("${daemons[@]}")
  export BENCH_DAEMON_CLUSTER="--SERVER=127.0.0.1:${cl_port[$prim]}" \
         BENCH_DAEMON_CLUSTER_PID=${cl_pid[$prim]}
fi
if [ "$peers" = 1 ]; then
  # BENCH_REDIS_EVERYSEC, BENCH_REDIS_ALWAYS, BENCH_PG: an address each, or
  # "none: WHY"
  while IFS= read -r line; do
    if [[ $line == BENCH_*=* ]]; then export "${line?}"; fi
  done < <(bench/peers.sh start "$pdir")
fi

if [ "$smoke" = 1 ]; then
  export BENCH_SECONDS=0.4 BENCH_RUNS=1 BENCH_THREADS=1,2,4,8 BENCH_WIDE_THREADS=32,64 \
         BENCH_RECORDS_MAX=2000 BENCH_RESTORE_REPEATS=3 BENCH_CASES='' BENCH_DAEMON_MODES='' \
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
stop_etcd
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
