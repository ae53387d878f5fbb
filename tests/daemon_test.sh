#!/bin/bash
# daemon_test.sh - end-to-end test of logcounterd, the LogCounter service.
#
# Starts a private memcached (tests/memcached.sh) and $BUILD/logcounterd on
# free loopback ports (127.0.0.1 only), and talks to the daemon with bash's
# /dev/tcp, with $BUILD/tests/lcd_client (concurrent load, a libmemcached
# client, idle connections) and with libmemcached-tools (memcstat, memcping,
# memccat).  Checks the protocol, errors and connection limits, concurrent
# uniqueness, the SIGTERM drain, SIGTERM + memcached wipe + restart
# (exactly last + 1), SIGKILL + memcached wipe + restart, the
# daemon's hold on the log, and tallies (incr/decr tally:NAME through
# /dev/tcp and libmemcached, bad input, exact sums under many connections,
# the flusher, the flush at SIGTERM, a memcached restart's loss reported).  Ends with "daemon: N passed, M failed" and
# exits non-zero when anything failed.
#
# LC_TEST_SCALE=N divides the big counts (sanitizer builds).
# Checks are written as check NAME COMMAND...; helpers set REPLY_LINE, RC.
# eval '...' conditions are expanded when the check runs (meant).
# shellcheck disable=SC2016,SC2034
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd CLIENT=$B/tests/lcd_client CLI=$B/logcounter
for bin in "$DAEMON" "$CLIENT" "$CLI"; do
  if [ ! -x "$bin" ]; then
    echo "daemon_test: $bin not found; run make all $BUILD/tests/lcd_client" >&2
    echo "daemon: 0 passed, 1 failed"
    exit 1
  fi
done
SCALE=${LC_TEST_SCALE:-1}
[ "$SCALE" -ge 1 ] 2>/dev/null || SCALE=1

