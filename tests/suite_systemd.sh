#!/bin/bash
# suite_systemd.sh - the shipped unit (dist/logcounterd.service.in) and
# the daemon's sd_notify (tools/logcounterd/lcd_notify.c), without systemd
# as PID 1 (so no systemctl):
#   - make install DESTDIR=D installs logcounterd.service with the
#     binary's path filled in; make uninstall removes it;
#   - systemd-analyze verify passes on the installed unit, silently, and
#     fails on a copy whose ExecStart names no binary; its TimeoutStopSec
#     is well above the --drain-timeout of its ExecStart;
#   - systemd-analyze security rates it below memcached's own unit;
#   - the unit's own command line (paths moved into the test's directory)
#     run under strace: every system call is allowed by its
#     SystemCallFilter, every socket is of a family it allows, no memory
#     is mapped writable and executable;
#   - readiness: with $NOTIFY_SOCKET (a path, and an abstract '@' name)
#     the daemon sends READY=1 and a STATUS= line, and a client that
#     connects on READY=1 is answered at once (version, incr); a daemon
#     that cannot start (its log held) sends no READY=1 and exits 1; a
#     usage error exits 2 (the unit's RestartPreventExitStatus);
#   - SIGTERM while clients allocate: STOPPING=1, exit 0 after the drain,
#     every id answered is unique and at most the counter's value after a
#     restart, and the next id is above them all.
# Uses make, systemd-analyze and strace (Debian's systemd and strace),
# /usr/bin/python3 (tests/daemon/notify.py), a private memcached, free
# 127.0.0.1 ports.  A missing tool fails the suite, with a message.
# Ends with "systemd: N passed, M failed".
# shellcheck disable=SC2016,SC2034
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
NOTIFY=tests/daemon/notify.py PY=/usr/bin/python3

SUITE=systemd
. tests/check.sh

missing=""
for t in make systemd-analyze strace memcached "$PY"; do
  command -v "$t" >/dev/null 2>&1 || missing="$missing $t"
done
if [ -n "$missing" ]; then
  echo "suite_systemd: missing:$missing (tests/deps.sh installs systemd, strace, python3)" >&2
  failed=1; finish
