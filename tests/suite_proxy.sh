#!/bin/bash
# suite_proxy.sh - three logcounterd (three logs, one shared memcached)
# behind twemproxy (Debian's nutcracker), configured from
# tests/proxy/nutcracker.yml.in; the clients speak only to the proxy
# (tests/daemon/proxy_load.py):
#   - 4 connections (pymemcache, pylibmc) allocate on 100 counters: no id
#     twice, each connection's ids rising, pipelined incr in order; a
#     multi-key get of the 100 (split by the proxy) is exact;
#   - what the proxy forwards (incr, get, gets, tallies, version, the
#     daemons' CLIENT_ERROR and SERVER_ERROR lines whole) and what it
#     refuses by closing the connection (stats, flush_all, verbosity,
#     meta commands, a malformed incr);
#   - with server_connections: 4 instead of 1, one connection's pipelined
#     incr of a counter come back out of order (never twice);
#   - one daemon stopped (SIGSTOP): its counter's incr answers SERVER_ERROR
#     Connection timed out after the proxy's timeout, another daemon's
#     counter is answered meanwhile, and after SIGCONT it works again;
#   - one daemon SIGKILLed: its counters fail within the timeout, the
#     others allocate above every earlier id; a multi-key get of all
#     fails as a whole;
#   - meanwhile a second proxy with auto_eject_hosts: true ejects it and
#     sends its counters to the others: SERVER_ERROR EOWNED, never an id;
#   - the daemon restarted on its port and log: its counters allocate
#     again through the proxy, above every earlier id;
#   - every log verifies.
# Uses $BUILD/logcounterd and $BUILD/logcounter, /usr/sbin/nutcracker,
# Debian's python3 with python3-pylibmc and python3-pymemcache, a private
# memcached, free 127.0.0.1 ports.  Ends with "proxy: N passed, M failed".
# shellcheck disable=SC2016,SC2034
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd CLI=$B/logcounter LOAD=tests/daemon/proxy_load.py
TEMPLATE=tests/proxy/nutcracker.yml.in
SCALE=${LC_TEST_SCALE:-1}
[ "$SCALE" -ge 1 ] 2>/dev/null || SCALE=1

SUITE=proxy
. tests/check.sh

NUTCRACKER=$(command -v nutcracker || echo /usr/sbin/nutcracker)
if ! [ -x "$NUTCRACKER" ]; then
  echo "suite_proxy: nutcracker (twemproxy) not found: install Debian's nutcracker (tests/deps.sh)" >&2
  failed=1; finish