TMP=$(mktemp -d "${TMPDIR:-/tmp}/daemon_test.XXXXXX") || exit 1
DPID=""
cleanup() {
  [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
  [ -f "$TMP/mc2.pid" ] && kill "$(cat "$TMP/mc2.pid")" 2>/dev/null
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MPORT=$(tests/memcached.sh start "$TMP") || {
  echo "daemon_test: cannot start memcached" >&2
  echo "daemon: 0 passed, 1 failed"; exit 1; }
MC="--SERVER=127.0.0.1:$MPORT"
unset LOGCOUNTER_MEMCACHED LOGCOUNTER_DB LOGCOUNTER_DURABILITY

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   - $1"; }
bad() { failed=$((failed + 1)); echo "FAIL - $1${2:+: $2}"; }
check() {
  local name=$1; shift
  if "$@"; then ok "$name"; else bad "$name" "last reply '${REPLY_LINE:-}'"; fi
}

# start_daemon, stop_daemon, wait_daemon, conn, say, hear, ask,
# stats_value... (tests/daemon.sh)
. tests/daemon.sh

# tally_stats NAME: "stats tally NAME" into T_TOTAL T_PENDING T_LOSSES
# T_LOST.
tally_stats() {
  T_TOTAL="" T_PENDING="" T_LOSSES="" T_LOST=""
  conn; say "stats tally $1"
  while hear && [ "$REPLY_LINE" != END ]; do
    case $REPLY_LINE in
      "STAT lost "*) T_LOST=${REPLY_LINE#STAT lost } ;;
      "STAT total "*) T_TOTAL=${REPLY_LINE#STAT total } ;;
      "STAT pending "*) T_PENDING=${REPLY_LINE#STAT pending } ;;
      "STAT losses "*) T_LOSSES=${REPLY_LINE#STAT losses } ;;
    esac
  done
  conn_close
}
# tally_applied NAME SUM: polls (up to 60 s, no timing asserted) until the
# tally's durable total is SUM with nothing pending.
tally_applied() {
  local i=0
  while [ $i -lt 300 ]; do
    tally_stats "$1"
    [ "$T_TOTAL" = "$2" ] && [ "$T_PENDING" = 0 ] && return 0
    sleep 0.2; i=$((i + 1))
  done
  return 1
}
# flusher_ran N: polls until the flusher has run at least N times.
flusher_ran() {
  local i=0 r
  while [ $i -lt 300 ]; do
    r=$(stats_value flusher_runs)
    [ "${r:-0}" -ge "$1" ] && return 0
    sleep 0.1; i=$((i + 1))
  done
  return 1
}
# cli_tally DB NAME: "logcounter tally get NAME --json" of a stopped daemon's
# log into C_TOTAL C_PENDING C_LOSSES.
cli_tally() {
  local out
  out=$("$CLI" --memcached "$MC" --db "$TMP/$1" tally get "$2" --json 2>&1)
  C_TOTAL=$(sed -n 's/.*"total":\(-*[0-9]*\).*/\1/p' <<<"$out")
  C_PENDING=$(sed -n 's/.*"pending":\(-*[0-9]*\).*/\1/p' <<<"$out")
  C_LOSSES=$(sed -n 's/.*"losses":\([0-9]*\).*/\1/p' <<<"$out")
  C_LOST=$(sed -n 's/.*"lost":\([0-9]*\).*/\1/p' <<<"$out")
  [ -n "$C_TOTAL" ] || echo "     logcounter tally get: $out"
}
VERSION_LINE="VERSION 1.6.0 logcounterd-$("$DAEMON" --version | cut -d' ' -f2)"
alive() { conn && ask version && reply_is "$VERSION_LINE"; }
# ==== options ================================================================

"$DAEMON" --help >"$TMP/out" 2>&1; RC=$?
check "--help exits 0" [ $RC = 0 ]
check "--help prints the defaults" grep -q "default 127.0.0.1:11311" "$TMP/out"
check "--help sends the log's commands to the admin socket" \
  grep -q "run the log's commands through --admin-socket" "$TMP/out"
check "--help documents --flush-interval and its default" eval 'grep -A2 -- "--flush-interval SECONDS" "$TMP/out" | grep -q "(default 1)"'
check "--help documents incr/decr tally:NAME" grep -q "decr tally:NAME D" "$TMP/out"
"$DAEMON" --db "$TMP/x" --flush-interval -1 >"$TMP/out2" 2>&1; RC=$?
check "bad --flush-interval: usage error 2" eval '[ $RC = 2 ] && grep -q "invalid value .-1. for --flush-interval" "$TMP/out2"'
"$DAEMON" --version >"$TMP/out" 2>&1; RC=$?
check "--version" eval '[ $RC = 0 ] && grep -q "^logcounterd [0-9]" "$TMP/out"'
"$DAEMON" >"$TMP/out" 2>&1; RC=$?
check "no --db: usage error 2" eval '[ $RC = 2 ] && grep -q "no log directory" "$TMP/out"'
"$DAEMON" --db "$TMP/x" --threads 0 >"$TMP/out" 2>&1; RC=$?
check "bad --threads: usage error 2" eval '[ $RC = 2 ] && grep -q "invalid value" "$TMP/out"'
"$DAEMON" --db "$TMP/x" --bogus >"$TMP/out" 2>&1; RC=$?
check "unknown option: usage error 2" eval '[ $RC = 2 ] && grep -q "unknown option" "$TMP/out"'
"$DAEMON" --db "$TMP/x" -l nonsense >"$TMP/out" 2>&1; RC=$?
check "bad --listen: usage error 2" eval '[ $RC = 2 ] && grep -q "invalid address" "$TMP/out"'

# ==== protocol ===============================================================

start_daemon db1 -t 4 || { echo "daemon: $passed passed, $((failed + 1)) failed"; exit 1; }
check "pidfile holds the pid" [ "$(cat "$TMP/daemon.pid" 2>/dev/null)" = "$DPID" ]
conn
ask "incr orders 1";  check "a new counter starts at 1" reply_is 1
ask "incr orders 5";  check "incr 5 answers the last of the block" reply_is 6
say "incr orders 1 noreply"
ask "incr orders 1";  check "noreply: no reply, but allocated" reply_is 8
ask "get orders";     check "get: VALUE line" reply_is "VALUE orders 0 1"
hear;                 check "get: the value" reply_is 8
hear;                 check "get: END" reply_is END
ask "get never-used"; check "get of an unused counter: just END" reply_is END
ask "gets orders";    check "gets: a cas column" reply_is "VALUE orders 0 1 8"
hear; hear;           check "gets: END" reply_is END
ask "get never orders also-never"
check "multi-get: only the used counter" reply_is "VALUE orders 0 1"
hear; hear;           check "multi-get: END" reply_is END
ask "version";        check "version: memcached's level, then ours" reply_is "$VERSION_LINE"
ask "verbosity 1";    check "verbosity: OK" reply_is OK
ask "decr orders 1";  check "decr of a serial counter refused" reply_is "CLIENT_ERROR decr is not supported on serial counters: they only move forward (decr works on tally:<name>)"
say "set orders 0 0 5"; say "12345"
hear;                 check "set refused" reply_has "CLIENT_ERROR storage commands are not supported"
ask "incr orders 1";  check "the data block was skipped: in sync" reply_is 9
say "set orders 0 0 2 noreply"; say "xx"
ask "incr orders 1";  check "set noreply: silent, in sync" reply_is 10
ask "delete orders";  check "delete refused" reply_has "CLIENT_ERROR delete is not supported"
ask "flush_all";      check "flush_all refused" reply_has "CLIENT_ERROR flush_all is not supported"
ask "touch orders 1"; check "touch refused" reply_has "CLIENT_ERROR touch"
ask "incr orders 0";  check "incr 0" reply_is "CLIENT_ERROR invalid numeric delta argument"
ask "incr orders -1"; check "incr -1" reply_is "CLIENT_ERROR invalid numeric delta argument"
ask "incr orders 1000000001"; check "incr above LC_BLOCK_MAX" reply_is "CLIENT_ERROR invalid numeric delta argument"
ask "incr orders x";  check "incr x" reply_is "CLIENT_ERROR invalid numeric delta argument"
ask "incr $(printf 'n%.0s' {1..201}) 1"; check "name too long" reply_is "CLIENT_ERROR invalid counter name"
ask $'incr bad\x01name 1'; check "control byte in a name" reply_is "CLIENT_ERROR invalid counter name"
ask "incr orders";    check "incr without a count" reply_has "CLIENT_ERROR bad command line format"
ask "get";            check "get without names" reply_has "CLIENT_ERROR bad command line format"
ask "bogus";          check "unknown command: ERROR" reply_is ERROR
ask "";               check "empty line: ERROR" reply_is ERROR
ask "stats sizes";    check "unknown stats group" reply_has "CLIENT_ERROR unknown stats group"
ask "stats items";    check "stats items: an empty END (for monitoring tools)" reply_is END
ask "incr orders 1";  check "still serving after errors" reply_is 11
say "stats"
stats_ok=1 seen=""
while hear && [ "$REPLY_LINE" != END ]; do
  [[ $REPLY_LINE =~ ^STAT\ [a-z_]+\ [^\ ]+$ ]] || stats_ok=0
  seen+=" ${REPLY_LINE#STAT }"
done
check "stats: STAT lines then END" eval '[ $stats_ok = 1 ] && reply_is END'
for s in "pid $DPID" "curr_connections 1" "cmd_incr " "ids " "allocations " \
         "restores " "backwards " "log_writes " "log_syncs " "errors " \
         "uptime " "version " "total_connections " "client_errors " \
         "cmd_tally_incr " "cmd_tally_decr " "tally_adds " "tally_flushes " \
         "tally_losses " "flusher_runs " "flusher_errors "; do
  check "stats has $s" eval '[[ "$seen" == *" $s"* ]]'
done
ask "stats settings"; check "stats settings" reply_has "STAT listen 127.0.0.1:$DPORT"
while hear && [ "$REPLY_LINE" != END ]; do :; done
say "quit";           check "quit closes the connection" closed
conn_close

# Pipelined: many lines in one write, same and different counters.
conn
printf 'incr p 1\r\nincr p 2\r\nincr q 1\r\nincr p 3\r\nget p\r\nincr p 1 noreply\r\nincr p 1\r\n' >&3
got=""
for _ in 1 2 3 4 5 6 7 8; do hear; got+="$REPLY_LINE,"; done
check "pipelined replies in order" [ "$got" = "1,3,1,6,VALUE p 0 1,6,END,8," ]
conn_close

# Pipelined first uses of many names share jobs (one lc_next_each each):
# a name twice, blocks of several ids, noreply, a name the library
# refuses and a bad count in the middle (refused by the parser), each
# answered in order.  One write, so that the daemon finds the lines
# buffered together.
long=$(printf 'n%.0s' $(seq 1 220)) # a memcached key, too long a name
b0=$(stats_value incr_batched_counters)
conn
buf=$(printf 'incr fu1 1\r\nincr fu2 5\r\nincr fu1 1\r\nincr fu3 1 noreply\r\nincr %s 1\r\nincr fu4 0\r\nincr fu5 2\r\nincr fu3 1' "$long")
printf '%s\r\n' "$buf" >&3
got=""
for _ in 1 2 3 4 5 6 7; do hear; got+="${REPLY_LINE%% *},"; done
check "pipelined first uses: each answered in order (a name twice: 1 then 2)" \
  [ "$got" = "1,5,2,CLIENT_ERROR,CLIENT_ERROR,2,2," ]
conn_close
b1=$(stats_value incr_batched_counters)
check "pipelined first uses: served by batched calls ($((b1 - b0)) requests)" \
  eval '[ $((b1 - b0)) -ge 4 ]'
# 100 new names in one write make two MANY jobs (64 + 36), queued
# together at the end of one loop iteration: a worker serves both with
# ONE lc_next_each (lcd_pool.c's run_many), each request answered with
# its own block: mmI takes I % 5 + 1 ids, and the 91st line asks mm85
# again (in the second job: the library serves it after the batch, at
# 2); the same names again (one id each) wait for their first job, then
# go on (mm90: new, at 1).
c0=$(stats_value incr_batched_calls) b0=$(stats_value incr_batched_counters)
conn
buf=$(for i in $(seq 0 99); do
    if [ $i = 90 ]; then printf 'incr mm85 1\r\n'; else
      printf 'incr mm%d %d\r\n' $i $((i % 5 + 1)); fi; done
  for i in $(seq 0 99); do printf 'incr mm%d 1\r\n' $i; done)
printf '%s\r\n' "${buf%$'\r'}" >&3
got="" want=""
for i in $(seq 0 99); do
  hear; got+="$REPLY_LINE,"
  if [ $i = 90 ]; then want+="2,"; else want+="$((i % 5 + 1)),"; fi
done
for i in $(seq 0 99); do
  hear; got+="$REPLY_LINE,"
  case $i in 85) want+="3," ;; 90) want+="1," ;; *) want+="$((i % 5 + 2))," ;; esac
