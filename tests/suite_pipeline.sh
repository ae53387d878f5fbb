#!/bin/bash
# suite_pipeline.sh - logcounterd under the clients that used to stall it
#: deep pipelines, clients that never read, stock clients that
# pipeline, and SIGTERM in the middle of each.
#
# Against a private memcached and $BUILD/logcounterd on free loopback
# ports, with $BUILD/tests/lcd_pipe (tests/daemon/lcd_pipe.c) and
# tests/daemon/pipe_mix.py:
#   - one connection pipelines LINES (1,000,000) incr lines while it reads,
#     on one counter (and MANY, 100,000, on 10,000), with replies and with
#     noreply, fenced
#     by "version"; every reply is the expected block in order, every
#     counter ends at its count, stats counts every request; 8 other
#     connections allocate one id at a time meanwhile (their largest wait
#     is reported, not asserted) and the daemon's RSS may grow by at most
#     RSS_KIB;
#   - a random mix of incr, noreply, get/gets, tally incr/decr, version
#     and errors, pipelined, answered exactly as a model says;
#   - pymemcache (noreply incr) and pylibmc (incr_multi, 20 rounds);
#   - libmemcached with NOREPLY + BUFFER_REQUESTS, 100,000 increments;
#   - a client that reads each reply before it asks again: no reply
#     waits for the socket (stats write_waits stays 0);
#   - a client that writes 50 MB and never reads: closed after
#     --reply-timeout (logged, counted in stats, write_waits) while 8
#     others are served;
#   - SIGTERM during a pipeline on one counter, a noreply pipeline on
#     10,000, the unread client and the libmemcached client: the daemon
#     exits 0 and `logcounter verify` passes.
# LC_TEST_SCALE=N divides LINES and the other counts (sanitizer builds;
# the 10,000-counter pipelines then take 31,250 lines).  SIGTERM during
# the unread client gives that client (its verdict is not checked) a short
# -T: the daemon's close lingers (shutdown, then it reads and discards),
# so the client sees a FIN, never the reset it polls for, and waits out
# its -T however soon the daemon has exited (-T 60 cost 55 s a run).
# Ends with "pipeline: N passed, M failed".
# shellcheck disable=SC2034
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd CLI=$B/logcounter PIPE=$B/tests/lcd_pipe
MIX=tests/daemon/pipe_mix.py
SCALE=${LC_TEST_SCALE:-1}
[ "$SCALE" -ge 1 ] 2>/dev/null || SCALE=1
LINES=$((1000000 / SCALE))
# 10,000 counters cost a library call per line (4,000-22,000 lines/s
# here, with 8 other clients, depending on the machine's load): 50,000
# lines (5 a counter, about 950 KB of pipeline: 15 times the daemon's
# 64 KiB input bound, past the kernel's default socket buffers), so that
# the client's 60 s wait for its fence is no speed threshold (250,000
# lines at 4,000 lines/s on a loaded machine was one, and failed);
# sanitizer builds take 1/32 of a million (31,250 lines, 600 KB, 9 times
# the input bound: ThreadSanitizer's 2,000 lines/s made 62,500 lines
# 31 s of the 60).
MANY=50000; [ "$SCALE" -gt 1 ] && MANY=$((1000000 / 32))
# The bound on the daemon's RSS growth during one pipeline.  Sanitizer
# builds keep freed memory in quarantine and shadow memory, so theirs is
# larger.
case "$BUILD" in *build-*) RSS_KIB=$((512 * 1024)) ;; *) RSS_KIB=$((64 * 1024)) ;; esac
REPLY_TIMEOUT=2 DRAIN_TIMEOUT=5

SUITE=pipeline
. tests/check.sh

