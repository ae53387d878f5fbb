#!/bin/bash
# suite_loops.sh - logcounterd's event-loop threads, end to end:
#   - --threads / --workers: bounds, usage errors, "stats settings";
#   - many connections spread over 3 loops on one counter (--prefetch off,
#     then the default, auto): no id twice, each connection's answers
#     increase, and the loops answered the warm counter themselves
#     (jobs_inline) while its first use went to a worker (jobs_pooled);
#   - a burst of new names over many connections: each answered once,
#     with 1 (the workers' path);
#   - memcached stopped (SIGSTOP) under load: the stalled call is counted
#     (loop_stall_max_us, loop_backoffs), the loop hands its work to the
#     workers meanwhile, and once memcached runs again the answers go on
#     above everything handed out;
#   - SIGTERM while every loop is busy: exit 0 and the log verifies.
# Uses $BUILD/logcounterd, $BUILD/logcounter, $BUILD/tests/lcd_client and
# a private memcached on free 127.0.0.1 ports.  LC_TEST_SCALE=N divides the
# counts.  Ends with "loops: N passed, M failed".
# shellcheck disable=SC2016,SC2034
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd CLI=$B/logcounter CLIENT=$B/tests/lcd_client
SCALE=${LC_TEST_SCALE:-1}
[ "$SCALE" -ge 1 ] 2>/dev/null || SCALE=1

SUITE=loops
. tests/check.sh