done
check "two pipelined MANY jobs: each request answered with its own block" [ "$got" = "$want" ]
conn_close
c1=$(stats_value incr_batched_calls) b1=$(stats_value incr_batched_counters)
check "two pipelined MANY jobs: one lc_next_each for their 100 requests ($((c1 - c0)) calls, $((b1 - b0)) requests)" \
  eval '[ $((c1 - c0)) -eq 1 ] && [ $((b1 - b0)) -eq 100 ]'
# A run of 300 new names, noreply but the last: one job per 64.
conn
for i in $(seq 1 300); do printf 'incr run%d 1 noreply\r\n' "$i"; done >&3
say "incr run300 1"; hear
check "300 pipelined new names, noreply: the last goes on at 2" reply_is 2
say "get run1 run150 run299"; got=""
for _ in 1 2 3 4 5 6 7; do hear; got+="$REPLY_LINE,"; done
check "300 pipelined new names: each at 1" \
  [ "$got" = "VALUE run1 0 1,1,VALUE run150 0 1,1,VALUE run299 0 1,1,END," ]
conn_close

# ==== other clients ==========================================================

"$CLIENT" libmc "$DPORT" libmc >"$TMP/out" 2>&1
check "libmemcached client: increment, increment_by_key, get, refusals" \
  grep -q "^ok libmemcached" "$TMP/out"
grep -v '^ok' "$TMP/out" | sed 's/^/     /'
if command -v memcstat >/dev/null; then
  memcstat --servers="127.0.0.1:$DPORT" >"$TMP/out" 2>&1; RC=$?
  check "memcstat" eval '[ $RC = 0 ] && grep -q "pid: $DPID" "$TMP/out"'
  memcping --servers="127.0.0.1:$DPORT" >"$TMP/out" 2>&1; RC=$?
  check "memcping" [ $RC = 0 ]
  memccat --servers="127.0.0.1:$DPORT" orders >"$TMP/out" 2>&1; RC=$?
  check "memccat reads a counter" eval '[ $RC = 0 ] && [ "$(cat "$TMP/out")" = 11 ]'
else
  bad "libmemcached-tools" "memcstat not installed"
fi

# ==== tallies: the protocol ==================================================

