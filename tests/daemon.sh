# daemon.sh - sourced by tests/daemon_test.sh and tests/suite_pipeline.sh:
# starting and stopping logcounterd, and one /dev/tcp connection (fd 3).
# Needs DAEMON, TMP (its log goes to $TMP/daemon.log) and MC (the
# libmemcached config of the private memcached); sets DPORT, DPID, RC,
# REPLY_LINE.
# shellcheck shell=bash disable=SC2034

# start_daemon DB ARGS...: starts logcounterd on a free port (DPORT, DPID;
# SAME_PORT=1 keeps the last DPORT); its stderr goes to $TMP/daemon.log.
start_daemon() {
  local db=$1; shift
  local tries=0
  while [ $tries -lt 20 ]; do
    tries=$((tries + 1))
    if [ "${SAME_PORT:-0}" = 0 ]; then
      DPORT=$(free_port) || continue
    fi
    "$DAEMON" --db "$TMP/$db" --memcached "$MC" -l "127.0.0.1:$DPORT" \
      --pidfile "$TMP/daemon.pid" "$@" 2>>"$TMP/daemon.log" &
    DPID=$!
    local i=0
    while [ $i -lt 100 ]; do
      if ! kill -0 "$DPID" 2>/dev/null; then break; fi
      # Ready once it answers (the pidfile is written by then).
      if (exec 3<>"/dev/tcp/127.0.0.1/$DPORT" && printf 'version\r\n' >&3 &&
          IFS= read -r -t 2 l <&3 && [[ $l == VERSION* ]]) 2>/dev/null; then
        return 0
      fi
      sleep 0.05
      i=$((i + 1))
    done
    kill -9 "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null
    DPID=""
    grep -q "Address already in use" "$TMP/daemon.log" || break
  done
  echo "daemon_test: cannot start logcounterd:" >&2
  tail -n 5 "$TMP/daemon.log" >&2
  return 1
}

# stop_daemon [SIGNAL]: signals it (default TERM), waits; RC = exit status.
stop_daemon() {
  kill "-${1:-TERM}" "$DPID" 2>/dev/null
  wait_daemon
}
wait_daemon() {
  wait "$DPID" 2>/dev/null
  RC=$?
  DPID=""
}

# ---- one connection on fd 3 ---------------------------------------------

conn() { exec 3<>"/dev/tcp/127.0.0.1/$DPORT"; }
conn_close() { exec 3<&- 2>/dev/null; exec 3>&- 2>/dev/null; true; }
# say LINE: sends LINE and "\r\n".
say() { printf '%s\r\n' "$1" >&3; }
# hear: reads one reply line into REPLY_LINE (without "\r"); RC 0, 1 at
# EOF, >128 on timeout (5 s).
hear() {
  REPLY_LINE=""
  IFS= read -r -t 5 REPLY_LINE <&3
  RC=$?
  REPLY_LINE=${REPLY_LINE%$'\r'}
  return $RC
}
# ask LINE: say, then hear.
ask() { say "$1"; hear; }
reply_is() { [ "$REPLY_LINE" = "$1" ]; }
reply_has() { [[ $REPLY_LINE == *"$1"* ]]; }
# closed: the daemon closed the connection (EOF within 5 s).
closed() { local l; IFS= read -r -t 5 l <&3; [ $? -eq 1 ]; }
# stats_value NAME: the value of "STAT NAME" in a fresh "stats" (fd 3).
stats_value() {
  local v=""
  conn; say "stats"
  while hear && [ "$REPLY_LINE" != END ]; do
    [[ $REPLY_LINE == "STAT $1 "* ]] && v=${REPLY_LINE#STAT $1 }
  done
  conn_close
  echo "$v"
}
