#!/bin/bash
# suite_evict.sh - logcounterd's --idle-evict, end to end:
#   - a bad value is a usage error (exit 2) naming the option, and
#     "stats settings" shows the setting;
#   - for --prefetch auto and off, with --idle-evict 200ms, while two
#     clients allocate without pause (tests/daemon/evict_load.py): a burst
#     of new names in one noreply pipeline, all evicted, each going on at
#     exactly its last value + 1; after SIGTERM (exit 0) and a restart,
#     at + 1 again; `logcounter verify` passes on the names.
# Needs $BUILD/logcounterd, $BUILD/logcounter and /usr/bin/python3 with
# pylibmc and pymemcache.  A private memcached, free 127.0.0.1 ports only.
# Ends with "evict: N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd CLI=$B/logcounter
PY=/usr/bin/python3 LOAD=tests/daemon/evict_load.py

SUITE=evict
. tests/check.sh

for bin in "$DAEMON" "$CLI"; do
  [ -x "$bin" ] || { echo "suite_evict: $bin not built" >&2; failed=1; finish; }
done
"$PY" -c 'import pylibmc, pymemcache' 2>/dev/null ||
  { echo "suite_evict: $PY lacks pylibmc or pymemcache (tests/deps.sh installs python3-pylibmc python3-pymemcache)" >&2; failed=1; finish; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_evict.XXXXXX") || exit 1
DPID=""
cleanup() {
  [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MCPORT=$(tests/memcached.sh start "$TMP") || { echo "suite_evict: no memcached" >&2; failed=1; finish; }
MC="--SERVER=127.0.0.1:$MCPORT"
. tests/daemon.sh

"$DAEMON" --db "$TMP/bad" --memcached "$MC" --idle-evict 5ms >"$TMP/u.out" 2>&1
rc=$?
check "--idle-evict 5ms: usage error (exit 2) naming the option" \
  bash -c "[ $rc = 2 ] && grep -q -- '--idle-evict' '$TMP/u.out'"
N=$(( 3000 / ${LC_TEST_SCALE:-1} ))

run() {
  local name=$1; shift
  "$PY" "$LOAD" "$@" >"$TMP/py.out" 2>&1; local rc=$?
  sed 's/^/    /' "$TMP/py.out"
  check "$name" [ "$rc" = 0 ]
}

# Two workers: the burst's pipeline keeps more first uses queued than
# workers idle, so that each worker serves several at once (lc_next_each).
for mode in auto off; do
  start_daemon "d-$mode" --prefetch "$mode" --idle-evict 200ms --workers 2 ||
    { failed=$((failed + 1)); finish; }
  if [ "$mode" = auto ]; then
    conn; say "stats settings"; seen=0
    while hear && [ "$REPLY_LINE" != END ]; do
      [ "$REPLY_LINE" = "STAT idle_evict_us 200000" ] && seen=1
    done
    conn_close
    check "stats settings shows idle_evict_us 200000" [ "$seen" = 1 ]
  fi
  run "prefetch $mode: a burst of $N names evicted while clients allocate, each goes on exactly" \
    burst "$DPORT" "e$mode" "$N"
  stop_daemon TERM
  check "prefetch $mode: SIGTERM, exit 0" [ "$RC" = 0 ]
  start_daemon "d-$mode" --prefetch "$mode" --idle-evict 200ms ||
    { failed=$((failed + 1)); finish; }
  run "prefetch $mode: after a restart each name goes on exactly" \
    again "$DPORT" "e$mode" "$N"
  stop_daemon TERM
  ok_all=1
  for name in "e${mode}0" "e${mode}$((N - 1))" "e${mode}hot0" "e${mode}hot1"; do
    "$CLI" --memcached "$MC" --db "$TMP/d-$mode" verify "$name" >"$TMP/v.out" 2>&1 ||
      { cat "$TMP/v.out"; ok_all=0; }
  done
  check "prefetch $mode: the log verifies the counters used" [ "$ok_all" = 1 ]
done

check "no sanitizer report in the daemon's log" \
  bash -c "! grep -Eq 'Sanitizer|runtime error' '$TMP/daemon.log'"
finish
