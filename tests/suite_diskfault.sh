#!/bin/bash
# suite_diskfault.sh - a full disk and I/O errors beneath LevelDB, through
# logcounterd, as issue 21 reproduced them: no acknowledged id comes back,
# no flushed tally change is lost.
#
# Each case starts logcounterd (its log on a small tmpfs, or with the
# fault shim $BUILD/tests/libfaultfs.so preloaded), allocates with
# tests/daemon/diskfault.py, switches the fault on (the tmpfs filled up,
# or the shim's mode), goes on until 50 answers are SERVER_ERROR ELOG,
# switches it off and goes on until ids come back and 2,000 more are
# acknowledged; stops the daemon (SIGTERM or SIGKILL), flushes memcached,
# starts it again and checks that the counter goes on above every id
# acknowledged (and the tally holds every acknowledged change); then
# `logcounter verify` must pass: every gap explained, nothing overlapping.
# A real disk full needs root (mount -t tmpfs); otherwise those cases use
# the shim's enospc mode and say so.  Also: the log directory removed
# under a running daemon (fails loudly: stats, log, exit status 1).
# LC_TEST_SCALE > 1 runs every other case.  Ends with "diskfault: N passed,
# M failed".
# shellcheck disable=SC2034
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd CLI=$B/logcounter SHIM=$B/tests/libfaultfs.so
DRIVER="/usr/bin/python3 tests/daemon/diskfault.py"
SUITE=diskfault
. tests/check.sh