fi
for bin in "$DAEMON" "$CLI"; do
  [ -x "$bin" ] || { echo "suite_proxy: $bin not built" >&2; failed=1; finish; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_proxy.XXXXXX") || exit 1
PIDS=() NCPID="" PROXY_PID=""
cleanup() {
  local p
  for p in "${PIDS[@]}" $PROXY_PID $NCPID; do kill -9 "$p" 2>/dev/null; done
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MCPORT=$(tests/memcached.sh start "$TMP") || { echo "suite_proxy: no memcached" >&2; failed=1; finish; }
MC="--SERVER=127.0.0.1:$MCPORT"
. tests/daemon.sh

# ---- three daemons, the proxy -------------------------------------------------
PORTS=() PID_p0="" PID_p1="" PID_p2=""
for d in p0 p1 p2; do
  start_daemon "$d" --threads 2 || { failed=$((failed + 1)); finish; }
  PORTS+=("$DPORT"); PIDS+=("$DPID")
  eval "PID_$d=$DPID"
done
# start_proxy NAME [SED-EXPR]: nutcracker from the template (edited by
# SED-EXPR) as $TMP/NAME.yml on a free port (NPORT, NCPID), stats on
# another.
start_proxy() {
  local tries=0 i name=$1 edit=${2:-}
  while [ $tries -lt 10 ]; do
    tries=$((tries + 1))
    { NPORT=$(free_port) && SPORT=$(free_port); } || continue
    sed -e "s/@LISTEN@/127.0.0.1:$NPORT/" -e "s/@D0@/127.0.0.1:${PORTS[0]}/" \
      -e "s/@D1@/127.0.0.1:${PORTS[1]}/" -e "s/@D2@/127.0.0.1:${PORTS[2]}/" \
      ${edit:+-e "$edit"} "$TEMPLATE" >"$TMP/$name.yml"
    "$NUTCRACKER" -c "$TMP/$name.yml" -a 127.0.0.1 -s "$SPORT" -i 100 \
      -p "$TMP/$name.pid" -o "$TMP/$name.log" -v 6 &
    NCPID=$!
    for ((i = 0; i < 50; i++)); do
      kill -0 "$NCPID" 2>/dev/null || break
      (exec 3<>"/dev/tcp/127.0.0.1/$NPORT") 2>/dev/null && return 0
      sleep 0.1
    done
    kill -9 "$NCPID" 2>/dev/null; wait "$NCPID" 2>/dev/null; NCPID=""
  done
  echo "suite_proxy: cannot start nutcracker:" >&2
  tail -n 5 "$TMP/$name.log" >&2
  return 1
}
check "the config template passes nutcracker -t" \
  eval 'sed "s/@[A-Z0-9]*@/127.0.0.1:1/" "$TEMPLATE" >"$TMP/t.yml" && "$NUTCRACKER" -t -c "$TMP/t.yml" >/dev/null 2>&1'
start_proxy nutcracker || { failed=$((failed + 1)); finish; }
PROXY_PID=$NCPID PROXY_PORT=$NPORT
TIMEOUT_MS=$(sed -n 's/^ *timeout: *\([0-9]*\).*/\1/p' "$TMP/nutcracker.yml")
STATE=$TMP/state.json

py() { /usr/bin/python3 "$LOAD" "$@" >"$TMP/py.out" 2>&1; rc=$?; cat "$TMP/py.out"; return $rc; }

py alloc px $((10 / SCALE + 1)) "$NPORT" "$MCPORT" "$STATE"
check "through the proxy only: 4 connections, 100 counters, no id twice, rising; multi-key get exact" [ $? = 0 ]
py longget px "$NPORT" "$STATE"
check "gets of 1,000 keys through the proxy (split per daemon) while others allocate" [ $? = 0 ]

# ---- what passes through, on one raw connection --------------------------------
DPORT=$NPORT
conn; ask "incr px-raw 2"
check "incr through the proxy: the daemon's answer (2)" reply_is 2
ask "get px-raw"; l1=$REPLY_LINE; hear; l2=$REPLY_LINE; hear
check "get through the proxy: VALUE px-raw 0 1 / 2 / END" \
  eval '[ "$l1" = "VALUE px-raw 0 1" ] && [ "$l2" = 2 ] && reply_is END'
ask "gets px-raw"; l1=$REPLY_LINE; hear; hear
check "gets through the proxy: $l1" eval '[[ $l1 =~ ^"VALUE px-raw 0 1 "[0-9]+$ ]] && reply_is END'
ask "incr tally:px-raw 3"; ask "decr tally:px-raw 1"
check "a tally through the proxy: incr 3, decr 1: 2" reply_is 2
ask "version"
check "version is forwarded to a daemon: $REPLY_LINE" reply_has logcounterd
ask "decr px-raw 1"
check "the daemon's CLIENT_ERROR is forwarded" reply_has "CLIENT_ERROR decr is not supported"
conn_close
# A counter first used directly on p0 and then asked through the proxy,
# which hashes it to another daemon: that daemon's SERVER_ERROR EOWNED
# (naming p0's pid) comes back through the proxy whole.
misrouted() {
  local k
  for ((k = 0; k < 20; k++)); do
    DPORT=${PORTS[0]}; conn; ask "incr px-mis$k 1"; conn_close
    DPORT=$NPORT; conn; ask "incr px-mis$k 1"; conn_close
    [[ $REPLY_LINE == "SERVER_ERROR EOWNED "* ]] && break
  done
  [[ $REPLY_LINE == "SERVER_ERROR EOWNED "*"owned by log"*"pid $PID_p0"* ]]
}
check "SERVER_ERROR EOWNED ... pid N (a misrouted counter) is forwarded whole" misrouted
DPORT=$NPORT
conn; say "stats"
check "stats: the proxy closes the connection, no answer" closed
conn_close
for c in "stats settings" "flush_all" "verbosity 1" "mn" "incr px-raw x" "quit"; do
  conn; say "$c"
  check "$c: the proxy closes the connection, no answer" closed
  conn_close
done
conn; ask "incr px-raw 1"
check "a new connection after that is served (3)" reply_is 3
conn_close

# ---- server_connections: 4 -----------------------------------------------------------
# What the config's server_connections: 1 prevents: with more, the proxy
# deals one client's pipelined requests over its connections to a daemon.
start_proxy conns4 's/server_connections: 1/server_connections: 4/' ||
  { failed=$((failed + 1)); finish; }
py disorder "$NPORT" px-pipe
check "server_connections: 4: a pipelining client's ids for a counter come back out of order" [ $? = 0 ]
kill -TERM "$NCPID"; wait "$NCPID" 2>/dev/null; NCPID=""; NPORT=$PROXY_PORT; DPORT=$NPORT

# ---- one daemon hung (SIGSTOP) ------------------------------------------------------
# owned_by PID: the first counter pxN whose claim (lo:pxN in memcached:
# LOGID HOST PID) names PID.
owned_by() {
  local i l v
  exec 4<>"/dev/tcp/127.0.0.1/$MCPORT" || return 1
  for ((i = 0; i < 100; i++)); do
    printf 'get lo:px%s\r\n' "$i" >&4
    IFS= read -r -t 5 l <&4; v=""
    if [[ $l == VALUE* ]]; then IFS= read -r -t 5 v <&4; IFS= read -r -t 5 l <&4; fi
    v=${v%$'\r'}
    [ "${v##* }" = "$1" ] && { echo "px$i"; break; }
  done
  exec 4<&-
}
HUNG=$(owned_by "$PID_p2") LIVE=$(owned_by "$PID_p0")
check "p2 owns $HUNG, p0 owns $LIVE (their claims in memcached)" test -n "$HUNG" -a -n "$LIVE"
kill -STOP "$PID_p2"
# stopped() PID: every thread of PID is stopped (state T).
stopped() {
  local f st
  for f in /proc/"$1"/task/*/stat; do
    st=$(sed 's/.*) //' "$f" 2>/dev/null); [ "${st%% *}" = T ] || return 1
  done
}
for ((i = 0; i < 100; i++)); do stopped "$PID_p2" && break; sleep 0.01; done
stopped "$PID_p2" || echo "suite_proxy: p2 not stopped after 1 s: $(cat /proc/"$PID_p2"/task/*/stat | cut -c1-60)"
DPORT=$NPORT; conn; t0=$(date +%s%N); ask "incr $HUNG 1"; t1=$(date +%s%N); conn_close
ms=$(( (t1 - t0) / 1000000 ))
check "p2 stopped: incr $HUNG answers '$REPLY_LINE' after $ms ms (timeout $TIMEOUT_MS)" \
  eval '[ "$REPLY_LINE" = "SERVER_ERROR Connection timed out" ] && [ $ms -ge $((TIMEOUT_MS - 100)) ] && [ $ms -le $((TIMEOUT_MS + 1000)) ]'
conn; ask "incr $LIVE 1"; conn_close; v_live=$REPLY_LINE
check "meanwhile $LIVE (p0's) is answered: $REPLY_LINE" eval '[[ $REPLY_LINE =~ ^[0-9]+$ ]]'
kill -CONT "$PID_p2"
conn; ask "incr $HUNG 1"; conn_close
check "p2 continued: $HUNG answers again: $REPLY_LINE" eval '[[ $REPLY_LINE =~ ^[0-9]+$ ]]'
py seen "$STATE" "$LIVE=$v_live" "$HUNG=$REPLY_LINE" >/dev/null
check "both above every id the clients had for them" [ $? = 0 ]

# ---- one daemon killed -----------------------------------------------------------
kill -9 "$PID_p1"; wait "$PID_p1" 2>/dev/null
PIDS=("$PID_p0" "$PID_p2")   # cleanup must not signal a reused pid
py down px "$NPORT" "$MCPORT" "$PID_p1" "$TIMEOUT_MS" "$STATE"
check "p1 killed: its counters fail (SERVER_ERROR) within the timeout, the others go on, no repeat" [ $? = 0 ]
# The same config with auto_eject_hosts: true (what docs/operations.md forbids):
# the dead daemon is ejected and its counters re-hashed to the others.
start_proxy eject 's/auto_eject_hosts: false/auto_eject_hosts: true/' ||
  { failed=$((failed + 1)); finish; }
py eject px "$NPORT" "$MCPORT" "$PID_p1"
check "auto_eject_hosts: true: the dead daemon's counters reach the others: EOWNED, never an id" [ $? = 0 ]
kill -TERM "$NCPID"; wait "$NCPID" 2>/dev/null; NCPID=""; NPORT=$PROXY_PORT

# ---- restarted on its port and log ------------------------------------------------
DPORT=${PORTS[1]}
SAME_PORT=1 start_daemon p1 --threads 2 || { failed=$((failed + 1)); finish; }
PIDS+=("$DPID"); PID_p1=$DPID
py back px "$NPORT" "$STATE"
check "p1 restarted: its counters work through the proxy above every earlier id" [ $? = 0 ]

kill -TERM "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null; PROXY_PID=""
for d in p0 p1 p2; do
  eval "kill -TERM \$PID_$d; wait \$PID_$d"; rc=$?
  check "daemon $d: SIGTERM, exit 0" [ $rc = 0 ]
done
PIDS=()
# verify_all: every daemon's log verifies each counter.
verify_all() {
  local d i
  for d in p0 p1 p2; do
    for ((i = 0; i < 100; i++)); do
      "$CLI" --memcached "$MC" --db "$TMP/$d" verify "px$i" >"$TMP/v.out" 2>&1 ||
        { echo "$d px$i:"; cat "$TMP/v.out"; return 1; }
    done
  done
}
check "every log verifies (the killed daemon's too)" verify_all
grep -q "Sanitizer" "$TMP/daemon.log" && grep -A20 Sanitizer "$TMP/daemon.log" | head -40
check "no sanitizer report in the daemons' log" bash -c "! grep -Eq 'Sanitizer|runtime error' '$TMP/daemon.log'"
finish
