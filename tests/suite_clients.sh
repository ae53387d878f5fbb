#!/bin/bash
# suite_clients.sh - stock memcached clients against logcounterd, the way
# services and tools use them (tests/daemon/clients.py does the talking):
#   - multi-key gets of 1,000 and 10,000 keys by pylibmc get_multi,
#     pymemcache get_many and gets_many, and libmemcached's memcached_mget
#     ($BUILD/tests/lcd_mget), exact against each counter while four other
#     connections allocate; with the per-id path and with --prefetch auto;
#   - the meta commands (ma, mg, mn) over a raw socket, a 100,000-deep
#     "ma q" pipeline and a burst of 5,000 new names;
#   - stats slabs, stats items, and the stats fields memcached's exporter
#     reads;
#   - a client that sends long gets and never reads: closed after
#     --reply-timeout while another is answered.
# Uses $BUILD/logcounterd, $BUILD/logcounter, $BUILD/tests/lcd_mget,
# Debian's python3 with python3-pylibmc and python3-pymemcache, a private
# memcached, free 127.0.0.1 ports.  Ends with "clients: N passed, M failed".
# shellcheck disable=SC2034
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd CLI=$B/logcounter MGET=$B/tests/lcd_mget
PY=/usr/bin/python3 CLIENTS=tests/daemon/clients.py

SUITE=clients
. tests/check.sh

for bin in "$DAEMON" "$CLI" "$MGET"; do
  [ -x "$bin" ] || { echo "suite_clients: $bin not built" >&2; failed=1; finish; }
done
"$PY" -c 'import pylibmc, pymemcache' 2>/dev/null ||
  { echo "suite_clients: $PY lacks pylibmc or pymemcache (tests/deps.sh installs python3-pylibmc python3-pymemcache)" >&2; failed=1; finish; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_clients.XXXXXX") || exit 1
DPID=""
cleanup() {
  [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MCPORT=$(tests/memcached.sh start "$TMP") || { echo "suite_clients: no memcached" >&2; failed=1; finish; }
MC="--SERVER=127.0.0.1:$MCPORT"
. tests/daemon.sh

# run NAME ARGS...: clients.py ARGS, its lines shown; one check.
run() {
  local name=$1; shift
  "$PY" "$CLIENTS" "$@" >"$TMP/py.out" 2>&1; local rc=$?
  sed 's/^/    /' "$TMP/py.out"
  check "$name" [ "$rc" = 0 ]
}

for mode in off auto; do
  start_daemon "d-$mode" --prefetch "$mode" --reply-timeout 3 ||
    { failed=$((failed + 1)); finish; }
  run "prefetch $mode: multi-key gets by four clients, exact under load" \
    multiget "$DPORT" "$MGET" "m$mode"
  run "prefetch $mode: meta commands" meta "$DPORT" "x$mode"
  if [ "$mode" = off ]; then
    run "stats slabs, stats items and the exporter's fields" stats "$DPORT"
  else # where long gets are fast, so the socket buffers fill in seconds
    run "a client that stops reading its long gets is closed, others go on" \
      unread "$DPORT" "m$mode"
  fi
  stop_daemon TERM
  check "prefetch $mode: SIGTERM, exit 0" [ "$RC" = 0 ]
  ok_all=1
  for name in "m${mode}h0" "m${mode}q77" "x${mode}p" "x${mode}a"; do
    "$CLI" --memcached "$MC" --db "$TMP/d-$mode" verify "$name" >"$TMP/v.out" 2>&1 ||
      { cat "$TMP/v.out"; ok_all=0; }
  done
  check "prefetch $mode: the log verifies the counters used" [ "$ok_all" = 1 ]
done

check "no sanitizer report in the daemon's log" \
  bash -c "! grep -Eq 'Sanitizer|runtime error' '$TMP/daemon.log'"
finish