for f in "$DAEMON" "$CLI" "$SHIM"; do
  [ -e "$f" ] || { echo "suite_diskfault: $f not built" >&2; failed=1; finish; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_diskfault.XXXXXX") || exit 1
DPID=""
cleanup() {
  [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
  for m in "$TMP"/*/fs; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MCPORT=$(tests/memcached.sh start "$TMP") ||
  { echo "suite_diskfault: no memcached" >&2; failed=1; finish; }
MC="--SERVER=127.0.0.1:$MCPORT"

TMPFS=0
mkdir -p "$TMP/probe"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=1m tmpfs "$TMP/probe" 2>/dev/null; then
  umount "$TMP/probe" && TMPFS=1
fi
[ $TMPFS = 1 ] || echo "# not root or no tmpfs: a full disk is the shim's enospc"

# start DIR FLAGS...: logcounterd on DIR/fs/db (DPID, DPORT), preloading
# the shim (reading DIR/ctl) when DIR/shim exists.
start() {
  local dir=$1; shift
  DPORT=$(free_port) || return 1
  local pre=()
  if [ -e "$dir/shim" ]; then
    pre=(env LD_PRELOAD="$SHIM" LC_FAULT_DIR="$dir/fs/db" LC_FAULT_CTL="$dir/ctl"
         LC_FAULT_HITS="$dir/hits"
         ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
  fi
  # --prefetch off unless the case asks for segments (--prefetch 64): with
  # the daemon's default the driver gets millions of ids a case, and its
  # check of every acknowledged id made the suite 4x slower
  "${pre[@]}" "$DAEMON" --db "$dir/fs/db" --memcached "$MC" -l "127.0.0.1:$DPORT" \
    --prefetch off "$@" 2>>"$dir/daemon.log" &
  DPID=$!
  local i
  for i in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$DPORT") 2>/dev/null && return 0
    kill -0 "$DPID" 2>/dev/null || break
    sleep 0.05
  done
  echo "suite_diskfault: logcounterd did not start:" >&2
  tail -n 3 "$dir/daemon.log" >&2
  return 1
}

# stop SIGNAL: the daemon's exit status in STOPPED.
stop() { kill -"$1" "$DPID"; wait "$DPID"; STOPPED=$?; DPID=""; }

# logged FILE TEXT...: waits until FILE holds every TEXT, at most 3 s (the
# daemon logs its log's state changes at its 1 s tick); false if not.
logged() {
  local f=$1 i t ok; shift
  for i in $(seq 30); do
    ok=1
    for t in "$@"; do grep -q -- "$t" "$f" || { ok=0; break; }; done
    [ "$ok" = 1 ] && return 0
    sleep 0.1
  done
  return 1
}

flush_memcached() {
  local l=""
  exec 4<>"/dev/tcp/127.0.0.1/$MCPORT" || return 1
  printf 'flush_all\r\n' >&4
  IFS= read -r -t 5 l <&4
  exec 4<&-
  [ "${l%$'\r'}" = OK ]
}

# case NAME FAULT SIGNAL DAEMON_FLAGS [--tally T]: one run, as above.
# FAULT: disk-full (a real full tmpfs when root) or a shim mode.
run_case() {
  local name=$1 fault=$2 sig=$3 flags=$4; shift 4
  local dir=$TMP/$name on off
  mkdir -p "$dir/fs"
  flush_memcached || return 1 # the last case's claim on c1 goes
  if [ "$fault" = disk-full ] && [ $TMPFS = 1 ]; then
    mount -t tmpfs -o size=3m tmpfs "$dir/fs" || return 1
    on="dd if=/dev/zero of=$dir/fs/filler bs=64k 2>/dev/null; true"
    off="rm -f $dir/fs/filler"
  else
    [ "$fault" = disk-full ] && fault=enospc
    : >"$dir/shim"
    echo off >"$dir/ctl"
    on="echo $fault >$dir/ctl" off="echo off >$dir/ctl"
    # REOPEN_FAULT: the reopens fail for a while first (e.g. emfile)
    [ -n "${REOPEN_FAULT:-}" ] &&
      off="echo $REOPEN_FAULT >$dir/ctl; sleep 1.5; echo off >$dir/ctl"
  fi
  # shellcheck disable=SC2086
  start "$dir" $flags || return 1
  if ! $DRIVER run "$DPORT" "$dir/acked" --fault-on "$on" --fault-off "$off" "$@"; then
    stop KILL
    return 1
  fi
  if [ -e "$dir/shim" ] && ! [ "$(cat "$dir/hits" 2>/dev/null || echo 0)" -ge 1 ]; then
    echo "# the shim injected nothing"; stop KILL; return 1
  fi
  # the daemon logs what its log did at its next tick (1 s): wait for that
  # (at most 3 s) rather than sleep the tick out
  logged "$dir/daemon.log" "log failed: " "log recovered: " \
    ${REOPEN_FAULT:+"log reopen failed"} || true
  grep -q "log failed: " "$dir/daemon.log" && grep -q "log recovered: " "$dir/daemon.log" ||
    { echo "# the daemon's log does not say the log failed and recovered"; stop KILL; return 1; }
  if [ -n "${REOPEN_FAULT:-}" ] && ! grep -q "log reopen failed" "$dir/daemon.log"; then
    echo "# no failed reopen in the daemon's log"; stop KILL; return 1
  fi
  stop "$sig"
  if [ "$sig" = TERM ] && [ "$STOPPED" != 0 ]; then
    echo "# SIGTERM: exit status $STOPPED"; return 1
  fi
  flush_memcached || return 1
  echo off >"$dir/ctl" 2>/dev/null
  # shellcheck disable=SC2086
  start "$dir" $flags || return 1
  $DRIVER check "$DPORT" "$dir/acked" "$@" || { stop KILL; return 1; }
  stop TERM
  local v
  v=$("$CLI" --memcached "$MC" --db "$dir/fs/db" verify c1 2>&1)
  local rc=$?
  echo "$v" | grep -E "^(gaps|causes|status):" | sed 's/^/#   /'
  [ $rc = 0 ] || { echo "$v" | sed 's/^/#   /'; return 1; }
}

# LC_TEST_SCALE > 1 (sanitizer builds): every other case, to save time.
SCALE=${LC_TEST_SCALE:-1}
[ "$SCALE" -ge 1 ] 2>/dev/null || SCALE=1
all() { [ "$SCALE" = 1 ]; }
check "the fault shim's self-test" bash tests/shim/faultfs_test.sh "$SHIM"
all && check "disk full (default durability), SIGTERM" run_case full-term disk-full TERM ""
check "disk full, SIGKILL" run_case full-kill disk-full KILL ""
all && check "disk full, --durability sync, SIGKILL" run_case full-sync disk-full KILL "--durability sync"
check "disk full, --prefetch 64, SIGKILL" run_case full-prefetch disk-full KILL "--prefetch 64"
check "disk full with a tally being flushed, SIGKILL" \
  run_case full-tally disk-full KILL "--flush-interval 1" --tally t1
all && check "EIO on every write, SIGKILL" run_case eio eio KILL ""
all && check "one EIO, SIGTERM" run_case eio-once eio-once TERM ""
check "a short write then EIO, SIGKILL" run_case short short KILL ""
check "failed fsync, --durability sync, SIGKILL" run_case fsync-sync fsync KILL "--durability sync"
all && check "failed fsync with a tally, SIGKILL" run_case fsync-tally fsync KILL "--flush-interval 1" --tally t1
all && check "EIO, --prefetch 64, SIGKILL" run_case eio-prefetch eio KILL "--prefetch 64"
REOPEN_FAULT=emfile check "EIO, then EMFILE while it reopens (retried with backoff), SIGKILL" \
  run_case emfile eio KILL ""

# The log directory removed under the daemon: every answer says the log
# is lost, stats say so, the daemon's log says so, and it exits 1.
lost_case() {
  local dir=$TMP/lost ans st
  mkdir -p "$dir/fs"
  flush_memcached || return 1
  start "$dir" || return 1
  exec 3<>"/dev/tcp/127.0.0.1/$DPORT"
  printf 'incr c1 1\r\n' >&3; IFS= read -r -t 5 ans <&3
  [ "${ans%$'\r'}" = 1 ] || { echo "# first incr: $ans"; return 1; }
  mv "$dir/fs/db" "$dir/fs/db.moved"
  sleep 0.2 # past the check of unsynced writes (100 ms)
  local i lostans=""
  for i in $(seq 2000); do
    printf 'incr c1 1\r\n' >&3; IFS= read -r -t 5 ans <&3
    case $ans in SERVER_ERROR*lost*) lostans=$ans; break ;; esac
  done
  [ -n "$lostans" ] || { echo "# never refused: $ans"; exec 3<&-; stop KILL; return 1; }
  echo "# $lostans" | tr -d '\r'
  printf 'stats\r\n' >&3
  st=""
  while IFS= read -r -t 5 ans <&3; do
    ans=${ans%$'\r'}; [ "$ans" = END ] && break; st+="$ans"$'\n'
  done
  exec 3<&-
  echo "$st" | grep -q "^STAT log_state lost$" || { echo "# stats: $(echo "$st" | grep log_)"; stop KILL; return 1; }
  logged "$dir/daemon.log" "LOG LOST" || true # the watcher's tick (1 s)
  stop TERM
  grep -q "LOG LOST" "$dir/daemon.log" || { echo "# not in the log"; return 1; }
  [ "$STOPPED" = 1 ] || { echo "# exit status $STOPPED"; return 1; }
}
check "log directory moved away: refused as lost, stats and log say so, exit 1" lost_case
finish