fi
[ -x "$B/logcounterd" ] || { echo "suite_systemd: $B/logcounterd not built" >&2; failed=1; finish; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_systemd.XXXXXX") || exit 1
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MCPORT=$(tests/memcached.sh start "$TMP") || { echo "suite_systemd: no memcached" >&2; failed=1; finish; }
MC="--SERVER=127.0.0.1:$MCPORT"

# ---- make install / uninstall ----------------------------------------------
# The build's own flags: a sanitizer build directory (build-address-undefined)
# is the Makefile's SANITIZE=address,undefined.
SAN=""
case "$(basename "$BUILD")" in build-*) SAN=$(basename "$BUILD"); SAN=${SAN#build-}; SAN=${SAN//-/,} ;; esac
D=$TMP/root
mk() { make --no-print-directory -C "$ROOT" BUILD="$BUILD" ${SAN:+SANITIZE=$SAN} PREFIX=/usr/local DESTDIR="$D" "$@"; }
mk install >"$TMP/make.out" 2>&1; rc=$?
[ $rc = 0 ] || tail -n 20 "$TMP/make.out"
UNIT=$D/usr/local/lib/systemd/system/logcounterd.service
check "make install DESTDIR=...: exit 0, the unit in \$(PREFIX)/lib/systemd/system" \
  eval '[ $rc = 0 ] && [ -f "$UNIT" ] && [ "$(stat -c %a "$UNIT")" = 644 ]'
check "the unit starts /usr/local/bin/logcounterd, no @...@ left" \
  eval 'grep -q "^ExecStart=/usr/local/bin/logcounterd " "$UNIT" && ! grep -q "@[A-Z]*@" "$UNIT"'
check "the unit is Type=notify" grep -qx 'Type=notify' "$UNIT"

# ---- systemd-analyze verify -------------------------------------------------
# verify --root resolves everything inside the root: ExecStart's binary
# (installed there) and the units this one depends on, explicitly (After=)
# or by default (sysinit.target, basic.target, shutdown.target).  With no
# systemd on the machine's root those come from the system's own unit
# directory, copied into the root.  Without --root, verify looks for
# /usr/local/bin/logcounterd on this machine.  Warnings (an unknown key, a
# bad value) leave its exit status 0, so any output at all fails too.
sysunits=""
for u in /usr/lib/systemd/system /lib/systemd/system; do
  [ -f "$u/sysinit.target" ] && { sysunits=$u; break; }
done
if [ -z "$sysunits" ]; then
  echo "suite_systemd: no sysinit.target in /usr/lib/systemd/system: is Debian's systemd installed?" >&2
  failed=$((failed + 1))
else
  mkdir -p "$D/usr/lib/systemd" && cp -a "$sysunits" "$D/usr/lib/systemd/system"
  systemd-analyze verify --man=no --root="$D" "$UNIT" >"$TMP/verify.out" 2>&1; rc=$?
  cat "$TMP/verify.out"
  check "systemd-analyze verify: exit 0 and not a word" eval '[ $rc = 0 ] && [ ! -s "$TMP/verify.out" ]'
  sed 's|^ExecStart=/usr/local/bin/logcounterd|ExecStart=/usr/local/bin/no-such-logcounterd|' "$UNIT" \
    >"$D/usr/local/lib/systemd/system/broken-lcd.service"
  systemd-analyze verify --man=no --root="$D" "$D/usr/local/lib/systemd/system/broken-lcd.service" \
    >"$TMP/verify.out" 2>&1; rc=$?
  check "verify is not vacuous: a copy naming a missing binary fails" \
    eval '[ $rc != 0 ] && grep -q "no-such-logcounterd" "$TMP/verify.out"'
  rm -f "$D/usr/local/lib/systemd/system/broken-lcd.service"
  # exposure: 0 (locked down) .. 10; Debian's memcached unit rates 4.8 here
  systemd-analyze security --offline=yes --root="$D" "$UNIT" >"$TMP/sec.out" 2>&1
  score=$(sed -n 's/.*Overall exposure level for logcounterd.service: \([0-9.]*\).*/\1/p' "$TMP/sec.out")
  echo "systemd-analyze security: exposure ${score:-?}"
  check "systemd-analyze security: exposure below 2.5 (memcached's unit: 4.8)" \
    eval '[ -n "$score" ] && awk -v s="$score" "BEGIN{exit !(s < 2.5)}"'
fi
# exec_line: the unit's ExecStart= value, continuation lines joined.
exec_line() { sed -e ':a' -e '/\\$/{N;s/\\\n//;ba' -e '}' "$UNIT" | sed -n 's/^ExecStart=//p'; }
drain=$(exec_line | sed -n 's/.*--drain-timeout \([0-9][0-9]*\).*/\1/p')
stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)$/\1/p' "$UNIT")
check "TimeoutStopSec (${stop:-?}) >= ExecStart's --drain-timeout (${drain:-?}) + 30 s" \
  eval '[ -n "$drain" ] && [ -n "$stop" ] && [ "$stop" -ge $((drain + 30)) ]'
check "KillSignal=SIGTERM, Restart=on-failure, RestartPreventExitStatus=2" \
  eval 'grep -qx KillSignal=SIGTERM "$UNIT" && grep -qx Restart=on-failure "$UNIT" && grep -qx RestartPreventExitStatus=2 "$UNIT"'

