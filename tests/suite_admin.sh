#!/bin/bash
# suite_admin.sh - logcounterd as a service that is never stopped: the
# log's commands through its admin socket while 8 clients allocate
# (tests/daemon/admin_load.py), retention in the background, an online
# backup and the two ways of restoring it, and a dump of 1,000,000 records
# (divided by LC_TEST_SCALE) beside the allocating clients, whose largest
# wait is reported, never asserted.  Ends with "admin: N passed, M failed".
# shellcheck disable=SC2034
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd CLI=$B/logcounter PLANT=$B/tests/lc_plant
LOAD="/usr/bin/python3 tests/daemon/admin_load.py"
SUITE=admin
. tests/check.sh
SCALE=${LC_TEST_SCALE:-1}

for f in "$DAEMON" "$CLI" "$PLANT"; do
  [ -x "$f" ] || { echo "suite_admin: $f not built" >&2; failed=1; finish; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_admin.XXXXXX") || exit 1
DPID=""
cleanup() {
  [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MCPORT=$(tests/memcached.sh start "$TMP") ||
  { echo "suite_admin: no memcached" >&2; failed=1; finish; }
MC="--SERVER=127.0.0.1:$MCPORT"
ADMIN=$TMP/admin.sock
A() { "$CLI" --server "$ADMIN" "$@"; }

# start DB FLAGS...: logcounterd on $TMP/DB with the admin socket (DPID,
# DPORT); ready once the data port answers and the socket exists.
start() {
  local db=$1; shift
  DPORT=$(free_port) || return 1
  "$DAEMON" --db "$TMP/$db" --memcached "$MC" -l "127.0.0.1:$DPORT" --prefetch off \
    --admin-socket "$ADMIN" "$@" 2>>"$TMP/daemon.log" &
  DPID=$!
  for _ in $(seq 200); do
    kill -0 "$DPID" 2>/dev/null || return 1
    if [ -S "$ADMIN" ] && (exec 3<>"/dev/tcp/127.0.0.1/$DPORT") 2>/dev/null
    then return 0; fi
    sleep 0.05
  done
  return 1
}
stop() { # SIGTERM, or the signal given; waits
  kill "-${1:-TERM}" "$DPID" 2>/dev/null
  wait "$DPID" 2>/dev/null
  DPID=""
}
# ask LINE: one request on the data port, its first reply line in REPLY_LINE
ask() {
  exec 4<>"/dev/tcp/127.0.0.1/$DPORT" || return 1
  printf '%s\r\n' "$1" >&4
  IFS= read -r -t 5 REPLY_LINE <&4
  REPLY_LINE=${REPLY_LINE%$'\r'}
  exec 4>&-
}
mc_flush() {
  exec 5<>"/dev/tcp/127.0.0.1/$MCPORT" && printf 'flush_all\r\n' >&5 &&
    IFS= read -r -t 5 l <&5 && exec 5>&- && [[ $l == OK* ]]
}
# max_id FILE NAME: the largest id of NAME acknowledged in FILE
max_id() { awk -v n="$2" '$1 == n && $2 > m { m = $2 } END { print m + 0 }' "$1"; }
# behind: the last reply was SERVER_ERROR EBEHIND
behind() { [[ $REPLY_LINE == "SERVER_ERROR EBEHIND "* ]]; }
# exits CODE CMD...: true when CMD exits with CODE
exits() { local want=$1; shift; "$@" >/dev/null 2>&1; [ $? = "$want" ]; }
# next_above NAME V: one id through the admin socket; true when it is > V
next_above() { local v; v=$(A next "$1") && [ "$v" -gt "$2" ]; }

# ---- 1. every log command online, beside 8 allocating clients ----------
start online || { echo "suite_admin: the daemon did not start" >&2; cat "$TMP/daemon.log"; failed=1; finish; }
check "the admin socket is mode 0600" \
  test "$(stat -c %a "$ADMIN")" = 600
rm -f "$TMP/stop1"
$LOAD load "$DPORT" "$TMP/ids1" --names o1,o2 --conns 8 --seconds 60 \
  --stop "$TMP/stop1" >"$TMP/load1.json" &
LPID=$!
sleep 1
V=$(A next o1)
check "void through the admin socket while clients allocate" \
  A void o1 "$V" --reason "cancelled order"
check "the void shows in gaps" \
  bash -c "'$CLI' --server '$ADMIN' gaps o1 | grep -q '^$V .* void cancelled order\$'"
check "the void shows in dump" \
  bash -c "'$CLI' --server '$ADMIN' dump o1 | grep -q '^$V .*void cancelled order\$'"
check "a second void of it is refused (EVOIDED, exit 1)" \
  exits 1 A void o1 "$V" --reason again
check "verify through the admin socket while clients allocate" exits 0 A verify o1
check "verify --json says ok" \
  bash -c "'$CLI' --server '$ADMIN' verify --json o2 | grep -q '\"ok\":true'"
check "dump --json streams one object per record" \
  bash -c "[ \$('$CLI' --server '$ADMIN' dump --json o2 | grep -c '^{\"first\"') -gt 10 ]"
A prune o2 --keep 5 >"$TMP/prune.out" 2>&1
check "prune through the admin socket while clients allocate" \
  grep -q '^o2: deleted [1-9][0-9]* records, kept' "$TMP/prune.out"
check "advance, restore, release and adopt through the admin socket" \
  bash -c "'$CLI' --server '$ADMIN' advance o3 1000 && [ \$('$CLI' --server '$ADMIN' next o3) = 1000 ] && '$CLI' --server '$ADMIN' restore o3 >/dev/null && F=\$('$CLI' --server '$ADMIN' release o3) && [ \"\$F\" = 1000 ] && '$CLI' --server '$ADMIN' adopt o3 --above 2000 >/dev/null && [ \$('$CLI' --server '$ADMIN' next o3) = 2001 ]"
check "tally add, flush, get and list through the admin socket" \
  bash -c "'$CLI' --server '$ADMIN' tally add t1 7 >/dev/null && '$CLI' --server '$ADMIN' tally flush >/dev/null && '$CLI' --server '$ADMIN' tally get t1 | grep -q 'total 7' && '$CLI' --server '$ADMIN' tally list | grep -q '^t1 7\$'"
check "a usage error through the admin socket exits 2" exits 2 A prune o1
check "a bad name through the admin socket exits 2" exits 2 A verify 'bad name'
check "a runtime error through the admin socket exits 1 (ENOTISSUED)" \
  exits 1 A void o1 999999999 --reason never-issued
refused=0
for cmd in "void o1 1 x" "prune o1 1 0 0" "records o1" "ledger o1" \
           "release o1" "adopt o1 5" "advance o1 5" "restore o1" \
           "backup /tmp/x" "counters" "tally-flush 0 0" "hello" "verify o1" \
           "dump o1" "gaps o1"; do
  ask "$cmd" && [[ $REPLY_LINE == "CLIENT_ERROR admin commands are served on logcounterd's admin socket"* ]] ||
    { echo "# data port answered '$cmd' with '$REPLY_LINE'"; refused=1; }
done
check "the data port refuses every admin command with CLIENT_ERROR" test $refused = 0
# 20,000 (10,000 or more under LC_TEST_SCALE): the answers, about 10 bytes
# each, still overflow the admin connection's 64 KiB output buffer.
NPIPE=$((20000 / SCALE)); [ "$NPIPE" -lt 10000 ] && NPIPE=10000
check "$NPIPE requests pipelined on one admin connection, answered in order" \
  $LOAD pipe "$ADMIN" o4 "$NPIPE"
check "logcounter --server HOST:PORT refuses a log command before connecting" \
  bash -c "'$CLI' --server 127.0.0.1:$DPORT void o1 1 --reason x 2>&1 | grep -q 'admin socket'"
touch "$TMP/stop1"
wait $LPID
check "8 clients: every acknowledged id unique, none failed" test $? = 0
echo "# load: $(cat "$TMP/load1.json")"
for c in o1 o2 o3; do
  check "verify passes afterwards ($c)" exits 0 A verify "$c"
done
stop
check "the daemon removed its admin socket at exit" test ! -e "$ADMIN"

# ---- 2. retention: the record count stays under the policy -------------
# 20 s (10 s under LC_TEST_SCALE): 20 runs of the 1 s interval at some
# 10,000 ids/s, sampled every 2 s; a retention that falls behind shows in
# a few runs at that rate.
SOAK=$((20 / SCALE)); [ "$SOAK" -lt 10 ] && SOAK=10
start retain --retain-records 1000 --retain-interval 1s || { failed=$((failed + 1)); echo "FAIL - retention daemon"; }
$LOAD load "$DPORT" "$TMP/ids2" --names r1,r2 --conns 8 --seconds "$SOAK" >"$TMP/load2.json" &
LPID=$!
worst=0 samples=0 dump_failed=0
t0=$SECONDS
while kill -0 $LPID 2>/dev/null; do
  sleep 2
  # a sample counts only when the dump succeeded and showed records (a
  # failed dump would read as 0 records, the best case)
  if A dump r1 >"$TMP/soak.dump" 2>"$TMP/soak.err"; then
    n=$(grep -vc ' void\| burned\| restart\| unlogged\| advance\| segment-unused' "$TMP/soak.dump")
  else
    n=0
  fi
  if [ "$n" -gt 0 ]; then
    samples=$((samples + 1))
    [ "$n" -gt "$worst" ] && worst=$n
  else
    dump_failed=$((dump_failed + 1))
    echo "# soak: a dump of r1 failed or was empty: $(head -c 200 "$TMP/soak.err")"
  fi
done
wait $LPID; lrc=$?
secs=$((SECONDS - t0)); [ $secs -lt 1 ] && secs=1
ids=$(wc -l <"$TMP/ids2")
# one interval's worth of records of r1 (half the ids), twice for the time
# a run itself takes
allow=$((1000 + 2 * ids / secs / 2))
echo "# retention soak ${SOAK}s: $ids ids, $samples samples of r1, largest $worst records (allowed $allow)"
check "retention soak: 8 clients' ids unique" test $lrc = 0
check "retention soak: every dump of r1 succeeded and showed records ($dump_failed did not)" \
  test "$dump_failed" = 0 -a "$samples" -gt 0
check "retention soak: r1's records stay under 1000 + one interval's worth" \
  test "$samples" -gt 0 -a "$ids" -gt 0 -a "$worst" -le "$allow"
S=$(exec 4<>"/dev/tcp/127.0.0.1/$DPORT"; printf 'stats\r\n' >&4; timeout 5 sed -n '/^END/q;p' <&4)
check "stats counts retention runs and deletions" \
  bash -c "echo \"$S\" | grep -q 'STAT retain_runs [1-9]' && echo \"$S\" | grep -q 'STAT retain_records_deleted [1-9]'"
MAX=$(max_id "$TMP/ids2" r1)
mc_flush
check "after retention and flush_all, r1 goes on above every id ($MAX)" next_above r1 "$MAX"
check "verify passes after retention" exits 0 A verify r1
stop

# ---- 3. backup during load, and two restores -----------------------------
start bsrc || { failed=$((failed + 1)); echo "FAIL - backup daemon"; }
$LOAD load "$DPORT" "$TMP/ids3" --names b1,b2 --conns 8 --seconds 60 \
  --stop "$TMP/stop3" --tolerate >"$TMP/load3.json" &
LPID=$!
A tally add bt 5 >/dev/null && A tally flush >/dev/null
sleep 1
check "backup through the admin socket while clients allocate" \
  A backup "$TMP/bk"
A tally add bt 7 >/dev/null && A tally flush >/dev/null # after the copy
sleep 1
stop KILL   # the clients' connections drop: they stop
wait $LPID
cp -a "$TMP/bk" "$TMP/bk2"
MAX1=$(max_id "$TMP/ids3" b1) MAX2=$(max_id "$TMP/ids3" b2)
echo "# acknowledged up to b1=$MAX1 b2=$MAX2 ($(wc -l <"$TMP/ids3") ids; the copy was taken 1 s in)"
mv "$TMP/bk" "$TMP/brest"
start brest || { failed=$((failed + 1)); echo "FAIL - restored daemon"; }
ask "incr b1 1"
check "restored, memcached intact: b1 is refused while the original's claim holds it (EOWNED)" \
  eval '[[ $REPLY_LINE == "SERVER_ERROR EOWNED "* ]]'
check "adopt b1 and b2 (no --above) takes the original's claims over" \
  eval 'A adopt b1 && A adopt b2'
$LOAD load "$DPORT" "$TMP/ids3b" --names b1,b2 --conns 4 --seconds 2 >/dev/null
check "restored, memcached intact: b1 and b2 go on above every id acknowledged" \
  bash -c "[ \$(awk '\$1==\"b1\"' '$TMP/ids3b' | sort -k2n | head -1 | cut -d' ' -f2) -gt $MAX1 ] && [ \$(awk '\$1==\"b2\"' '$TMP/ids3b' | sort -k2n | head -1 | cut -d' ' -f2) -gt $MAX2 ]"
check "restored, memcached intact: a tally flushed after the copy keeps its total (12)" \
  bash -c "'$CLI' --server '$ADMIN' tally flush --sweep >/dev/null && '$CLI' --server '$ADMIN' tally get bt | grep -q 'total 12,'"
MAX1=$(max_id "$TMP/ids3b" b1)
stop
mc_flush
mv "$TMP/bk2" "$TMP/brest2"
start brest2 || { failed=$((failed + 1)); echo "FAIL - second restored daemon"; }
ask "incr b1 1"
check "restored, memcached flushed: b1 is refused (EBEHIND)" \
  behind
echo "# refused with: $REPLY_LINE"
check "adopt --above the last id acknowledged, through the admin socket" \
  A adopt b1 --above "$MAX1"
check "then b1 goes on above every id acknowledged ($MAX1)" next_above b1 "$MAX1"
ask "incr b2 1"
check "b2 stays refused until adopted" \
  behind
stop

# ---- 4. a dump of 1M records beside 8 allocating clients -----------------
N=$((1000000 / SCALE))
"$CLI" --db "$TMP/big" --memcached "$MC" next big >/dev/null &&
  "$PLANT" "$TMP/big" big 2 "$N" ||
  { failed=$((failed + 1)); echo "FAIL - planting $N records"; }
# --timeout 5000: a memcached incr starved of CPU for over a second (a
# loaded machine: CI beside other work) is not the dump's doing; the
# latencies are printed either way
start big --timeout 5000 || { failed=$((failed + 1)); echo "FAIL - big daemon"; }
$LOAD during "$DPORT" --names big --conns 8 --before 2 -- \
  "$CLI" --server "$ADMIN" dump big >"$TMP/during.json"
drc=$?
echo "# dump of $N records beside 8 clients: $(cat "$TMP/during.json")"
check "dump of $N records through the admin socket while 8 clients allocate" \
  test $drc = 0
check "the dump streamed every record" /usr/bin/python3 -c "
import json, sys
sys.exit(0 if json.load(open('$TMP/during.json'))['cmd_lines'] > $N else 1)"
$LOAD stall "$ADMIN" big 4 &
SPID=$!
sleep 1
check "an admin client that stops reading a dump: allocation goes on" \
  $LOAD load "$DPORT" "$TMP/ids4" --names big --conns 4 --seconds 2
check "... and other admin commands are answered" \
  bash -c "'$CLI' --server '$ADMIN' next big >/dev/null && '$CLI' --server '$ADMIN' gaps big >/dev/null"
wait $SPID
check "the stalled admin client ran and closed cleanly (exit 0)" test $? = 0
stop
finish