conn
ask "incr tally:views 5";  check "tally: incr answers the total" reply_is 5
ask "decr tally:views 2";  check "tally: decr answers the total" reply_is 3
ask "get tally:views";     check "tally: get, VALUE line" reply_is "VALUE tally:views 0 1"
hear;                      check "tally: get, the total" reply_is 3
hear;                      check "tally: get, END" reply_is END
ask "decr tally:views 10"; check "tally: below zero, decr answers 0 (floored)" reply_is 0
ask "get tally:views";     hear
check "tally: get gives the signed total" reply_is -7
hear
say "incr tally:views 4 noreply"
say "decr tally:views 1 noreply"
ask "incr tally:views 1";  check "tally: noreply changes counted, silently" reply_is 0
ask "get tally:views";     hear; check "tally: -7 + 4 - 1 + 1" reply_is -3
hear
ask "get tally:never-changed"; check "tally: never changed reads VALUE 0" reply_is "VALUE tally:never-changed 0 1"
hear; check "... 0" reply_is 0
hear
ask "gets orders tally:views"; check "get mixes a counter and a tally" reply_is "VALUE orders 0 2 11"
hear; hear; check "... then the tally, cas 0 for a negative total" reply_is "VALUE tally:views 0 2 0"
hear; check "... -3" reply_is -3
hear; check "... END" reply_is END
ask "incr tally:views x";  check "tally: non-numeric delta" reply_is "CLIENT_ERROR invalid numeric delta argument (a tally takes 1..9223372036854775807)"
ask "decr tally:views 0";  check "tally: zero delta" reply_has "CLIENT_ERROR invalid numeric delta argument"
ask "incr tally:views -5"; check "tally: signed delta" reply_has "CLIENT_ERROR invalid numeric delta argument"
ask "incr tally:views 9223372036854775808"; check "tally: delta above 2^63-1" reply_has "CLIENT_ERROR invalid numeric delta argument"
ask "incr tally: 1";       check "tally: empty name" reply_has "CLIENT_ERROR invalid tally name"
ask "decr tally:views";    check "tally: decr without a delta" reply_has "CLIENT_ERROR bad command line format: usage: decr tally:<name>"
say "incr tally:views x noreply"
ask "get tally:views";     check "tally: a bad noreply change is silent, nothing applied" reply_is "VALUE tally:views 0 2"
hear; check "... still -3" reply_is -3
hear
ask "incr tally:big 9223372036854775807"; check "tally: up to 2^63-1" reply_is 9223372036854775807
ask "incr tally:big 1";    check "tally: past 2^63-1: CLIENT_ERROR ETALLYRANGE" reply_has "CLIENT_ERROR ETALLYRANGE tally change would take the total"
say "incr tally:big 1 noreply"
ask "get tally:big";       check "tally: ETALLYRANGE with noreply is silent" reply_is "VALUE tally:big 0 19"
hear; check "tally: nothing of the refused changes applied" reply_is 9223372036854775807
hear
ask "decr tally:big 9223372036854775807"; check "tally: back down to 0" reply_is 0
ask "stats tally views";   check "stats tally: name" reply_is "STAT name views"
hear; [[ $REPLY_LINE =~ ^STAT\ total\ (-?[0-9]+)$ ]] && st_total=${BASH_REMATCH[1]}
hear; [[ $REPLY_LINE =~ ^STAT\ pending\ (-?[0-9]+)$ ]] && st_pending=${BASH_REMATCH[1]}
hear; check "stats tally: losses 0" reply_is "STAT losses 0"
hear; check "stats tally: lost 0" reply_is "STAT lost 0"
hear; check "stats tally: lost_increments 0" reply_is "STAT lost_increments 0"
hear; check "stats tally: lost_decrements 0" reply_is "STAT lost_decrements 0"
hear; check "stats tally: END" reply_is END
check "stats tally: total + pending = -3" eval '[ $(( ${st_total:-99} + ${st_pending:-99} )) = -3 ]'
conn_close
# Pipelined changes of one tally share one library call (a run); each is
# answered with the total after it, in order.
conn
for i in $(seq 50); do printf 'incr tally:seq 2\r\n'; done >&3
got="" want=""
for i in $(seq 50); do hear; got+="$REPLY_LINE,"; want+="$((2 * i)),"; done
check "tally: 50 pipelined incr answer 2, 4, ... 100 in order" [ "$got" = "$want" ]
printf 'incr tally:seq 5\r\nincr tally:seq x\r\ndecr tally:seq 2\r\ndecr tally:seq 1 noreply\r\nincr tally:seq 1\r\n' >&3
got=""; for i in 1 2 3 4; do hear; got+="$REPLY_LINE,"; done
check "tally: a bad line inside a pipelined run is refused alone" \
  [ "$got" = "105,CLIENT_ERROR invalid numeric delta argument (a tally takes 1..9223372036854775807),103,103," ]
# A run whose sum would overflow: its changes are made one by one, so only
# the change that overflows on its own is refused.
ask "incr tally:edge 9223372036854775800"
printf 'incr tally:edge 5\r\nincr tally:edge 5\r\ndecr tally:edge 1\r\n' >&3
got=""; for i in 1 2 3; do hear; got+="$(cut -d' ' -f1-2 <<<"$REPLY_LINE"),"; done
check "tally: an overflowing run: only the overflowing change refused" \
  [ "$got" = "9223372036854775805,CLIENT_ERROR ETALLYRANGE,9223372036854775804," ]
# Refused changes of one job (one write: env printf): a reply's detail
# is its own change's (a job keeps one detail; its other refusals are
# answered without).
ask "incr tally:det 9223372036854775806"
env printf 'incr tally:det 2\r\ndecr tally:det 1\r\nincr tally:det 3\r\n' >&3
got=""; for i in 1 2 3; do hear; got+="$(sed 's/^CLIENT_ERROR ETALLYRANGE .*, \(delta [0-9]*\)$/\1/; s/^CLIENT_ERROR ETALLYRANGE [^:]*$/no detail/' <<<"$REPLY_LINE"),"; done
check "tally: two refused changes in one job, no detail of another's" \
  eval '[ "$got" = "delta 2,9223372036854775805,no detail," ] || [ "$got" = "delta 2,9223372036854775805,delta 3," ]'
conn_close
check "stats: tally_merged counts the changes that shared a call" eval '[ "$(stats_value tally_merged)" -gt 0 ]'
"$CLIENT" libmc-tally "$DPORT" stock >"$TMP/out" 2>&1
check "libmemcached client: increment/decrement/get on tally:stock" grep -q "^ok libmemcached tally" "$TMP/out"
grep -v '^ok' "$TMP/out" | sed 's/^/     /'
check "the flusher applies the changes (--flush-interval 1, the default)" tally_applied views -3

# ==== concurrency ============================================================

"$CLIENT" load -p "$DPORT" -k conc -c 4 -n 500 -o "$TMP/ids" >"$TMP/out" 2>&1
cat "$TMP/out"
check "4 clients x 500 incr: ok" grep -q "^ok" "$TMP/out"
check "4 x 500: 2000 distinct ids" eval '[ "$(sort -n "$TMP/ids" | uniq | wc -l)" = 2000 ]'
check "4 x 500: contiguous 1..2000" eval '[ "$(sort -n "$TMP/ids" | head -n 1)" = 1 ] && [ "$(sort -n "$TMP/ids" | tail -n 1)" = 2000 ]'
"$CLIENT" load -p "$DPORT" -k blocks -c 4 -n 300 -b 7 -d 8 >"$TMP/out" 2>&1
cat "$TMP/out"
check "4 clients x 300 blocks of 7, pipelined 8 deep: disjoint" grep -q "^ok .*overlaps=0" "$TMP/out"
check "the blocks cover 1..8400 exactly" grep -q "min=7 max=8400" "$TMP/out"

