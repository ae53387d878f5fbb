#!/bin/bash
# suite_owner.sh - one owning log per counter, end to end:
#   - a daemon and the CLI on two logs, one memcached: each refuses the
#     other's counter (SERVER_ERROR EOWNED naming the owner; CLI exit 1),
#     also after memcached's flush_all, whoever asks first;
#   - release on the CLI's log and adopt through a daemon's log: the ids
#     keep going up, the old log refuses afterwards;
#   - three daemons (three logs) sharing one memcached, reached by
#     pylibmc listing all three, then by pymemcache's HashClient and by
#     pylibmc with the list reversed: every answer is the owner's or
#     EOWNED, never a repeat (tests/daemon/scale_out.py); one daemon
#     killed: its counters fail, the others are answered.
# Uses $BUILD/logcounterd and $BUILD/logcounter, Debian's python3 with
# python3-pylibmc and python3-pymemcache, a private memcached, free
# 127.0.0.1 ports.  Ends with "owner: N passed, M failed".
# shellcheck disable=SC2016,SC2034
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd CLI=$B/logcounter SCALE_OUT=tests/daemon/scale_out.py
SCALE=${LC_TEST_SCALE:-1}
[ "$SCALE" -ge 1 ] 2>/dev/null || SCALE=1

SUITE=owner
. tests/check.sh

for bin in "$DAEMON" "$CLI"; do
  [ -x "$bin" ] || { echo "suite_owner: $bin not built" >&2; failed=1; finish; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_owner.XXXXXX") || exit 1
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MCPORT=$(tests/memcached.sh start "$TMP") || { echo "suite_owner: no memcached" >&2; failed=1; finish; }
MC="--SERVER=127.0.0.1:$MCPORT"
. tests/daemon.sh

cli() { "$CLI" --memcached "$MC" --db "$TMP/cli" "$@"; }
# incr_on PORT NAME: REPLY_LINE = the daemon's answer to "incr NAME 1".
incr_on() { DPORT=$1; conn; ask "incr $2 1"; conn_close; }
# flush_memcached: flush_all on the private memcached; fails unless OK.
flush_memcached() {
  local l=""
  exec 4<>"/dev/tcp/127.0.0.1/$MCPORT" && printf 'flush_all\r\n' >&4 &&
    IFS= read -r -t 5 l <&4; exec 4<&-
  [ "${l%$'\r'}" = OK ]
}

# ---- a daemon and the CLI -----------------------------------------------------
start_daemon d0 || { failed=$((failed + 1)); finish; }
P0=$DPORT; PIDS+=("$DPID")
incr_on "$P0" d-owned
check "the daemon's counter: 1" [ "$REPLY_LINE" = 1 ]
cli next cli-owned >"$TMP/out" 2>&1
check "the CLI's counter: 1" [ "$(cat "$TMP/out")" = 1 ]
cli next d-owned >"$TMP/out" 2>&1; rc=$?
check "the CLI's log is refused the daemon's counter: exit 1, EOWNED, pid named" \
  eval '[ $rc = 1 ] && grep -q "owned by log" "$TMP/out" && grep -q "pid $DPID" "$TMP/out"'
incr_on "$P0" cli-owned
check "the daemon is refused the CLI's counter: SERVER_ERROR EOWNED" \
  eval '[[ $REPLY_LINE == "SERVER_ERROR EOWNED "*"owned by log"* ]]'
check "memcached flushed" flush_memcached
incr_on "$P0" cli-owned
check "after flush_all, the refused daemon asks first: still EOWNED" \
  eval '[[ $REPLY_LINE == "SERVER_ERROR EOWNED "* ]]'
cli next cli-owned >"$TMP/out" 2>&1
check "and the owner goes on above what it handed out: 2" [ "$(cat "$TMP/out")" = 2 ]

# ---- release and adopt -----------------------------------------------------------
cli release cli-owned >"$TMP/out" 2>&1; final=$(cat "$TMP/out")
check "release prints the final value: 2" [ "$final" = 2 ]
cli next cli-owned >"$TMP/out" 2>&1; rc=$?
check "the released counter is refused on its old log" \
  eval '[ $rc = 1 ] && grep -q "released" "$TMP/out"'
stop_daemon TERM
"$CLI" --memcached "$MC" --db "$TMP/d0" adopt cli-owned --above "$final" >"$TMP/out" 2>&1
check "adopt on the daemon's log" grep -q "adopted" "$TMP/out"
SAME_PORT=1 start_daemon d0 || { failed=$((failed + 1)); finish; }
PIDS+=("$DPID")
incr_on "$P0" cli-owned
check "through the daemon, the ids go on above the release: 3" [ "$REPLY_LINE" = 3 ]
stop_daemon TERM

# ---- three daemons, one memcached --------------------------------------------------
PORTS=()
for d in s0 s1 s2; do
  start_daemon "$d" --threads 2 || { failed=$((failed + 1)); finish; }
  PORTS+=("$DPORT"); PIDS+=("$DPID")
  eval "PID_$d=$DPID"
done
/usr/bin/python3 "$SCALE_OUT" run so $((20 / SCALE + 1)) "${PORTS[@]}" >"$TMP/py.out" 2>&1; rc=$?
cat "$TMP/py.out"
check "3 daemons, 100 counters, 3 clients hashing differently: owner or EOWNED, never a repeat" [ $rc = 0 ]
kill -9 "$PID_s1"; wait "$PID_s1" 2>/dev/null
/usr/bin/python3 "$SCALE_OUT" down so "${PORTS[1]}" "${PORTS[@]}" >"$TMP/py.out" 2>&1; rc=$?
cat "$TMP/py.out"
check "one daemon killed: its counters fail, the others are answered" [ $rc = 0 ]
for d in s0 s2; do
  eval "kill -TERM \$PID_$d; wait \$PID_$d"; rc=$?
  check "daemon $d: SIGTERM, exit 0" [ $rc = 0 ]
done
# verify_all: every daemon's log verifies each counter it owns.
verify_all() {
  local d i
  for d in s0 s1 s2; do
    for ((i = 0; i < 100; i++)); do
      "$CLI" --memcached "$MC" --db "$TMP/$d" verify "so$i" >"$TMP/v.out" 2>&1 ||
        { cat "$TMP/v.out"; return 1; }
    done
  done
}
check "every log verifies (the killed daemon's too)" verify_all
grep -q "Sanitizer" "$TMP/daemon.log" && grep -A20 Sanitizer "$TMP/daemon.log" | head -40
check "no sanitizer report in the daemons' log" bash -c "! grep -Eq 'Sanitizer|runtime error' '$TMP/daemon.log'"
finish
