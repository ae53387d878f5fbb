#!/bin/bash
# suite_standby.sh - the hot standby (promise P12) end to end: a
# primary logcounterd (--replication-listen) and a standby
# (--standby-of) on one memcached, 8 clients allocating through the
# primary and moving to the standby's port when the primary goes
# (tests/daemon/standby_load.py), and the promotion (logcounter --server
# ADMIN promote [--force]).
#   1. host loss: SIGKILL the primary, rm -rf its log, promote, the
#      clients go on through the standby; without and with --prefetch auto;
#      three tally writers beside them (6: every total is the sum of the
#      acknowledged changes after a flush)
#   2. host loss with memcached flushed before the promotion
#   3. partition: SIGSTOP the primary, promote, allocate; SIGCONT: the old
#      primary's ids stay below the new primary's, and it answers
#      SERVER_ERROR (connection kept) within a bounded number of requests;
#      without and with --prefetch auto
#   4. stale standby (--standby-mode preferred, standby stopped while the
#      primary goes on, primary killed): promote refuses (ESTALE), --force
#      promotes above every acknowledged id; the same in required mode,
#      where the standby missed nothing, with memcached flushed
#   5. catching up: the standby SIGKILLed and restarted under load
#      (preferred, then required mode: allocations resume once it is
#      back), and frozen (SIGSTOP) past --standby-timeout then resumed
#      (required), lag 0, SIGKILL the primary, flush memcached, promote
#      (preferred: --force if refused), verify, ids above all acknowledged
#   8. the replication secret (sc) and mutual TLS (tl): a standby without
#      either, or with another CA's certificate, never connects; 3 idle
#      connections held on the replication port (id), and 6 more that
#      send one byte and stall (it), delay neither a restarted standby's
#      sync nor new names (required mode)
#   7. the standby's data port: incr/decr SERVER_ERROR ESTANDBY, get and
#      stats work; the primary's stats say replication_standby sync
#   9. a call waiting for a segment fetch (the standby frozen) goes to a
#      worker: the loop answers another counter meanwhile (lw)
#   clients: logcounter --server A,B (the library's remote mode on two
#      daemons) reaches the primary past the standby, and the promoted
#      standby past the dead primary (in 1)
# Checks: no acknowledged id twice (per counter, across both daemons),
# each client's ids of a counter strictly increasing, `verify` on the new
# primary for every counter, a `failover` gap (with prefetch: or a
# segment-open one).  Timings (failover: SIGKILL to the first id the new
# primary acknowledged, the promote included; catch-up) are printed, never
# asserted.  LC_TEST_SCALE divides the id counts each phase waits for;
# LC_TEST_KEEP=1 keeps the temporary directory (daemon logs, id files);
# LC_STANDBY_ONLY="cp cr" runs only the scenarios named (h1 h2 h3 pt pp st
# sr cp cr cf sc id it tl lw).  Ends with "standby: N passed, M failed".
# shellcheck disable=SC2034,SC2317
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd CLI=$B/logcounter
LOAD() { /usr/bin/python3 tests/daemon/standby_load.py "$@"; }
SUITE=standby
. tests/check.sh
SCALE=${LC_TEST_SCALE:-1}
[ "$SCALE" -ge 1 ] 2>/dev/null || SCALE=1
BEFORE=$((3000 / SCALE))  # ids acknowledged by the primary before it goes
AFTER=$((1000 / SCALE))   # ... and by the new primary before the load stops
T_START=$SECONDS

for f in "$DAEMON" "$CLI"; do
  [ -x "$f" ] || { echo "suite_standby: $f not built" >&2; failed=1; finish; }