# The client's checks can fail: a fake server (tests/daemon/fake_incr.py)
# answering distinct decreasing values, or increasing per connection but
# overlapping across them, must make load FAIL, with -n and with -t.
FAKE_OUT=$TMP/fake.port
python3 tests/daemon/fake_incr.py down >"$FAKE_OUT" 2>"$TMP/fake.err" &
FPID=$!
for _ in $(seq 100); do [ -s "$FAKE_OUT" ] && break; sleep 0.05; done
FPORT=$(head -n 1 "$FAKE_OUT")
"$CLIENT" load -p "${FPORT:-1}" -k f -c 4 -n 500 >"$TMP/out" 2>&1
check "load against decreasing replies: FAIL (not increasing)" grep -q "^FAIL .*replies not increasing" "$TMP/out"
"$CLIENT" load -p "${FPORT:-1}" -k f -c 4 -t 1 -e >"$TMP/out" 2>&1
check "load -t against decreasing replies: FAIL too" grep -q "^FAIL .*replies not increasing" "$TMP/out"
kill "$FPID" 2>/dev/null; wait "$FPID" 2>/dev/null
for mode in overlap up; do
  : >"$FAKE_OUT"
  python3 tests/daemon/fake_incr.py $mode >"$FAKE_OUT" 2>"$TMP/fake.err" &
  FPID=$!
  for _ in $(seq 100); do [ -s "$FAKE_OUT" ] && break; sleep 0.05; done
  FPORT=$(head -n 1 "$FAKE_OUT")
  "$CLIENT" load -p "${FPORT:-1}" -k f -c 4 -n 200 -b 3 >"$TMP/out.$mode" 2>&1
  kill "$FPID" 2>/dev/null; wait "$FPID" 2>/dev/null
done
check "load against overlapping connections: FAIL with overlaps" eval 'grep -q "^FAIL .*overlaps=[1-9]" "$TMP/out.overlap"'
check "load against a correct fake: ok (the fake itself can pass)" grep -q "^ok .*overlaps=0" "$TMP/out.up"

# ==== bad input and limits ===================================================

conn
printf '%*s\r\n' 3000 '' | tr ' ' a >&3
hear; check "a 3000-byte line: CLIENT_ERROR line too long" reply_is "CLIENT_ERROR line too long"
check "... and closed" closed
conn_close
conn
head -c 1048576 /dev/zero | tr '\0' a >&3 2>/dev/null
hear; check "a 1 MiB line: line too long" reply_is "CLIENT_ERROR line too long"
conn_close
conn
# a binary request with an unknown opcode (tests/suite_binary.sh has the rest)
printf '\x80\x42\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' >&3
check "binary protocol, unknown opcode: closed" closed
conn_close
check "binary protocol, unknown opcode: logged" grep -q "bad binary request (opcode 0x42)" "$TMP/daemon.log"
conn
for _ in $(seq 16); do say "garbage"; done
n=0; while hear && reply_is ERROR; do n=$((n + 1)); done
check "16 errors in a row: 16 ERROR, then closed" eval '[ $n = 16 ] && [ $RC = 1 ]'
conn_close
conn
printf 'incr half' >&3
conn_close
check "a client gone mid-line: still serving" alive
conn_close
conn; for _ in $(seq 15); do ask junk; done; ask "incr orders 1"
check "15 errors then a good command: kept" reply_is 12
conn_close

# 1,000 idle connections while others work.
"$CLIENT" hold -p "$DPORT" -c 1000 -t 3 >"$TMP/hold" 2>&1 &
holder=$!
sleep 1
"$CLIENT" load -p "$DPORT" -k busy -c 4 -n 200 >"$TMP/out" 2>&1
check "1000 idle connections: others still served" grep -q "^ok" "$TMP/out"
wait $holder
check "1000 idle connections: all still answer" grep -q "^ok held=1000 answered=1000" "$TMP/hold"

# The daemon holds the log.
"$CLI" --memcached "$MC" --db "$TMP/db1" --wait 0 dump orders >"$TMP/out" 2>&1; RC=$?
check "logcounter dump while the daemon runs: refused, names the daemon" \
  eval '[ $RC = 1 ] && grep -q "logcounterd (pid $DPID)" "$TMP/out"'

# ==== SIGTERM drain ==========================================================

# 20,000 requests are sent without reading; SIGTERM comes while the daemon
# is still answering them.  Every request it read is answered, then EOF.
conn
for i in $(seq 20000); do printf 'incr drain 1\r\n'; done >&3 &
writer=$!
sleep 0.3
kill -TERM "$DPID"
n=0 last=0 seq_ok=1
while hear; do
  n=$((n + 1))
  [ "$REPLY_LINE" = "$n" ] || seq_ok=0
  last=$REPLY_LINE
done
conn_close
kill "$writer" 2>/dev/null; wait "$writer" 2>/dev/null
wait_daemon
echo "     drain: $n replies, then EOF"
check "SIGTERM: exit status 0" [ $RC = 0 ]
check "SIGTERM: replies 1..n in order, then EOF" eval '[ $seq_ok = 1 ] && [ $n -gt 0 ]'
check "SIGTERM: pidfile removed" [ ! -e "$TMP/daemon.pid" ]
"$CLI" --memcached "$MC" --db "$TMP/db1" verify drain >"$TMP/out" 2>&1
highest=$(sed -n 's/^highest: *//p' "$TMP/out")
check "SIGTERM: every answered id is in the log" eval '[ "${highest:-0}" -ge "$last" ]'
check "SIGTERM: the log is consistent" grep -q "status: *ok" "$TMP/out"

# ==== SIGTERM while starting =================================================

# A cluster node whose etcd is away waits in its join; a SIGTERM then ends
# the start with a clean exit (0), not a death by the signal (143).
EP=$(free_port) RP=$(free_port) SP=$(free_port)
"$DAEMON" --db "$TMP/dbstart" --memcached "$MC" -l "127.0.0.1:$SP" \
  --etcd "http://127.0.0.1:$EP" --cluster early --node n1 \
  --replication-listen "127.0.0.1:$RP" >"$TMP/early.log" 2>&1 &
EPID=$!
for i in $(seq 100); do
  grep -q "cannot take a lease" "$TMP/early.log" && break; sleep 0.1
done
kill -TERM "$EPID"
wait "$EPID"; RC=$?
check "SIGTERM while a cluster node waits for etcd: exit status 0" [ $RC = 0 ]
check "SIGTERM while starting: the log says so" \
  grep -q "SIGTERM while starting: not starting; exiting" "$TMP/early.log"

# ==== SIGTERM, memcached wiped, restart: exactly last + 1 ===================