# ---- the unit's own command line --------------------------------------------
# unit_cmd PORT: the ExecStart line of the installed unit as words in CMD,
# with the installed binary, /var/lib/logcounter and /run/logcounter moved
# into $TMP, the port PORT, and $LOGCOUNTERD_OPTIONS expanded from the
# environment (as systemd splits it: on whitespace).
unit_cmd() {
  local line
  line=$(exec_line)
  line=${line//\/usr\/local\/bin\//$D/usr/local/bin/}
  line=${line//\/var\/lib\/logcounter/$TMP/state}
  line=${line//\/run\/logcounter/$TMP/run}
  line=${line//127.0.0.1:11311/127.0.0.1:$1}
  line=${line//\$LOGCOUNTERD_OPTIONS/${LOGCOUNTERD_OPTIONS:-}}
  read -r -a CMD <<<"$line"
}
mkdir -p "$TMP/state" "$TMP/run"
# unit_memcached: the unit's Environment=LOGCOUNTER_MEMCACHED, pointed at
# the private memcached (only the port differs).
umc=$(sed -n 's/^Environment=LOGCOUNTER_MEMCACHED=//p' "$UNIT")
check "the unit names memcached as LOGCOUNTER_MEMCACHED=--SERVER=127.0.0.1:11211" \
  [ "$umc" = "--SERVER=127.0.0.1:11211" ]
export LOGCOUNTER_MEMCACHED=${umc/127.0.0.1:11211/127.0.0.1:$MCPORT}

# listen_start SOCKET OUT PORT SECONDS: notify.py listening (NPID), once bound.
listen_start() {
  rm -f "$2" "$2.bound"
  "$PY" "$NOTIFY" listen "$@" 2>>"$TMP/notify.err" &
  NPID=$!; PIDS+=("$NPID")
  local i=0
  while [ ! -e "$2.bound" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  [ -e "$2.bound" ] || { echo "suite_systemd: notify.py did not bind $1" >&2; cat "$TMP/notify.err" >&2; }
}
# wait_for FILE PATTERN SECONDS: until a line of FILE matches PATTERN (grep -E).
wait_for() {
  local i=0
  while [ $i -lt $(($3 * 20)) ]; do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    sleep 0.05; i=$((i + 1))
  done
  return 1
}
# daemon_start NOTIFY_SOCKET: the unit's command line (DPORT, DPID), its
# stderr to $TMP/daemon.log; the caller waits for READY=1.
daemon_start() {
  DPORT=$(free_port) || return 1
  unit_cmd "$DPORT"
  NOTIFY_SOCKET=$1 "${CMD[@]}" 2>>"$TMP/daemon.log" &
  DPID=$!; PIDS+=("$DPID")
}
daemon_stop() { kill -TERM "$DPID" 2>/dev/null; wait "$DPID"; RC=$?; }

# ---- strace: the syscall filter and address families --------------------------
# expand GROUP: the system calls a systemd syscall group holds, nested
# groups included.
expand() {
  systemd-analyze syscall-filter "$1" | sed -e 's/#.*//' -e 's/^ *//' -e '/^$/d' |
    while read -r n; do
      case $n in "$1") ;; @*) expand "$n" ;; *) echo "$n" ;; esac
    done
}
# filter_lists: $TMP/allowed = the union of the unit's SystemCallFilter=
# allow lines, less every ~ line.
filter_lists() {
  local l w
  : >"$TMP/allow.raw"; : >"$TMP/deny.raw"
  while IFS= read -r l; do
    case $l in
      "~"*) for w in ${l#\~}; do expand "$w"; done >>"$TMP/deny.raw" ;;
      *) for w in $l; do expand "$w"; done >>"$TMP/allow.raw" ;;
    esac
  done < <(sed -n 's/^SystemCallFilter=//p' "$UNIT")
  sort -u "$TMP/deny.raw" >"$TMP/deny"
  sort -u "$TMP/allow.raw" | comm -23 - "$TMP/deny" >"$TMP/allowed"
  [ -s "$TMP/allowed" ]
}
check "the unit's SystemCallFilter expands (systemd-analyze syscall-filter)" filter_lists
: >"$TMP/daemon.log"
DPORT=$(free_port)
LOGCOUNTERD_OPTIONS="--pidfile $TMP/run/strace.pid --retain-records 5 --retain-interval 1s --prefetch auto --flush-interval 1"
unit_cmd "$DPORT"
LOGCOUNTERD_OPTIONS=""
# LeakSanitizer cannot run under ptrace (an AddressSanitizer build would
# exit 1 at its leak check): off for this run only.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
  strace -f -qq -o "$TMP/strace.out" "${CMD[@]}" 2>>"$TMP/daemon.log" &
SPID=$!; PIDS+=("$SPID")
wait_for "$TMP/daemon.log" ' ready: ' 20
SDPID=$(cat "$TMP/run/strace.pid" 2>/dev/null)
{
  printf 'incr s-a 1\r\nincr s-b 5\r\nincr tally:s-t 3\r\ndecr tally:s-t 1\r\nget s-a s-b tally:s-t\r\nstats\r\n'
  for ((i = 0; i < 50; i++)); do printf 'incr s-a 1\r\n'; done
  printf 'quit\r\n'
} | "$PY" -c '
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
c.sendall(sys.stdin.buffer.read())
while c.recv(65536):
    pass' "$DPORT" >/dev/null 2>&1
"$B/logcounter" --server "$TMP/run/admin.sock" verify s-a >"$TMP/admin.out" 2>&1; rc1=$?
"$B/logcounter" --server "$TMP/run/admin.sock" backup "$TMP/state/backup" >>"$TMP/admin.out" 2>&1; rc2=$?
sleep 1.5   # a retention run and a tally flush
[ -n "$SDPID" ] && kill -TERM "$SDPID"
wait "$SPID"; rc=$?
check "under strace: the unit's command line ran, verify and backup through its admin socket, exit 0" \
  eval '[ -n "$SDPID" ] && [ $rc1 = 0 ] && [ $rc2 = 0 ] && [ $rc = 0 ]'
{ [ $rc1 = 0 ] && [ $rc2 = 0 ]; } || cat "$TMP/admin.out"
sed -n 's/^[0-9][0-9]* \{1,\}\([a-z_0-9]*\)(.*/\1/p' "$TMP/strace.out" | sort -u >"$TMP/calls"
comm -23 "$TMP/calls" "$TMP/allowed" >"$TMP/outside"
echo "strace: $(wc -l <"$TMP/calls") distinct system calls; outside the filter: $(tr '\n' ' ' <"$TMP/outside")"
check "every system call made is allowed by the unit's SystemCallFilter" \
  eval '[ -s "$TMP/calls" ] && [ ! -s "$TMP/outside" ]'
fams=$(sed -n 's/^RestrictAddressFamilies=//p' "$UNIT")
used=$(grep -oE 'socket(pair)?\(AF_[A-Z0-9]+' "$TMP/strace.out" | sed 's/.*(//' | sort -u | tr '\n' ' ')
echo "socket families used: $used; allowed: $fams"
fam_ok() {
  local f
  [ -n "$used" ] || return 1
  for f in $used; do [[ " $fams " == *" $f "* ]] || return 1; done
}
check "every socket is of a family RestrictAddressFamilies allows" fam_ok
check "no mapping both writable and executable (MemoryDenyWriteExecute)" \
  eval '! grep -E "^[0-9]+ +(mmap|mprotect|pkey_mprotect)\(" "$TMP/strace.out" | grep -q "PROT_WRITE|PROT_EXEC"'
rm -rf "$TMP/state"/* "$TMP/run"/*

# ---- readiness ------------------------------------------------------------------
# ready_case SOCKET: READY=1 on SOCKET, the probe answered at that moment.
ready_case() {
  local sock=$1 what=$2
  : >"$TMP/daemon.log"
  DPORT=$(free_port)
  listen_start "$sock" "$TMP/notify.out" "$DPORT" 90
  unit_cmd "$DPORT"
  NOTIFY_SOCKET=$sock "${CMD[@]}" 2>>"$TMP/daemon.log" &
  DPID=$!; PIDS+=("$DPID")
  wait_for "$TMP/notify.out" '^probe: ' 20
  cat "$TMP/notify.out"
  check "$what: READY=1 with a STATUS= line naming the port" \
    grep -qE "^READY=1\|STATUS=ready: listening on 127.0.0.1:$DPORT" "$TMP/notify.out"
  check "$what: a client connecting on READY=1 is answered: VERSION, then an id" \
    grep -qE '^probe: VERSION [^|]*\|[0-9]+$' "$TMP/notify.out"
}
ready_case "$TMP/notify.sock" "path socket"
daemon_stop
check "path socket: SIGTERM, exit 0" [ "$RC" = 0 ]
wait "$NPID" 2>/dev/null
# ready_then_stopping: READY=1 first, then STOPPING=1, each once.
ready_then_stopping() {
  [ "$(grep -E '^(READY|STOPPING)=1' "$TMP/notify.out" | cut -c1-9 | tr '\n' ' ')" = "READY=1|S STOPPING= " ]
}
check "path socket: READY=1, then STOPPING=1, once each" ready_then_stopping

ready_case "@suite_systemd.$$" "abstract socket"
N1PID=$NPID
# the same log while it is held: no READY=1, exit 1
: >"$TMP/n2.out"
listen_start "$TMP/notify2.sock" "$TMP/n2.out" 1 30
N2PID=$NPID
P2=$(free_port)
unit_cmd "$P2"
NOTIFY_SOCKET=$TMP/notify2.sock timeout 30 "${CMD[@]}" 2>"$TMP/second.log"; rc=$?
cat "$TMP/second.log"
sleep 0.3
check "a second daemon on the held log: exit 1, names the log, no READY=1" \
  eval '[ $rc = 1 ] && grep -q "cannot open the log" "$TMP/second.log" && ! grep -q "READY=1" "$TMP/n2.out"'
NOTIFY_SOCKET=$TMP/notify2.sock "${CMD[@]}" --no-such-option 2>"$TMP/second.log"; rc=$?
sleep 0.3
check "a usage error: exit 2 (RestartPreventExitStatus=2), no READY=1" \
  eval '[ $rc = 2 ] && ! grep -q "READY=1" "$TMP/n2.out"'
kill "$N2PID" 2>/dev/null; wait "$N2PID" 2>/dev/null
NPID=$N1PID

# ---- SIGTERM while clients allocate -------------------------------------------------
"$PY" "$NOTIFY" alloc "$DPORT" drain-c 4 "$TMP/ids" 2>"$TMP/alloc.err" &
APID=$!; PIDS+=("$APID")
wait_for "$TMP/ids.0" '^[0-9]{3,}$' 20   # some hundreds answered
kill -TERM "$DPID"; wait "$DPID"; RC=$?
wait "$APID"
wait "$NPID" 2>/dev/null
cat "$TMP/ids.end" "$TMP/alloc.err" 2>/dev/null
tail -n 4 "$TMP/daemon.log"
check "SIGTERM during allocations: STOPPING=1 with a STATUS= line" \
  grep -qE '^STOPPING=1\|STATUS=SIGTERM: draining [1-9][0-9]* connections' "$TMP/notify.out"
check "SIGTERM during allocations: exit 0 after the drain, log closed" \
  eval '[ "$RC" = 0 ] && grep -q "log closed; exiting" "$TMP/daemon.log"'
check "every client was answered until the daemon closed it" \
  eval '[ "$(grep -cE "(closed|reset) by the daemon" "$TMP/ids.end")" = 4 ]'
check "abstract socket: READY=1, then STOPPING=1, once each" ready_then_stopping
cat "$TMP"/ids.[0-9] | sort -n >"$TMP/all"
n=$(wc -l <"$TMP/all"); last=$(tail -n 1 "$TMP/all")
echo "ids answered: $n, the last $last"
check "ids answered: many, each once" eval '[ "$n" -ge 100 ] && [ -z "$(uniq -d "$TMP/all")" ]'
mono() { awk 'NR > 1 && $1 <= p { exit 1 } { p = $1 }' "$1"; }
check "each connection's ids strictly increase" eval 'for f in "$TMP"/ids.[0-9]; do mono "$f" || exit 1; done'
# restarted: the counter stands at or above every id answered
listen_start "$TMP/notify.sock" "$TMP/notify.out" 1 30
daemon_start "$TMP/notify.sock"
check "restarted: READY=1" wait_for "$TMP/notify.out" '^READY=1' 20
exec 3<>"/dev/tcp/127.0.0.1/$DPORT"
printf 'get drain-c\r\nincr drain-c 1\r\n' >&3
v="" next=""
IFS= read -r -t 5 l <&3; IFS= read -r -t 5 v <&3; IFS= read -r -t 5 l <&3
IFS= read -r -t 5 next <&3
exec 3<&-
v=${v%$'\r'} next=${next%$'\r'}
echo "after the restart: the counter stands at $v, the next id $next"
check "after the restart: the last id answered ($last) <= the counter's value ($v) < the next id" \
  eval '[ -n "$last" ] && [ -n "$v" ] && [ "$last" -le "$v" ] && [ "$next" -gt "$v" ]'
daemon_stop
check "restarted daemon: SIGTERM, exit 0" [ "$RC" = 0 ]
wait "$NPID" 2>/dev/null

# ---- uninstall ---------------------------------------------------------------------
rm -rf "$D/usr/lib/systemd/system"
mk uninstall >"$TMP/make.out" 2>&1; rc=$?
check "make uninstall DESTDIR=...: the unit is gone (and the binaries)" \
  eval '[ $rc = 0 ] && [ ! -e "$UNIT" ] && [ ! -e "$D/usr/local/bin/logcounterd" ]'
grep -q "Sanitizer" "$TMP/daemon.log" && grep -A20 Sanitizer "$TMP/daemon.log" | head -40
check "no sanitizer report in the daemons' log" bash -c "! grep -Eq 'Sanitizer|runtime error' '$TMP/daemon.log'"
finish