done
if ! "$DAEMON" --help 2>&1 | grep -q -- '--standby-of'; then
  echo "suite_standby: $DAEMON has no --standby-of (the hot standby is not built)" >&2
  failed=1; finish
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_standby.XXXXXX") || exit 1
declare -A PID=() PORT=()
cleanup() {
  local n
  for n in "${!PID[@]}"; do
    kill -CONT "${PID[$n]}" 2>/dev/null; kill -9 "${PID[$n]}" 2>/dev/null
  done
  tests/memcached.sh stop "$TMP" 2>/dev/null
  if [ "${LC_TEST_KEEP:-0}" = 1 ]; then echo "# kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
MCPORT=$(tests/memcached.sh start "$TMP") ||
  { echo "suite_standby: no memcached" >&2; failed=1; finish; }
MC="--SERVER=127.0.0.1:$MCPORT"

# ---- helpers ---------------------------------------------------------------

# want TAG: the scenario TAG runs (LC_STANDBY_ONLY="h1 pt ...": only those).
want() { [ -z "${LC_STANDBY_ONLY:-}" ] || [[ " $LC_STANDBY_ONLY " == *" $1 "* ]]; }

# setup_fail WHAT: a step the checks need did not work (counts as failed).
setup_fail() { failed=$((failed + 1)); echo "FAIL - $1"; }
# answers PORT: logcounterd answers "version" on PORT (within 2 s).
answers() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'version\r\n' >&3 &&
    IFS= read -r -t 2 l <&3 && [[ $l == VERSION* ]]) 2>/dev/null
}
# lcd N DB ARGS...: starts logcounterd N (pid PID[N], data port PORT[N],
# admin socket $TMP/N.sock, stderr >> $TMP/DB.log) on $TMP/DB; ready once
# its port answers and its admin socket exists.  SAME_PORT=1 reuses
# PORT[N]; LPFX=notls: keeps the data port plain beside --tls-cert.
lcd() {
  local n=$1 db=$2 port; shift 2
  if [ "${SAME_PORT:-0}" = 1 ] && [ -n "${PORT[$n]:-}" ]; then port=${PORT[$n]}
  else port=$(free_port) || return 1; fi
  rm -f "$TMP/$n.sock"   # left by a daemon that was killed
  echo "=== $(date -u +%T.%N) $DAEMON --db $TMP/$db -l 127.0.0.1:$port $*" >>"$TMP/$db.log"
  "$DAEMON" --db "$TMP/$db" --memcached "$MC" -l "${LPFX:-}127.0.0.1:$port" \
    --admin-socket "$TMP/$n.sock" "$@" 2>>"$TMP/$db.log" &
  PID[$n]=$! PORT[$n]=$port
  for _ in $(seq 200); do
    if ! kill -0 "${PID[$n]}" 2>/dev/null; then
      echo "# logcounterd $n exited:"; tail -n 5 "$TMP/$db.log" | sed 's/^/#   /'
      unset "PID[$n]"; return 1
    fi
    [ -S "$TMP/$n.sock" ] && answers "$port" && return 0
    sleep 0.05
  done
  echo "# logcounterd $n not ready after 10 s"; return 1
}
# down N [SIGNAL]: signals N (default TERM) and waits for it; RC = status.
down() {
  RC=""
  [ -n "${PID[$1]:-}" ] || return 0
  kill -CONT "${PID[$1]}" 2>/dev/null
  kill "-${2:-TERM}" "${PID[$1]}" 2>/dev/null
  wait "${PID[$1]}" 2>/dev/null; RC=$?
  unset "PID[$1]"
}
down_all() { local n; for n in "${!PID[@]}"; do down "$n" KILL; done; }
# A N ARGS...: logcounter through N's admin socket.
A() { local n=$1; shift; "$CLI" --server "$TMP/$n.sock" "$@"; }
# ask N LINE: one request on a new connection to N; REPLY_LINE = the first
# reply line; KEPT=1 when the connection then still answers "version".
ask() {
  REPLY_LINE="" KEPT=0
  exec 4<>"/dev/tcp/127.0.0.1/${PORT[$1]}" || return 1
  printf '%s\r\n' "$2" >&4
  IFS= read -r -t 5 REPLY_LINE <&4
  REPLY_LINE=${REPLY_LINE%$'\r'}
  local l=""
  printf 'version\r\n' >&4 && IFS= read -r -t 5 l <&4 && [[ $l == VERSION* ]] && KEPT=1
  exec 4>&-
}
# refused_standby N LINE: N answers LINE with SERVER_ERROR ESTANDBY and
# keeps the connection.
refused_standby() {
  ask "$1" "$2"
  echo "# $2 -> $REPLY_LINE"
  [[ $REPLY_LINE == "SERVER_ERROR ESTANDBY"* ]] && [ "$KEPT" = 1 ]
}
# getv N COUNTER: the value "get COUNTER" answers on N (empty if none).
getv() {
  local l v=""
  exec 4<>"/dev/tcp/127.0.0.1/${PORT[$1]}" || return 1
  printf 'get %s\r\n' "$2" >&4
  while IFS= read -r -t 5 l <&4; do
    l=${l%$'\r'}
    case $l in
      "VALUE $2 "*) IFS= read -r -t 5 v <&4; v=${v%$'\r'} ;;
      *) break ;;
    esac
  done
  exec 4>&-
  echo "$v"
}
# stat_of N KEY: the value of "STAT KEY" in N's stats (empty if absent or
# N does not answer within 3 s).
stat_of() {
  local l v=""
  exec 6<>"/dev/tcp/127.0.0.1/${PORT[$1]}" 2>/dev/null || return 1
  printf 'stats\r\n' >&6
  while IFS= read -r -t 3 l <&6; do
    l=${l%$'\r'}
    [ "$l" = END ] && break
    [[ $l == "STAT $2 "* ]] && v=${l#"STAT $2 "}
  done
  exec 6>&-
  echo "$v"
}
# show_repl N: N's replication_* stats on one line (for a failure).
show_repl() {
  local l out=""
  exec 6<>"/dev/tcp/127.0.0.1/${PORT[$1]}" 2>/dev/null || { echo "# $1: no answer"; return 0; }
  printf 'stats\r\n' >&6
  while IFS= read -r -t 3 l <&6; do
    l=${l%$'\r'}
    [ "$l" = END ] && break
    [[ $l == "STAT replication_"* ]] && out+=" ${l#STAT replication_}"
  done
  exec 6>&-
  echo "# $1 replication:$out"
}
# synced_or_show SECONDS: wait_stat p replication_standby sync, and on a
# failure show both daemons' replication stats.
synced_or_show() {
  wait_stat p replication_standby sync "$1" && return 0
  show_repl p; show_repl s; return 1
}
# wait_more N KEY V SECONDS: until N's STAT KEY is above V.
wait_more() {
  local end=$((SECONDS + $4)) v
  while :; do
    v=$(stat_of "$1" "$2")
    [ -n "$v" ] && [ "$v" -gt "$3" ] 2>/dev/null && return 0
    [ $SECONDS -ge $end ] && { echo "# $1: STAT $2 still '$v' after $4 s"; return 1; }
    sleep 0.1
  done
}
# stat_is N KEY VALUE
stat_is() {
  local v; v=$(stat_of "$1" "$2")
  [ "$v" = "$3" ] || { echo "# $1: STAT $2 is '$v', not '$3'"; return 1; }
}
# wait_stat N KEY VALUE SECONDS: until N's STAT KEY is VALUE; WAITED = the
# seconds it took.
# A STAT still absent after 3 s is not waited for any longer.
wait_stat() {
  local t0=$EPOCHREALTIME end=$((SECONDS + $4)) none=$((SECONDS + 3)) v=""
  while :; do
    v=$(stat_of "$1" "$2")
    [ "$v" = "$3" ] && break
    if [ $SECONDS -ge $end ] || { [ -z "$v" ] && [ $SECONDS -ge $none ]; }; then
      WAITED=$(since "$t0"); echo "# $1: STAT $2 still '$v' after ${WAITED}s"; return 1
    fi
    sleep 0.1
  done
  WAITED=$(since "$t0")
}
# since T: seconds from EPOCHREALTIME T to now.
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }
# count FILE PORT [AFTER]: ids in FILE acknowledged on PORT (after AFTER).
count() {
  awk -v p="$2" -v t="${3:-0}" '$4 == p && $5 > t { n++ } END { print n + 0 }' "$1" 2>/dev/null || echo 0
}
# wait_ids FILE PORT N SECONDS [AFTER]: until FILE has N ids from PORT.
wait_ids() {
  local end=$((SECONDS + $4))
  while [ "$(count "$1" "$2" "${5:-0}")" -lt "$3" ]; do
    [ $SECONDS -ge $end ] && { echo "# only $(count "$1" "$2" "${5:-0}") ids from port $2 after $4 s"; return 1; }
    sleep 0.1
  done
}
mc_flush() {
  local l=""
  exec 5<>"/dev/tcp/127.0.0.1/$MCPORT" && printf 'flush_all\r\n' >&5 &&
    IFS= read -r -t 5 l <&5; exec 5>&-
  [[ $l == OK* ]]
}
# names PREFIX N: PREFIXc00,PREFIXc01,...
names() { local i out=""; for ((i = 0; i < $2; i++)); do out+="${out:+,}$1c$(printf %02d $i)"; done; echo "$out"; }
# promote N ARGS...: PRC = its exit status, POUT = its output, PSECS = time.
promote() {
  local n=$1 t0=$EPOCHREALTIME; shift
  POUT=$("$CLI" --server "$TMP/$n.sock" promote "$@" 2>&1); PRC=$?
  PSECS=$(since "$t0")
  echo "# promote $* -> exit $PRC in ${PSECS}s: $(echo "$POUT" | head -n 3 | tr '\n' ' ')"
}
# not_standby N: N's replication_role is primary or alone (a promoted
# standby without --replication-listen has no standby of its own).
not_standby() {
  local v; v=$(stat_of "$1" replication_role)
  echo "# $1: replication_role $v"
  [ "$v" = primary ] || [ "$v" = alone ]
}
# verify_all N NAMES: `verify` exits 0 on N for every counter of NAMES.
verify_all() {
  local c bad=0
  for c in ${2//,/ }; do
    if ! A "$1" verify "$c" >"$TMP/verify.out" 2>&1; then
      bad=$((bad + 1))
      [ "$bad" = 1 ] && { echo "# verify $c:"; sed 's/^/#   /' "$TMP/verify.out"; A "$1" gaps "$c" 2>&1 | head -n 10 | sed 's/^/#   gaps: /'; }
    fi
  done
  [ "$bad" = 0 ] || echo "# verify failed for $bad counters"
  [ "$bad" = 0 ]
}
# gap_count N NAMES CAUSE: how many gaps with CAUSE N lists.
gap_count() {
  local c n=0 k
  for c in ${2//,/ }; do
    k=$(A "$1" gaps "$c" 2>/dev/null | awk -v w="$3" '$4 == w' | wc -l)
    n=$((n + k))
  done
  echo "$n"
}
failover_gaps() { gap_count "$1" "$2" failover; }
# has_both FILE P1 P2: FILE holds ids from both ports.
has_both() { [ "$(count "$1" "$2")" -gt 0 ] && [ "$(count "$1" "$3")" -gt 0 ]; }
# tallies_ok N FILE TALLIES: flush on N, then every durable total equals
# the acknowledged changes of FILE (plus some of those whose fate is
# unknown), and nothing is left pending.
tallies_ok() {
  local t args=() j tot pend bad=0
  A "$1" tally flush >/dev/null || { echo "# tally flush failed"; return 1; }
  for t in ${3//,/ }; do
    j=$(A "$1" --json tally get "$t") || { echo "# tally get $t failed"; return 1; }
    tot=$(echo "$j" | sed -n 's/.*"total":\(-\{0,1\}[0-9]*\).*/\1/p')
    pend=$(echo "$j" | sed -n 's/.*"pending":\(-\{0,1\}[0-9]*\).*/\1/p')
    echo "# tally $j"
    [ "$pend" = 0 ] || bad=1
    args+=("$t=$tot")
  done
  LOAD tallies "$2" "${args[@]}" || bad=1
  [ "$bad" = 0 ]
}

# ---- 1, 2, 6, 7: host loss -------------------------------------------------
# hostloss TAG FLUSH TALLIES ARGS...: primary and standby with ARGS, 8
# clients on 20 counters (and 3 tally writers if TALLIES=1); SIGKILL the
# primary, rm -rf its log, (FLUSH=1: flush_all memcached,) promote.
# after_promotion TAG IDS...: 1 s of load on the promoted standby (s) on
# the caller's $names: it allocates, its ids are above every id in the
# IDS files, none repeats, verify passes; then every daemon is stopped.
after_promotion() {
  local tag=$1 out=$TMP/$1.after lrc
  shift
  LOAD load "$out" --ports "${PORT[s]}" --names "$names" --conns 4 --seconds 1 \
    --tag z. >"$out.json"; lrc=$?
  echo "# $tag: after promotion: $(cat "$out.json")"
  check "$tag: the promoted standby allocates" test "$lrc" = 0
  check "$tag: its ids are above every id acknowledged before" \
    LOAD order "$@" -- "$out"
  check "$tag: no id twice, each client's ids increase" LOAD check "$@" "$out"
  check "$tag: verify passes on the promoted standby" verify_all s "$names"
  down_all
}

hostloss() {
  local tag=$1 flush=$2 tal=$3; shift 3
  local names R ids=$TMP/$tag.ids tf=$TMP/$tag.tally stopf=$TMP/$tag.stop
  local tallies="${tag}t0,${tag}t1,${tag}t2" targs=() lp lrc T0 fo
  names=$(names "$tag" 20)
  R=$(free_port)
  echo "# --- $tag: host loss (${*:-no options}; memcached flushed: $flush; tallies: $tal)"
  lcd p "$tag-p" --replication-listen "127.0.0.1:$R" "$@" || { setup_fail "$tag: the primary starts"; return; }
  lcd s "$tag-s" --standby-of "127.0.0.1:$R" "$@" || { setup_fail "$tag: the standby starts"; down_all; return; }
  check "$tag: the primary's stats say replication_standby sync once the standby is there" \
    wait_stat p replication_standby sync 15
  echo "# $tag: standby in sync ${WAITED}s after it started"
  if [ "$tag" = h1 ]; then
    check "7: the primary's stats say replication_role primary" stat_is p replication_role primary
    check "7: the standby's stats say replication_role standby" stat_is s replication_role standby
    check "7: the standby's stats say replication_connected 1" stat_is s replication_connected 1
    check "7: the standby's stats say replication_stale 0" stat_is s replication_stale 0
    check "7: the standby's stats have replication_lag_records and replication_lag_seconds" \
      bash -c "[ -n '$(stat_of s replication_lag_records)' ] && [ -n '$(stat_of s replication_lag_seconds)' ]"
  fi
  [ "$tal" = 1 ] && targs=(--tallies "$tallies" --tally-conns 3 --tally-out "$tf")
  LOAD load "$ids" --ports "${PORT[p]},${PORT[s]}" --names "$names" --conns 8 \
    --seconds 120 --stop "$stopf" --tag "$tag." "${targs[@]}" >"$TMP/$tag.load.json" &
  lp=$!
  check "$tag: the clients allocate through the primary ($BEFORE ids)" \
    wait_ids "$ids" "${PORT[p]}" "$BEFORE" 30
  if [ "$tag" = h1 ]; then
    check "7: the standby refuses incr of a counter (ESTANDBY, connection kept)" \
      refused_standby s "incr ${tag}c00 1"
    check "7: the standby refuses incr of a tally (ESTANDBY)" \
      refused_standby s "incr tally:${tag}t0 1"
    check "7: the standby refuses decr of a tally (ESTANDBY)" \
      refused_standby s "decr tally:${tag}t0 1"
    check "7: the standby refuses a new counter too (ESTANDBY)" \
      refused_standby s "incr ${tag}fresh 1"
    sleep 0.3   # the standby's copy follows
    v=$(getv s "${tag}c00")
    echo "# 7: get ${tag}c00 on the standby: '$v' (the primary: '$(getv p "${tag}c00")')"
    check "7: get on the standby answers the counter's value" \
      bash -c "[ -n '$v' ] && [ '$v' -gt 0 ]"
    check "7: stats on the standby answer while the primary allocates" \
      bash -c "[ -n '$(stat_of s replication_lag_records)' ]"
    echo "# 7: standby lag under load: $(stat_of s replication_lag_records) records, $(stat_of s replication_lag_seconds) s"
  fi
  local oldp=${PORT[p]} va="" vb=""
  if [ "$tag" = h1 ]; then # the library's remote mode on two addresses
    va=$("$CLI" --server "127.0.0.1:${PORT[s]},127.0.0.1:$oldp" next "${tag}cli" 2>&1)
    check "clients: logcounter --server STANDBY,PRIMARY next: the standby refuses, the primary answers ($va)" \
      bash -c "[[ '$va' =~ ^[0-9]+$ ]] && [ '$va' -ge 1 ]"
  fi
  T0=$EPOCHREALTIME
  down p KILL
  rm -rf "${TMP:?}/$tag-p"
  if [ "$flush" = 1 ]; then check "$tag: memcached flushed after the kill" mc_flush; fi
  promote s
  check "$tag: promote exits 0" test "$PRC" = 0
  if [ "$tag" = h1 ]; then
    vb=$("$CLI" --server "127.0.0.1:$oldp,127.0.0.1:${PORT[s]}" next "${tag}cli" 2>&1)
    check "clients: logcounter --server DEAD_PRIMARY,PROMOTED next goes on above ($va, then $vb)" \
      bash -c "[[ '$vb' =~ ^[0-9]+$ ]] && [ '$vb' -gt '${va:-0}' ]"
  fi
  check "$tag: the clients go on through the standby's port ($AFTER ids)" \
    wait_ids "$ids" "${PORT[s]}" "$AFTER" 20
  fo=$(LOAD first "$ids" "${PORT[s]}" "$T0") && fo+=s
  echo "# $tag: FAILOVER ${fo} from SIGKILL to the first id from the new primary (promote took ${PSECS}s)"
  touch "$stopf"
  wait "$lp"; lrc=$?
  echo "# $tag load: $(cat "$TMP/$tag.load.json")"
  check "$tag: the load: no id twice, every reply a number or a SERVER_ERROR" test "$lrc" = 0
  check "$tag: ids acknowledged by both daemons" has_both "$ids" "${PORT[p]:-0}" "${PORT[s]}"
  check "$tag: no acknowledged id repeats, each client's ids of a counter increase" \
    LOAD check "$ids"
  check "$tag: every id of the new primary is above every id of the old one" \
    LOAD order "$ids@${PORT[p]}" -- "$ids@${PORT[s]}"
  check "$tag: verify passes on the new primary for all 20 counters" verify_all s "$names"
  local g so; g=$(failover_gaps s "$names")
  if [[ " $* " != *" --prefetch off "* ]]; then # the default prefetches
    # With prefetch the old primary's skipped ids are the unused rest of
    # its open segments (explained as segment-open); the new primary goes
    # on above the last segment, so a failover gap may be empty.
    so=$(gap_count s "$names" segment-open)
    echo "# $tag: $g failover gaps, $so segment-open gaps"
    check "$tag: at least one failover or segment-open gap" test $((g + so)) -gt 0
  else
    echo "# $tag: $g failover gaps"
    check "$tag: at least one failover gap" test "$g" -gt 0
  fi
  check "$tag: the promoted daemon's stats no longer say replication_role standby" \
    not_standby s
  if [ "$tal" = 1 ]; then
    check "6 ($tag): every tally total is the sum of its acknowledged changes after a flush" \
      tallies_ok s "$tf" "$tallies"
  fi
  down s TERM
  check "$tag: the promoted daemon exits 0 at SIGTERM" test "$RC" = 0
  down_all
}

want h1 && hostloss h1 0 1 --prefetch off
want h2 && hostloss h2 0 1 --prefetch auto
want h3 && hostloss h3 1 0 --prefetch off
echo "# ($((SECONDS - T_START))s so far)"

# ---- 3: partition --------------------------------------------------------
# partition TAG MAX ARGS...: both daemons with ARGS; the old primary,
# resumed, must refuse within MAX requests of a counter.
partition() {
  local tag=$1 max=$2; shift 2
  local names R ids=$TMP/$tag.ids stopf=$TMP/$tag.stop lp lrc T0 fo prc
  local old=$TMP/$tag.old old2=$TMP/$tag.old2
  names=$(names "$tag" 8)
  R=$(free_port)
  echo "# --- $tag: partition (SIGSTOP the primary, promote, SIGCONT; ${*:-no options})"
  lcd p "$tag-p" --replication-listen "127.0.0.1:$R" --standby-timeout 1s "$@" ||
    { setup_fail "$tag: the primary starts"; return; }
  lcd s "$tag-s" --standby-of "127.0.0.1:$R" "$@" || { setup_fail "$tag: the standby starts"; down_all; return; }
  wait_stat p replication_standby sync 15 || echo "# $tag: standby not in sync"
  LOAD load "$ids" --ports "${PORT[p]},${PORT[s]}" --names "$names" --conns 8 \
    --seconds 120 --timeout 1 --stop "$stopf" --tag "$tag." >"$TMP/$tag.load.json" &
  lp=$!
  wait_ids "$ids" "${PORT[p]}" "$BEFORE" 30 || setup_fail "$tag: ids from the primary"
  kill -STOP "${PID[p]}"; T0=$EPOCHREALTIME
  promote s
  check "$tag: promote, the old primary stopped, exits 0" test "$PRC" = 0
  check "$tag: the clients go on through the new primary ($AFTER ids)" \
    wait_ids "$ids" "${PORT[s]}" "$AFTER" 20
  fo=$(LOAD first "$ids" "${PORT[s]}" "$T0") && fo+=s
  echo "# $tag: SIGSTOP to the first id from the new primary: ${fo} (clients give up on the old one after 1 s; promote took ${PSECS}s)"
  kill -CONT "${PID[p]}"
  # The old primary, resumed, while the clients go on allocating from the
  # new one: counters of the load, and a new name.
  LOAD probe "${PORT[p]}" "$old" --names "${tag}c00,${tag}c01,${tag}new" \
    --max "$max" --tag old >"$TMP/$tag.probe.json"; prc=$?
  echo "# $tag: the old primary after SIGCONT: $(cat "$TMP/$tag.probe.json")"
  check "$tag: the old primary answers SERVER_ERROR within $max requests of each counter, connection kept" \
    test "$prc" = 0
  check "$tag: the old primary is still running" kill -0 "${PID[p]}"
  LOAD probe "${PORT[p]}" "$old2" --names "${tag}c02,${tag}c00" --max "$max" --tag old2 \
    >"$TMP/$tag.probe2.json"; prc=$?
  echo "# $tag: again: $(cat "$TMP/$tag.probe2.json")"
  check "$tag: ... and goes on refusing (no id of ${tag}c00 the second time)" \
    bash -c "[ $prc = 0 ] && ! grep -q '^${tag}c00 ' '$old2'"
  local n0; n0=$(count "$ids" "${PORT[s]}")
  wait_ids "$ids" "${PORT[s]}" $((n0 + AFTER)) 20 || echo "# $tag: the new primary stalled after SIGCONT"
  touch "$stopf"
  wait "$lp"; lrc=$?
  echo "# $tag load: $(cat "$TMP/$tag.load.json")"
  check "$tag: the load: no id twice, every reply a number or a SERVER_ERROR" test "$lrc" = 0
  check "$tag: no id twice across both daemons, each client's ids increase" \
    LOAD check "$ids" "$old" "$old2"
  echo "# $tag: the old primary acknowledged $(cat "$old" "$old2" | wc -l) ids after SIGCONT"
  check "$tag: every id the old primary acknowledged after SIGCONT is below every id of the new one" \
    LOAD order --allow-none "$old" "$old2" -- "$ids@${PORT[s]}"
  check "$tag: every id of the old primary is below every id of the new one" \
    LOAD order "$ids@${PORT[p]}" "$old" "$old2" -- "$ids@${PORT[s]}"
  check "$tag: verify passes on the new primary" verify_all s "$names"
  echo "# $tag: the old primary's last log lines:"; tail -n 3 "$TMP/$tag-p.log" | cut -c1-200 | sed 's/^/#   /'
  down_all
}
want pt && partition pt 3000 --prefetch off
# With prefetch the old primary still holds up to two segments it may
# hand out after SIGCONT (all below the new primary's ids).
want pp && partition pp 50000 --prefetch auto
echo "# ($((SECONDS - T_START))s so far)"

# ---- 4: a stale standby ---------------------------------------------------
# stale MODE: the standby stopped (SIGTERM) while the primary goes on,
# then the primary killed, the standby restarted alone.  preferred: it is
# stale (promote refused, --force promotes above everything); required:
# the primary waited for it, so it holds every floor: promoted (with
# --force only if it refuses), memcached flushed, above everything.
stale() {
  local mode=$1 tag=$2 names R lrc
  names=$(names "$tag" 4)
  R=$(free_port)
  echo "# --- $tag: the standby stopped while a $mode primary goes on"
  lcd p "$tag-p" --replication-listen "127.0.0.1:$R" --standby-mode "$mode" ||
    { setup_fail "$tag: the primary starts"; return; }
  lcd s "$tag-s" --standby-of "127.0.0.1:$R" || { setup_fail "$tag: the standby starts"; down_all; return; }
  wait_stat p replication_standby sync 15 || echo "# $tag: standby not in sync"
  LOAD load "$TMP/$tag.a" --ports "${PORT[p]}" --names "$names" --conns 4 --seconds 1 \
    --tag a. >"$TMP/$tag.a.json" || setup_fail "$tag: allocation with the standby"
  down s TERM
  check "$tag: the standby exits 0 at SIGTERM" test "$RC" = 0
  local until=()   # required: until its window is used up (at most 20 s)
  [ "$mode" = required ] && until=(--seconds 20 --stop-on ENOSTANDBY)
  LOAD load "$TMP/$tag.b" --ports "${PORT[p]}" --names "$names" --conns 4 --seconds 3 \
    "${until[@]}" --tag b. >"$TMP/$tag.b.json"; lrc=$?
  echo "# $tag: the primary alone: $(cat "$TMP/$tag.b.json")"
  if [ "$mode" = preferred ]; then
    check "$tag: the preferred primary goes on allocating alone" \
      bash -c "[ $lrc = 0 ] && [ \$(wc -l <'$TMP/$tag.b') -ge $((AFTER / 2)) ]"
    check "$tag: the primary's stats say replication_standby none" stat_is p replication_standby none
  else
    check "$tag: the required primary refuses with SERVER_ERROR ENOSTANDBY once its window is used" \
      grep -q '"ENOSTANDBY"' "$TMP/$tag.b.json"
  fi
  down p KILL
  SAME_PORT=1 lcd s "$tag-s" --standby-of "127.0.0.1:$R" ||
    { setup_fail "$tag: the standby restarts without its primary"; down_all; return; }
  check "$tag: the restarted standby: replication_connected 0" stat_is s replication_connected 0
  if [ "$mode" = preferred ]; then
    check "$tag: the restarted standby: replication_stale 1" stat_is s replication_stale 1
    promote s
    check "4: promote of a stale standby is refused: exit 1" test "$PRC" = 1
    check "4: ... and the refusal names ESTALE" grep -q ESTALE <<<"$POUT"
    check "4: ... and it still refuses allocations (ESTANDBY)" refused_standby s "incr ${tag}c00 1"
    promote s --force
    check "4: promote --force exits 0" test "$PRC" = 0
  else
    echo "# $tag: the restarted standby: replication_stale $(stat_of s replication_stale)"
    check "$tag: memcached flushed: the standby's log is the only floor" mc_flush
    promote s
    [ "$PRC" = 0 ] || { echo "# $tag: refused; promote --force"; promote s --force; }
    check "$tag: promoted" test "$PRC" = 0
  fi
  after_promotion "$tag" "$TMP/$tag.a" "$TMP/$tag.b"
}
want st && stale preferred st
want sr && stale required sr
echo "# ($((SECONDS - T_START))s so far)"

# ---- 5: catching up ------------------------------------------------------
# catchup MODE TAG HOW: HOW=kill: the standby SIGKILLed and restarted;
# HOW=stop: frozen (SIGSTOP) past --standby-timeout, then SIGCONT (the
# primary gives it up while a floor waits for its acknowledgment).
catchup() {
  local mode=$1 tag=$2 how=$3 names R ids=$TMP/$2.ids stopf=$TMP/$2.stop lp lrc TR
  names=$(names "$tag" 4)
  R=$(free_port)
  local what="SIGKILLed and restarted"
  [ "$how" = stop ] && what="frozen (SIGSTOP) past --standby-timeout and resumed"
  echo "# --- $tag: the standby $what under load ($mode)"
  lcd p "$tag-p" --replication-listen "127.0.0.1:$R" --standby-mode "$mode" ||
    { setup_fail "$tag: the primary starts"; return; }
  lcd s "$tag-s" --standby-of "127.0.0.1:$R" || { setup_fail "$tag: the standby starts"; down_all; return; }
  wait_stat p replication_standby sync 15 || echo "# $tag: standby not in sync"
  LOAD load "$ids" --ports "${PORT[p]}" --names "$names" --conns 8 --seconds 120 \
    --stop "$stopf" --tag "$tag." >"$TMP/$tag.load.json" &
  lp=$!
  wait_ids "$ids" "${PORT[p]}" "$BEFORE" 30 || setup_fail "$tag: ids from the primary"
  local nd
  if [ "$how" = kill ]; then
    local at0; at0=$(stat_of p replication_ack_timeouts)
    down s KILL
    sleep 1
    local t1=$EPOCHREALTIME v1
    v1=$(stat_of p replication_standby)
    echo "# $tag: stats on the primary while its standby is away: '$v1' in $(since "$t1")s"
    sleep 1.5
    # required: until a floor has waited for it in vain (a window ran out)
    [ "$mode" = required ] && wait_more p replication_ack_timeouts "${at0:-0}" 15
    nd=$(count "$ids" "${PORT[p]}")
    SAME_PORT=1 lcd s "$tag-s" --standby-of "127.0.0.1:$R" ||
      { setup_fail "$tag: the standby restarts"; touch "$stopf"; wait "$lp"; down_all; return; }
  else
    local at0; at0=$(stat_of p replication_ack_timeouts)
    kill -STOP "${PID[s]}"
    sleep 1
    local t1=$EPOCHREALTIME v1
    v1=$(stat_of p replication_standby)
    echo "# $tag: stats on the primary while floors wait for the frozen standby: '$v1' in $(since "$t1")s"
    sleep 1.5
    # until a floor has waited for it in vain (--standby-timeout 2s)
    wait_more p replication_ack_timeouts "${at0:-0}" 15
    nd=$(count "$ids" "${PORT[p]}")
    kill -CONT "${PID[s]}"
  fi
  TR=$EPOCHREALTIME
  check "$tag: the restarted standby catches up while the primary allocates (replication_standby sync)" \
    synced_or_show 15
  echo "# $tag: CATCH-UP: the primary saw its standby in sync ${WAITED}s after the restart"
  if wait_stat s replication_lag_records 0 5; then
    echo "# $tag: lag 0 under load $(since "$TR")s after the restart"
  else echo "# $tag: lag never 0 under load within 5 s (not asserted)"; fi
  check "$tag: allocations go on once the standby is back" \
    wait_ids "$ids" "${PORT[p]}" "$AFTER" 10 "$TR"
  touch "$stopf"
  wait "$lp"; lrc=$?
  echo "# $tag load: $(cat "$TMP/$tag.load.json") ($nd ids before the restart)"
  check "$tag: the load: no id twice, every reply a number or a SERVER_ERROR" test "$lrc" = 0
  if [ "$mode" = required ]; then
    check "$tag: without its standby the required primary answered SERVER_ERROR ENOSTANDBY" \
      grep -q '"ENOSTANDBY"' "$TMP/$tag.load.json"
  fi
  check "$tag: replication_lag_records 0 once the load stopped" \
    wait_stat s replication_lag_records 0 10
  echo "# $tag: lag 0 $(since "$TR")s after the restart"
  if [ "$mode" = required ]; then
    check "$tag: replication_stale 0" stat_is s replication_stale 0
  else # preferred: the primary may go on alone without it, at any time
    check "$tag: replication_stale 1 (preferred mode)" stat_is s replication_stale 1
  fi
  down p KILL
  echo "# $tag: the primary killed: the standby says replication_stale $(stat_of s replication_stale)"
  check "$tag: memcached flushed: the standby's log is the only floor" mc_flush
  promote s
  if [ "$mode" = preferred ]; then
    # docs/operations.md: a standby of a preferred primary that has lost it cannot
    # know whether it went on alone; it is promoted with --force (and
    # here without --above: its log, caught up, must cover every id).
    [ "$PRC" = 1 ] && promote s --force
    check "$tag: promote (--force if refused: its primary was preferred) exits 0" test "$PRC" = 0
  else
    check "$tag: promote (not stale: the primary waited for it) exits 0" test "$PRC" = 0
  fi
  after_promotion "$tag" "$ids"
}
# ---- the replication secret ---------------------------------------------------
# sc: a primary with --replication-secret-file; a standby with another
# secret is refused (never connected, the primary stays without one), one
# with the same secret reaches sync while a client allocates.
secret_scenario() {
  local tag=sc R; R=$(free_port) || { setup_fail "$tag: a port"; return; }
  (umask 077; printf 'correct horse\n' >"$TMP/secret.ok"
   printf 'wrong horse\n' >"$TMP/secret.bad")
  lcd p "$tag-p" --replication-listen "127.0.0.1:$R" --standby-mode preferred \
    --replication-secret-file "$TMP/secret.ok" || { setup_fail "$tag: the primary starts"; return; }
  lcd s "$tag-s1" --standby-of "127.0.0.1:$R" --replication-secret-file "$TMP/secret.bad" ||
    { setup_fail "$tag: the standby starts"; return; }
  sleep 1.5
  check "$tag: a standby with the wrong secret never connects" stat_is s replication_connected 0
  check "$tag: ... and the primary has no standby" stat_is p replication_state none
  grep -q "correct horse\|wrong horse" "$TMP/$tag-p.log" "$TMP/$tag-s1.log" &&
    setup_fail "$tag: a secret appears in a log"
  down s KILL
  lcd s "$tag-s2" --standby-of "127.0.0.1:$R" --replication-secret-file "$TMP/secret.ok" ||
    { setup_fail "$tag: the second standby starts"; return; }
  check "$tag: with the same secret it reaches sync" wait_stat p replication_state sync 10
  ask p "incr sc-x 1"
  check "$tag: the primary allocates with its standby ($REPLY_LINE)" test "$REPLY_LINE" = 1
  check "$tag: stats settings says a secret is set, never which" \
    bash -c "printf 'stats settings\r\nquit\r\n' | timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/${PORT[p]}; cat >&3; cat <&3' | grep -q 'STAT replication_secret yes'"
  down_all
}
want sc && secret_scenario

# id: idle connections to the replication port (issue 38).  3 TCP
# connections that say nothing, each opened again as soon as it is
# closed, held while the standby of a --standby-mode required primary
# restarts: the restarted standby still reaches sync and new names
# allocate (before: the primary served the idle ones first, counted each
# as a standby catching up for 5 s, and every new name failed with
# ENOSTANDBY for the whole attack).  it: the same with 4 connections more
# that each send a hello one byte a second (before: the primary served
# connections one at a time on one thread, the timeout was per byte, and
# the first such connection held it, the standby waiting behind, for as
# long as it went on).
idle_scenario() {
  local tag=$1 trickle=$2 R; R=$(free_port) || { setup_fail "$tag: a port"; return; }
  lcd p "$tag-p" --replication-listen "127.0.0.1:$R" --standby-mode required ||
    { setup_fail "$tag: the primary starts"; return; }
  lcd s "$tag-s" --standby-of "127.0.0.1:$R" || { setup_fail "$tag: the standby starts"; return; }
  wait_stat p replication_state sync 10 || { setup_fail "$tag: first sync"; down_all; return; }
  rm -f "$TMP/$tag.stop"
  /usr/bin/python3 - "$R" "$TMP/$tag.stop" "$trickle" >"$TMP/$tag.idle" 2>&1 <<'PY' &
import os, select, socket, sys, time
port, stop, trickle = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
frame = b"h\x00\x00\x10\x00" + b"1" * 4096
held, slow, opened, last = [], {}, 0, 0.0
while not os.path.exists(stop):
    if len(held) < 3 + trickle:  # one at a time, the trickle going on
        try:
            c = socket.create_connection(("127.0.0.1", port), 0.2)
            held.append(c)
            if len(held) > 3:
                slow[c] = 0
            opened += 1
        except OSError:  # the backlog full: again later
            pass
    if time.time() - last >= 1:  # a byte of a 4 KiB hello frame from each
        last = time.time()
        for c in slow:
            try:
                c.send(frame[slow[c]:slow[c] + 1])
                slow[c] += 1
            except OSError:
                pass
    rd, _, _ = select.select(held, [], [], 0.05)
    for s in rd:  # closed by the primary: open another at once
        held.remove(s)
        slow.pop(s, None)
        s.close()
print("idle connections opened: %d" % opened)
PY
  local apid=$!
  sleep 2   # the attack under way
  down s KILL
  SAME_PORT=1 lcd s "$tag-s" --standby-of "127.0.0.1:$R" ||
    { setup_fail "$tag: the standby restarts"; touch "$TMP/$tag.stop"; wait "$apid"; down_all; return; }
  check "$tag: 3 idle and $trickle stalled replication connections held: the restarted standby reaches sync" \
    synced_or_show 10
  local i ok_n=0
  for i in 1 2 3 4 5; do
    ask p "incr $tag-new$i 1"
    [ "$REPLY_LINE" = 1 ] && ok_n=$((ok_n + 1))
  done
  check "$tag: ... and new names allocate meanwhile ($ok_n of 5; last: $REPLY_LINE)" test "$ok_n" = 5
  touch "$TMP/$tag.stop"; wait "$apid"
  sed 's/^/# /' "$TMP/$tag.idle"
  down_all
}
want id && idle_scenario id 0
want it && idle_scenario it 4

# Replication over mutual TLS (src/repl/wire_tls.c): the daemons' --tls-cert,
# --tls-key and --tls-ca.  A standby whose certificate another CA signed,
# and one without TLS, never connect; one with a certificate of the CA
# reaches sync, and what the primary allocated is above on the promoted
# standby.
tls_scenario() {
  local tag=tl R; R=$(free_port) || { setup_fail "$tag: a port"; return; }
  command -v openssl >/dev/null || { setup_fail "$tag: no openssl command"; return; }
  . tests/tls_certs.sh
  (TMP=$TMP/rogue && mkdir -p "$TMP" && make_certs rogue) && make_certs prim stby ||
    { setup_fail "$tag: the test certificates"; return; }
  local -a pt=(--tls-cert "$TMP/prim.pem" --tls-key "$TMP/prim.key" --tls-ca "$TMP/ca.pem")
  "$DAEMON" --db "$TMP/$tag-u" --memcached "$MC" --replication-listen "0.0.0.0:$R" \
    >/dev/null 2>"$TMP/$tag-u.err"; local urc=$?
  check "$tag: a non-loopback --replication-listen without secret or mutual TLS: exit 2" \
    eval '[ "$urc" = 2 ] && grep -q "without --replication-secret-file or mutual TLS" "$TMP/$tag-u.err"'
  LPFX=notls: lcd p "$tag-p" --replication-listen "127.0.0.1:$R" --standby-mode required \
    "${pt[@]}" || { setup_fail "$tag: the primary starts"; return; }
  LPFX=notls: lcd s "$tag-s1" --standby-of "127.0.0.1:$R" --tls-cert "$TMP/rogue/rogue.pem" \
    --tls-key "$TMP/rogue/rogue.key" --tls-ca "$TMP/ca.pem" ||
    { setup_fail "$tag: the rogue standby starts"; return; }
  sleep 1.5
  check "$tag: a standby whose certificate another CA signed never connects" \
    stat_is s replication_connected 0
  check "$tag: ... and the primary has no standby" stat_is p replication_state none
  down s KILL
  lcd s "$tag-s2" --standby-of "127.0.0.1:$R" || { setup_fail "$tag: the plain standby starts"; return; }
  sleep 1.5
  check "$tag: a standby without TLS never connects" stat_is s replication_connected 0
  down s KILL
  LPFX=notls: lcd s "$tag-s3" --standby-of "127.0.0.1:$R" --tls-cert "$TMP/stby.pem" \
    --tls-key "$TMP/stby.key" --tls-ca "$TMP/ca.pem" ||
    { setup_fail "$tag: the TLS standby starts"; return; }
  check "$tag: a standby with a certificate of the CA reaches sync over TLS" \
    wait_stat p replication_state sync 10
  local i v=""
  for i in 1 2 3 4 5; do ask p "incr tl-x 1"; v=$REPLY_LINE; done
  check "$tag: the primary allocates with its TLS standby (5: $v)" test "$v" = 5
  sleep 0.3
  down p KILL
  promote s
  ask s "incr tl-x 1"
  check "$tag: promoted, the standby allocates above the primary's ids ($REPLY_LINE)" \
    eval '[ "$PRC" = 0 ] && [ "$REPLY_LINE" -gt 5 ] 2>/dev/null'
  down_all
}
want tl && tls_scenario

# A loop never waits for a segment's fetch (lw): one loop (--threads 1),
# segments of 10, a required standby.  Counter b holds ids.  The standby
# frozen, counter a's next segment is fetched in the background and its
# synced write waits for the standby's acknowledgement; with one id of a
# left, "incr lw-a 5" must wait for that fetch: the loop hands it to a
# worker (jobs_deferred), so "incr lw-b 1" on another connection of the
# same loop is answered at once, before it (a loop that made the call
# itself would answer neither until the standby came back).
loopwait_scenario() {
  local tag=lw R i; R=$(free_port) || { setup_fail "$tag: a port"; return; }
  echo "# --- $tag: a call waiting for a fetch does not hold its loop"
  lcd p "$tag-p" --threads 1 --prefetch 10 --replication-listen "127.0.0.1:$R" \
    --standby-mode required --standby-timeout 60s ||
    { setup_fail "$tag: the primary starts"; return; }
  lcd s "$tag-s" --standby-of "127.0.0.1:$R" || { setup_fail "$tag: the standby starts"; down_all; return; }
  synced_or_show 10 || { setup_fail "$tag: the standby in sync"; down_all; return; }
  ask p "incr lw-b 1"; ask p "incr lw-a 1"   # each holds 1..10
  check "$tag: both counters started ($REPLY_LINE)" test "$REPLY_LINE" = 1
  kill -STOP "${PID[s]}"
  for i in 2 3 4 5 6 7 8 9; do ask p "incr lw-a 1"; done  # the next fetch starts
  check "$tag: a's ids 2..9 from its held segment ($REPLY_LINE)" test "$REPLY_LINE" = 9
  local before; before=$(stat_of p jobs_deferred)
  exec 5<>"/dev/tcp/127.0.0.1/${PORT[p]}" && exec 7<>"/dev/tcp/127.0.0.1/${PORT[p]}" ||
    { setup_fail "$tag: two connections"; kill -CONT "${PID[s]}"; down_all; return; }
  printf 'incr lw-a 5\r\n' >&5
  sleep 0.3
  printf 'incr lw-b 1\r\n' >&7
  local b="" a=""
  IFS= read -r -t 10 b <&7; b=${b%$'\r'}
  IFS= read -r -t 0.5 a <&5
  check "$tag: b answered on the same loop while a waits for its fetch ($b)" \
    eval '[ "$b" = 2 ] && [ -z "$a" ]'
  check "$tag: a's call went to a worker (jobs_deferred $before -> $(stat_of p jobs_deferred))" \
    eval '[ "$(stat_of p jobs_deferred)" -gt "${before:-0}" ]'
  kill -CONT "${PID[s]}"
  IFS= read -r -t 20 a <&5; a=${a%$'\r'}
  check "$tag: a answered once the standby acknowledged ($a: ids 10..14)" test "$a" = 14
  exec 5>&- 7>&-
  down_all
}
want lw && loopwait_scenario

want cp && catchup preferred cp kill
want cr && catchup required cr kill
want cf && catchup required cf stop

echo "# $((SECONDS - T_START))s in all"
finish