start_daemon db1
conn
for k in 1 2 3 4 5 6; do ask "incr clean$k $k"; done
ask "incr clean6 1"; clean_last=$REPLY_LINE
conn_close
stop_daemon
check "clean stop: exit status 0" [ $RC = 0 ]
check "clean stop: the close logged with its count and time" \
  grep -q "log closed; exiting ([0-9]* counters closed in [0-9.]* s)" "$TMP/daemon.log"
printf 'flush_all\r\n' | (exec 5<>"/dev/tcp/127.0.0.1/$MPORT"; cat >&5; IFS= read -r -t 5 l <&5; echo "$l") >"$TMP/out"
check "memcached flushed" grep -q OK "$TMP/out"
start_daemon db1
conn; clean_next=""
for k in 1 2 3 4 5 6; do ask "incr clean$k 1"; clean_next+="$REPLY_LINE "; done
conn_close
check "after SIGTERM + flush + restart: each goes on at exactly last + 1 (2 3 4 5 6 $((clean_last + 1)): $clean_next)" \
  [ "$clean_next" = "2 3 4 5 6 $((clean_last + 1)) " ]
stop_daemon

# ==== SIGKILL, memcached wiped, restart ======================================

start_daemon db1
conn; ask "incr killed 100"; before=$REPLY_LINE; conn_close
stop_daemon KILL
printf 'flush_all\r\n' | (exec 5<>"/dev/tcp/127.0.0.1/$MPORT"; cat >&5; IFS= read -r -t 5 l <&5; echo "$l") >"$TMP/out"
check "memcached flushed" grep -q OK "$TMP/out"
start_daemon db1
conn; ask "incr killed 1"; after=$REPLY_LINE; conn_close
check "after SIGKILL + flush + restart: $after > $before" eval '[ "$after" -gt "$before" ] 2>/dev/null'

# The daemon SIGKILLed during a run: no duplicate across the restart.
# Not divided by SCALE: the run must outlast the kill 0.3 s in (80,000
# requests once took 0.3 s: 320,000 take over a second).
n_conn=8 n_req=40000
"$CLIENT" load -p "$DPORT" -k crash -c $n_conn -n "$n_req" -r -o "$TMP/crash" >"$TMP/out" 2>&1 &
loader=$!
sleep 0.3
stop_daemon KILL
SAME_PORT=1 start_daemon db1 || true
wait $loader
cat "$TMP/out"
check "daemon killed mid-run: each client's ids increase, none repeats" grep -q "^ok .*overlaps=0" "$TMP/out"
check "daemon killed mid-run: the clients reconnected" eval '! grep -q "reconnects=0 " "$TMP/out"'

# ==== memcached wiped and restarted under load (64 connections) ============

# A second memcached, on a port of our choosing (it is restarted on it).
user=""; [ "$(id -u)" = 0 ] && user="-u root"
mc2() {  # starts memcached #2 on mc2port; 0 once it accepts connections
  local i=0
  # shellcheck disable=SC2086
  memcached -l 127.0.0.1 -p "$mc2port" -U 0 -M -m 64 $user -d -P "$TMP/mc2.pid"
  while [ $i -lt 100 ]; do
    (exec 5<>"/dev/tcp/127.0.0.1/$mc2port") 2>/dev/null && return 0
    sleep 0.1; i=$((i + 1))
  done
  return 1
}
mc2_new() {  # picks mc2port and starts memcached #2 there
  local t
  for t in 1 2 3 4 5; do
    mc2port=$(free_port) && mc2 && return 0
  done
  return 1
}
mc2_kill9() {  # SIGKILL, and wait until it is gone (its port free)
  local pid i=0
  pid=$(cat "$TMP/mc2.pid" 2>/dev/null) || return 0
  kill -9 "$pid" 2>/dev/null
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
}
stop_daemon TERM
if mc2_new; then
  MC_SAVED=$MC MC="--SERVER=127.0.0.1:$mc2port"
  start_daemon db2 --timeout 200
  conns=64 per=$((5000 / SCALE))
  "$CLIENT" load -p "$DPORT" -k wipe -c $conns -n "$per" -e -o "$TMP/wipe" >"$TMP/out" 2>&1 &
  loader=$!
  for round in 1 2 3; do
    sleep 0.7
    printf 'flush_all\r\n' | (exec 5<>"/dev/tcp/127.0.0.1/$mc2port"; cat >&5; IFS= read -r -t 5 l <&5) 2>/dev/null
    sleep 0.7
    mc2_kill9
    mc2 || bad "memcached restarted (round $round)"
  done
  wait $loader
  cat "$TMP/out"
  check "64 x $per incr, memcached flushed and SIGKILLed 3 times: no duplicate, each connection increasing" \
    grep -q "^ok .*overlaps=0" "$TMP/out"
  # After the last restart the daemon serves again (the library waits out
  # libmemcached's retry timeout first).
  conn; i=0
  while ask "incr wipe 1" && [[ ! $REPLY_LINE =~ ^[0-9]+$ ]] && [ $i -lt 50 ]; do
    sleep 0.2; i=$((i + 1)); done
  conn_close
  wmax=$(tail -n 1 "$TMP/wipe")
  check "memcached back: serving again, above every earlier id" \
    eval '[[ $REPLY_LINE =~ ^[0-9]+$ ]] && [ "$REPLY_LINE" -gt "${wmax:-0}" ]'

  stop_daemon TERM
  check "then SIGTERM: exit 0" [ $RC = 0 ]
  kill "$(cat "$TMP/mc2.pid")" 2>/dev/null; rm -f "$TMP/mc2.pid"
  MC=$MC_SAVED
else
  bad "second memcached" "cannot start one"
fi

# ==== --no-coalesce ==========================================================

# Every request its own memcached incr: still exactly 1..800, nothing merged.
start_daemon db4 --no-coalesce
"$CLIENT" load -p "$DPORT" -k nc -c 4 -n 200 -o "$TMP/nc" >"$TMP/out" 2>&1
cat "$TMP/out"
conn; say "stats"; nc_stats=""
while hear && [ "$REPLY_LINE" != END ]; do nc_stats+=" ${REPLY_LINE#STAT } "; done
conn_close
conn
for i in $(seq 10); do printf 'incr tally:nc 1\r\n'; done >&3
got=""; for i in $(seq 10); do hear; got+="$REPLY_LINE,"; done
conn_close
check "--no-coalesce: 10 pipelined tally changes answer 1..10, none merged" \
  eval '[ "$got" = "1,2,3,4,5,6,7,8,9,10," ] && [ "$(stats_value tally_merged)" = 0 ] && [ "$(stats_value tally_adds)" = 10 ]'