for bin in "$DAEMON" "$CLI" "$PIPE"; do
  [ -x "$bin" ] || { echo "suite_pipeline: $bin not built" >&2; failed=1; finish; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_pipeline.XXXXXX") || exit 1
DPID=""
cleanup() {
  [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MPORT=$(tests/memcached.sh start "$TMP") || {
  echo "suite_pipeline: cannot start memcached" >&2; failed=1; finish; }
MC="--SERVER=127.0.0.1:$MPORT"
unset LOGCOUNTER_MEMCACHED LOGCOUNTER_DB LOGCOUNTER_DURABILITY
. tests/daemon.sh

daemon() {
  start_daemon db --reply-timeout $REPLY_TIMEOUT --drain-timeout $DRAIN_TIMEOUT ||
    { failed=$((failed + 1)); finish; }
}
# pipe NAME ARGS...: an lcd_pipe run that must pass.
pipe() {
  local name=$1; shift
  "$PIPE" "$@" -p "$DPORT" >"$TMP/pipe.out" 2>&1
  local rc=$?
  cat "$TMP/pipe.out"
  check "$name" [ $rc -eq 0 ]
}
py() {
  local name=$1; shift
  "$MIX" "$1" "$DPORT" "${@:2}" >"$TMP/py.out" 2>&1
  local rc=$?
  cat "$TMP/py.out"
  check "$name" [ $rc -eq 0 ]
}
# verify NAME...: logcounter verify passes on each (the daemon stopped).
verify() {
  local n
  for n in "$@"; do
    "$CLI" --memcached "$MC" --db "$TMP/db" verify "$n" >"$TMP/verify.out" 2>&1 ||
      { cat "$TMP/verify.out"; return 1; }
  done
}
# sigterm NAME CLIENT_OK VERIFY_NAMES CLIENT...: starts the client in the
# background, lets it run 1 s, sends SIGTERM, and checks that the daemon
# exits 0 and that the log verifies (CLIENT_OK=1: and that the client
# passed: what it read was in order); restarts the daemon.
sigterm() {
  local name=$1 client_ok=$2 names=$3; shift 3
  "$@" >"$TMP/bg.out" 2>&1 &
  local cpid=$! t0 ms
  sleep 1
  t0=$(date +%s%N)
  stop_daemon TERM
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  wait "$cpid" 2>/dev/null
  local crc=$?
  echo "  SIGTERM during $name: the daemon exited $RC after $ms ms" \
       "(--drain-timeout $DRAIN_TIMEOUT s); the client: $(tail -n 1 "$TMP/bg.out")"
  check "SIGTERM during $name: exit 0" [ "$RC" -eq 0 ]
  # shellcheck disable=SC2086
  check "SIGTERM during $name: verify passes" verify $names
  [ "$client_ok" = 1 ] &&
    check "SIGTERM during $name: what the client read was in order" [ "$crc" -eq 0 ]
  daemon
}

daemon
echo "pipeline: $LINES lines a pipeline, RSS bound +$RSS_KIB KiB, daemon pid $DPID"
# A client that reads each reply before it asks again never fills its
# socket: every reply is written at once, none waits for EV_WRITE (a
# frozen output buffer once made every reply wait a loop turn and two
# epoll_ctl calls).  The client that never reads, below, makes it count.
one_at_a_time() {
  local i v last=0
  conn
  for ((i = 0; i < $1; i++)); do
    ask "incr $2 1"
    v=$REPLY_LINE
    [[ $v =~ ^[0-9]+$ ]] && [ "$v" -gt "$last" ] || { conn_close; return 1; }
    last=$v
  done
  conn_close
}
check "2,000 requests one at a time, each answer above the last" \
  one_at_a_time $((2000 / SCALE)) "oat$$"
check "no reply waited for the socket (write_waits 0)" \
  [ "$(stats_value write_waits)" = 0 ]
pipe "one counter, replies" pipe -k "one-r" -n "$LINES" -O 8 -P "$DPID" -R "$RSS_KIB"
pipe "one counter, noreply" pipe -k "one-n" -n "$LINES" -N -O 8 -P "$DPID" -R "$RSS_KIB"
pipe "10,000 counters, replies" pipe -k "many-r" -K 10000 -n "$MANY" -O 8 -P "$DPID" -R "$RSS_KIB"
pipe "10,000 counters, noreply" pipe -k "many-n" -K 10000 -n "$MANY" -N -O 8 -P "$DPID" -R "$RSS_KIB"
pipe "blocks of 7 on 3 counters" pipe -k "blk" -K 3 -b 7 -n $((LINES / 50)) -O 2
py "a pipelined mix answered exactly as modelled" mix "mix$$" $((50000 / SCALE)) "$$"
py "pymemcache, noreply" pymemcache "pm$$" $((20000 / SCALE))
py "pylibmc, incr_multi" pylibmc "pl$$" $((20 / SCALE))
pipe "libmemcached NOREPLY + BUFFER_REQUESTS" libmc -k "libmc" -n 100000

before=$(stats_value closed_unread)
pipe "a client that never reads is closed; the others are served" \
  unread -k "unread" -m 50 -O 8 -T $((REPLY_TIMEOUT + 20))
check "its close is logged with the reason" grep -q "reply-timeout" "$TMP/daemon.log"
check "stats counts it (closed_unread)" [ "$(stats_value closed_unread)" -gt "${before:-0}" ]
check "its replies waited for the socket (write_waits)" [ "$(stats_value write_waits)" -gt 0 ]

sigterm "a pipeline on one counter" 1 "t-one" \
  "$PIPE" pipe -p "$DPORT" -k "t-one" -n "$LINES" -O 8 -x
sigterm "a noreply pipeline on 10,000 counters" 1 "t-many0 t-many5000 t-many9999" \
  "$PIPE" pipe -p "$DPORT" -k "t-many" -K 10000 -n "$LINES" -N -O 8 -x
# -T: past the 1 s before SIGTERM and the drain timeout, with 4 s of
# slack (ThreadSanitizer's daemon exits 5.1 s after SIGTERM); the
# client's verdict is not checked (see the header).
sigterm "a client that never reads" 0 "t-unread" \
  "$PIPE" unread -p "$DPORT" -k "t-unread" -m 50 -O 8 -T $((1 + DRAIN_TIMEOUT + 4))
sigterm "the libmemcached NOREPLY client" 0 "t-libmc" \
  "$PIPE" libmc -p "$DPORT" -k "t-libmc" -n 5000000
stop_daemon TERM
check "the daemon exits 0 at the end" [ "$RC" -eq 0 ]
check "no sanitizer report in the daemon's log" \
  bash -c "! grep -Eq 'Sanitizer|runtime error' '$TMP/daemon.log'"
finish