for bin in "$DAEMON" "$CLI" "$CLIENT"; do
  [ -x "$bin" ] || { echo "suite_loops: $bin not built" >&2; failed=1; finish; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_loops.XXXXXX") || exit 1
DPID=""
cleanup() {
  [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
  [ -f "$TMP/memcached.pid" ] && kill -CONT "$(cat "$TMP/memcached.pid")" 2>/dev/null
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MCPORT=$(tests/memcached.sh start "$TMP") || { echo "suite_loops: no memcached" >&2; failed=1; finish; }
MC="--SERVER=127.0.0.1:$MCPORT"
. tests/daemon.sh

# verify NAME...: logcounter verify passes on each (the daemon stopped).
verify() {
  local n
  for n in "$@"; do
    "$CLI" --memcached "$MC" --db "$TMP/$DB" verify "$n" >"$TMP/verify.out" 2>&1 ||
      { cat "$TMP/verify.out"; return 1; }
  done
}
# load ARGS...: lcd_client load against the daemon; its line is printed.
load() {
  "$CLIENT" load -p "$DPORT" "$@" >"$TMP/load.out" 2>&1
  local rc=$?
  cat "$TMP/load.out"
  return $rc
}

# ---- options ---------------------------------------------------------------
for bad in "--threads 0" "--threads 65" "--workers 0" "--workers 1025" "--threads x"; do
  # shellcheck disable=SC2086
  "$DAEMON" --db "$TMP/bad" $bad >"$TMP/out" 2>&1; rc=$?
  check "$bad: usage error 2, says why" eval '[ $rc = 2 ] && grep -q "invalid value" "$TMP/out"'
done
"$DAEMON" --help >"$TMP/help" 2>&1
check "--help names --threads and --workers" eval 'grep -q -- "--threads N" "$TMP/help" && grep -q -- "--workers N" "$TMP/help"'

# ---- three loops, one counter ----------------------------------------------
N=$((20000 / SCALE))
for mode in off prefetch; do # the per-request path, then the default
  DB=$mode
  args=(--threads 3 --workers 2)
  [ "$mode" = off ] && args+=(--prefetch off)
  start_daemon "$DB" "${args[@]}" || { failed=$((failed + 1)); finish; }
  conn; ask "stats settings"; s=""
  while [ "$REPLY_LINE" != END ] && [ $RC -eq 0 ]; do s+="$REPLY_LINE;"; hear; done
  conn_close
  check "$mode: stats settings shows threads 3, workers 2" \
    eval '[[ $s == *"STAT threads 3;"* && $s == *"STAT workers 2;"* ]]'
  check "$mode: 12 connections over 3 loops, one counter: unique, increasing" \
    load -k "one-$mode" -c 12 -n "$N" -d 4
  check "$mode: every id 1..12N handed out once" \
    eval '[ "$(stats_value incr_ids)" = $((12 * N)) ]'
  inl=$(stats_value jobs_inline) pooled=$(stats_value jobs_pooled)
  backoffs=$(stats_value loop_backoffs)
  echo "     $mode: jobs run on a loop $inl, by a worker $pooled ($backoffs backoffs)"
  # A call that held a loop past 20 ms (a synced segment write on a loaded
  # machine) sends that loop's work to the workers for a second: then the
  # loops still answered some themselves; else nearly all.
  check "$mode: the loops answered the warm counter themselves" \
    eval '[ "$inl" -gt $((10 * pooled)) ] || { [ "$backoffs" -gt 0 ] && [ "$inl" -gt 0 ]; }'
  check "$mode: its first use went to a worker" \
    eval '[ "$(stats_value jobs_pooled)" -ge 1 ]'
  calls=$(stats_value incr_calls) cmds=$(stats_value cmd_incr)
  echo "     $mode: $cmds incr requests in $calls library calls ($(stats_value incr_per_call) a call)"
  check "$mode: incr_calls counts the library calls (1..cmd_incr)" \
    eval '[ "$calls" -ge 1 ] && [ "$calls" -le "$cmds" ]'
  stop_daemon TERM
  check "$mode: SIGTERM, exit 0" [ "$RC" -eq 0 ]
  check "$mode: the log verifies" verify "one-$mode"
done

# ---- a burst of new names ----------------------------------------------------
# (--prefetch off: the stall below must reach memcached on every request;
# with segments in memory a 1.5 s stop may never be seen)
DB=burst
start_daemon "$DB" --threads 3 --prefetch off || { failed=$((failed + 1)); finish; }
NAMES=$((600 / SCALE))
for c in 0 1 2 3 4 5; do
  (
    exec 4<>"/dev/tcp/127.0.0.1/$DPORT"
    for ((i = 0; i < NAMES; i++)); do printf 'incr new%d-%d 1\r\n' "$c" "$i"; done >&4
    for ((i = 0; i < NAMES; i++)); do IFS= read -r -t 30 l <&4 || exit 1; [ "${l%$'\r'}" = 1 ] || exit 1; done
  ) &
done
ok_all=1
for c in 0 1 2 3 4 5; do wait -n || ok_all=0; done
check "6 connections pipelining $NAMES new names each: every answer 1" [ "$ok_all" = 1 ]

# ---- memcached stalls ----------------------------------------------------------
load -k stall -c 4 -n 200 >/dev/null            # warm: the loops own it
before=$(stats_value loop_backoffs)
"$CLIENT" load -p "$DPORT" -k stall -c 4 -t 3 -e >"$TMP/stall.out" 2>&1 &
lpid=$!
sleep 0.5
kill -STOP "$(cat "$TMP/memcached.pid")"
sleep 1.5
kill -CONT "$(cat "$TMP/memcached.pid")"
wait "$lpid"; lrc=$?
cat "$TMP/stall.out"
check "memcached stopped for 1.5 s under load: the client's answers stayed in order" [ "$lrc" -eq 0 ]
after=$(stats_value loop_backoffs) stall=$(stats_value loop_stall_max_us)
echo "     loop_backoffs $before -> $after, loop_stall_max_us $stall"
check "the stall is counted (loop_backoffs, loop_stall_max_us >= 20 ms)" \
  eval '[ "$after" -gt "$before" ] && [ "$stall" -ge 20000 ]'
conn; ask "incr stall 1"; v=$REPLY_LINE; conn_close
check "after the stall: answered again" eval '[[ $v =~ ^[0-9]+$ ]]'

# ---- limits on names ----------------------------------------------
stop_daemon TERM
for bad in "--max-counters 0" "--max-tallies 0" "--max-counters 1000000001"; do
  # shellcheck disable=SC2086
  "$DAEMON" --db "$TMP/bad" $bad >"$TMP/out" 2>&1; rc=$?
  check "$bad: usage error 2, says why" eval '[ $rc = 2 ] && grep -q "invalid value" "$TMP/out"'
done
SAME_PORT=1 start_daemon "$DB" --threads 3 --max-counters 2 --max-tallies 1 ||
  { failed=$((failed + 1)); finish; }
conn; ask "incr lim-a 1"; a=$REPLY_LINE; ask "incr lim-b 1"; b=$REPLY_LINE
ask "incr lim-c 1"; c=$REPLY_LINE; ask "incr lim-a 1"; a2=$REPLY_LINE
ask "incr tally:lim-t 5"; t1=$REPLY_LINE; ask "incr tally:lim-u 5"; t2=$REPLY_LINE
ask "get lim-c"; g=$REPLY_LINE; conn_close
check "--max-counters 2: new names up to the limit answered" eval '[ "$a" = 1 ] && [ "$b" = 1 ]'
check "a new name beyond it: SERVER_ERROR ELIMIT" eval '[[ $c == "SERVER_ERROR ELIMIT "* ]]'
check "names in use go on" [ "$a2" = 2 ]
check "--max-tallies 1: the second tally gets SERVER_ERROR ELIMIT" \
  eval '[ "$t1" = 5 ] && [[ $t2 == "SERVER_ERROR ELIMIT "* ]]'
check "the refused name was not created (get: END)" [ "$g" = END ]
check "stats shows the state kept (counters 2, tallies 1)" \
  eval '[ "$(stats_value counters)" = 2 ] && [ "$(stats_value tallies)" = 1 ]'
stop_daemon TERM
SAME_PORT=1 start_daemon "$DB" --threads 3 || { failed=$((failed + 1)); finish; }

# ---- SIGTERM while every loop is busy -----------------------------------------
"$CLIENT" load -p "$DPORT" -k busy -c 9 -t 10 -e -d 8 >"$TMP/busy.out" 2>&1 &
lpid=$!
sleep 1
stop_daemon TERM
wait "$lpid" 2>/dev/null
check "SIGTERM during load on 3 loops: exit 0" [ "$RC" -eq 0 ]
check "and the logs verify" verify busy stall new0-0 new5-$((NAMES - 1))
grep -q "Sanitizer" "$TMP/daemon.log" && { grep -A20 Sanitizer "$TMP/daemon.log" | head -40; }
check "no sanitizer report in the daemon's log" bash -c "! grep -Eq 'Sanitizer|runtime error' '$TMP/daemon.log'"
finish