nc_alloc=$(sed -n 's/.* allocations \([0-9]*\) .*/\1/p' <<<"$nc_stats")
nc_incr=$(sed -n 's/.* increments \([0-9]*\) .*/\1/p' <<<"$nc_stats")
echo "     --no-coalesce: ${nc_alloc:-?} allocations, ${nc_incr:-?} memcached increments"
# (increments: at least one per allocation; the counter's creation adds one)
check "--no-coalesce: 4 clients x 200 incr give exactly 1..800, incr_merged 0, an increment per request" \
  eval 'grep -q "^ok" "$TMP/out" && [ "$(sort -n "$TMP/nc" | uniq | wc -l)" = 800 ] &&
        [ "$(sort -n "$TMP/nc" | head -n 1)" = 1 ] && [ "$(sort -n "$TMP/nc" | tail -n 1)" = 800 ] &&
        [[ "$nc_stats" == *" incr_merged 0 "* ]] && [ "${nc_incr:-0}" -ge "${nc_alloc:-1}" ]'
stop_daemon TERM

# ==== tallies: exact sums, the flusher, SIGTERM, a memcached restart =========

# Many connections mixing incr and decr (a quarter noreply) over 4 tallies
# while the flusher runs every second: each durable total ends exactly at
# the sum of the changes sent (computed by the client).
start_daemon db5 --flush-interval 1
tconns=32 tper=$((2000 / SCALE))
"$CLIENT" tally -p "$DPORT" -k mix -c $tconns -n "$tper" -K 4 -d 4 -s $$ >"$TMP/out" 2>&1
cat "$TMP/out"
check "$tconns connections x $tper mixed tally changes: every reply a number" grep -q "^ok" "$TMP/out"
all_exact=1
for k in 0 1 2 3; do
  want=$(sed -n "s/^sum mix$k //p" "$TMP/out")
  if ! tally_applied "mix$k" "${want:-none}"; then
    all_exact=0
    echo "     mix$k: total '$T_TOTAL' pending '$T_PENDING', expected ${want:-?}"
  fi
done
check "the flusher applies every change: each total = the computed sum, nothing pending" [ $all_exact = 1 ]
runs=$(stats_value flusher_runs) written=$(stats_value tally_flushes)
check "stats: flusher_runs and tally_flushes count" eval '[ "${runs:-0}" -ge 1 ] && [ "${written:-0}" -ge 4 ]'
t_incr=$(stats_value cmd_tally_incr) t_decr=$(stats_value cmd_tally_decr)
t_adds=$(stats_value tally_adds) t_merged=$(stats_value tally_merged)
echo "     $((tconns * tper)) changes: ${t_adds:-?} library calls, ${t_merged:-?} merged into another's"
check "stats: cmd_tally_incr + cmd_tally_decr = the changes sent = tally_adds + tally_merged" \
  eval '[ $(( ${t_incr:-0} + ${t_decr:-0} )) = $((tconns * tper)) ] && [ $(( ${t_adds:-0} + ${t_merged:-0} )) = $((tconns * tper)) ]'
# More changes right before SIGTERM: the final flush applies them.
"$CLIENT" tally -p "$DPORT" -k mix -c 8 -n "$((500 / SCALE))" -K 4 -d 4 -s $(($$ + 1)) >"$TMP/out2" 2>&1
stop_daemon TERM
check "tallies: SIGTERM exit 0" [ $RC = 0 ]
all_exact=1
for k in 0 1 2 3; do
  want=$(( $(sed -n "s/^sum mix$k //p" "$TMP/out") + $(sed -n "s/^sum mix$k //p" "$TMP/out2") ))
  cli_tally db5 "mix$k"
  if [ "$C_TOTAL" != "$want" ] || [ "$C_PENDING" != 0 ]; then
    all_exact=0
    echo "     mix$k: log total '$C_TOTAL' pending '$C_PENDING', expected $want"
  fi
done
check "after SIGTERM the log holds exactly both runs' sums (logcounter tally get)" [ $all_exact = 1 ]

# --flush-interval 0: nothing is applied while running (the startup sweep
# is the flusher's only run), everything at SIGTERM.
start_daemon db6 --flush-interval 0
check "--flush-interval 0: the startup sweep ran" flusher_ran 1
conn
ask "incr tally:later 40"; ask "decr tally:later 15"; say "incr tally:later 2 noreply"
ask "get tally:later"; hear; later=$REPLY_LINE; hear
conn_close
tally_stats later
check "--flush-interval 0: total 0 in the log, 27 pending" eval '[ "$later" = 27 ] && [ "$T_TOTAL" = 0 ] && [ "$T_PENDING" = 27 ]'
check "--flush-interval 0: the flusher ran once only" [ "$(stats_value flusher_runs)" = 1 ]
stop_daemon TERM
check "--flush-interval 0: SIGTERM exit 0, final flush logged" eval '[ $RC = 0 ] && grep "final tally flush" "$TMP/daemon.log" | tail -n 1 | grep -q ": 1 tallies written"'
cli_tally db6 later
check "--flush-interval 0: SIGTERM applied the 27" eval '[ "$C_TOTAL" = 27 ] && [ "$C_PENDING" = 0 ] && [ "$C_LOSSES" = 0 ]'

# A tally that the daemon changed but never flushed (SIGKILL): the next
# start's sweep applies it from memcached.
start_daemon db6 --flush-interval 0
check "restart: the startup sweep ran" flusher_ran 1
conn; ask "incr tally:later 3"; conn_close
check "restart: +3 answered 30" reply_is 30
stop_daemon KILL
start_daemon db6 --flush-interval 0
check "after SIGKILL: the startup sweep applied the pending +3" tally_applied later 30
stop_daemon TERM

# memcached restarted while changes are pending: the loss is detected,
# reported (stats, stats tally, logcounter tally get), the durable total
# stays below the true sum, and later changes count normally.
if mc2_new; then
  MC_SAVED=$MC MC="--SERVER=127.0.0.1:$mc2port"
  start_daemon db7 --flush-interval 0 --timeout 200
  flusher_ran 1 >/dev/null
  conn; ask "incr tally:lost 10"; conn_close
  stop_daemon TERM
  cli_tally db7 lost
  check "loss: 10 applied at SIGTERM" [ "$C_TOTAL" = 10 ]
  start_daemon db7 --flush-interval 0 --timeout 200
  flusher_ran 1 >/dev/null
  conn; ask "incr tally:lost 7"; conn_close
  check "loss: +7 pending (answered 17)" reply_is 17
  mc2_kill9
  mc2 || bad "memcached restarted"
  # Wait out libmemcached's retry timeout on a serial counter first.
  conn; i=0
  while ask "incr wait-for-mc 1" && [[ ! $REPLY_LINE =~ ^[0-9]+$ ]] && [ $i -lt 50 ]; do
    sleep 0.2; i=$((i + 1)); done
  ask "incr tally:lost 5"; conn_close
  check "loss: after the restart +5 counts from the durable 10: answered 15" reply_is 15
  check "loss: stats tally_losses 1" [ "$(stats_value tally_losses)" = 1 ]
  tally_stats lost
  check "loss: stats tally shows total 10, pending 5, losses 1" \
    eval '[ "$T_TOTAL" = 10 ] && [ "$T_PENDING" = 5 ] && [ "$T_LOSSES" = 1 ]'
  check "loss: stats tally shows the amount lost: the pending +7 (${T_LOST:-none})" \
    [ "${T_LOST:-x}" = 7 ]
  check "loss: stats tally_lost_amount 7" [ "$(stats_value tally_lost_amount)" = 7 ]
  stop_daemon TERM
  cli_tally db7 lost
  check "loss: the log holds 15 (<= the true 22), losses 1" \
    eval '[ "$C_TOTAL" = 15 ] && [ "$C_LOSSES" = 1 ] && [ "$C_TOTAL" -le 22 ]'
  check "loss: logcounter tally get: lost 7, and 15 + 7 is the true 22" \
    eval '[ "${C_LOST:-x}" = 7 ] && [ $((C_TOTAL + C_LOST)) = 22 ]'
  kill "$(cat "$TMP/mc2.pid")" 2>/dev/null; rm -f "$TMP/mc2.pid"
  MC=$MC_SAVED
else
  bad "second memcached (tally loss)" "cannot start one"
fi

# ==== timeouts, connection limit, unix socket ================================

start_daemon db3 --idle-timeout 1 --line-timeout 1 -c 3 -s "$TMP/lcd.sock"
conn
check "idle timeout: closed" closed
conn_close
conn; printf 'incr unfinished' >&3
check "unfinished line: closed after the line timeout" closed
conn_close
exec 6<>"/dev/tcp/127.0.0.1/$DPORT" 7<>"/dev/tcp/127.0.0.1/$DPORT" 8<>"/dev/tcp/127.0.0.1/$DPORT"
sleep 0.2
conn; hear
check "--max-connections reached: SERVER_ERROR, closed" eval 'reply_is "SERVER_ERROR too many open connections" && closed'
conn_close
exec 6>&- 7>&- 8>&-
sleep 0.3
check "below the limit again: served" alive
conn_close
check "unix socket: mode 0660" [ "$(stat -c %a "$TMP/lcd.sock" 2>/dev/null)" = 660 ]
if command -v memcstat >/dev/null; then
  memcstat --servers="$TMP/lcd.sock" >"$TMP/out" 2>&1; RC=$?
  check "unix socket: memcstat answers" eval '[ $RC = 0 ] && grep -q "pid: $DPID" "$TMP/out"'
fi
stop_daemon INT
check "SIGINT: exit 0" [ $RC = 0 ]
check "socket file removed" [ ! -e "$TMP/lcd.sock" ]

# --max-connections-per-listener: one port full leaves room on the others
# (issue 38): two --listen ports, -c 8, 3 per listener; 3 idle
# connections fill the first port, a 4th there is refused, the second
# port still serves.
P2=$(free_port)
DPORT=$(free_port)
SAME_PORT=1 start_daemon db3 -c 8 --max-connections-per-listener 3 \
  -l "127.0.0.1:$DPORT,127.0.0.1:$P2"
# the settings through the second port; the first holds nothing but the
# idle connections below once the daemon has seen the start's probe end
# (curr_connections 1: this one)
plm="" cur=""
for _ in $(seq 50); do
  exec 3<>"/dev/tcp/127.0.0.1/$P2"; say "stats settings"; say "stats"
  n=0
  while [ $n -lt 2 ] && hear; do
    [ "$REPLY_LINE" = END ] && n=$((n + 1))
    [[ $REPLY_LINE == "STAT max_connections_per_listener "* ]] && plm=${REPLY_LINE##* }
    [[ $REPLY_LINE == "STAT curr_connections "* ]] && cur=${REPLY_LINE##* }
  done
  conn_close
  [ "$cur" = 1 ] && break
  sleep 0.1
done
check "stats settings: max_connections_per_listener 3 ($plm)" [ "$plm" = 3 ]
exec 6<>"/dev/tcp/127.0.0.1/$DPORT" 7<>"/dev/tcp/127.0.0.1/$DPORT" 8<>"/dev/tcp/127.0.0.1/$DPORT"
sleep 0.2
conn; hear
check "a listener's bound reached: SERVER_ERROR, closed" eval 'reply_is "SERVER_ERROR too many open connections" && closed'
conn_close
exec 3<>"/dev/tcp/127.0.0.1/$P2"; say "incr per-listener 1"; hear
check "  the other listener still serves" reply_is 1
conn_close
exec 6>&- 7>&- 8>&-
stop_daemon INT
check "SIGINT: exit 0" [ $RC = 0 ]

# A log directory in use: a second daemon refuses to start.
start_daemon db3
"$DAEMON" --db "$TMP/db3" --memcached "$MC" -l none -s "$TMP/second.sock" >"$TMP/out" 2>&1; RC=$?
check "second daemon on the same log: exit 1, names the holder" \
  eval '[ $RC = 1 ] && grep -q "logcounterd (pid $DPID)" "$TMP/out"'
stop_daemon TERM

if grep -qE "(ERROR|WARNING): [A-Za-z]*Sanitizer|Sanitizer:DEADLYSIGNAL|runtime error:" "$TMP/daemon.log"; then
  bad "sanitizer reports in the daemon's log" "see below"
  grep -A 30 -E "Sanitizer|runtime error" "$TMP/daemon.log" | head -n 80
else
  ok "no sanitizer report in the daemon's log"
fi

echo "daemon: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
