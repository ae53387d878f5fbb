#!/bin/bash
# suite_cluster.sh - automatic failover on etcd (issue 40; promises P12,
# P13): a three-member etcd on loopback ports (data in a temporary
# directory), three logcounterd nodes (--etcd, --cluster, --node,
# --leader-ttl 2s) on one memcached, each reaching etcd only through a TCP
# proxy of its own (tests/daemon/cluster_tool.py proxy), and 4 clients
# allocating one counter through all three data ports throughout, moving
# to the next node on any error (cluster_tool.py load).  Faults, one after
# another on whichever node is the primary then:
#   kill    SIGKILL: another node serves within --leader-ttl + 4 s; the
#           third node follows it, resuming where it stood in the old
#           primary's stream (no copy); the old one, restarted, follows
#           the new primary as a standby
#   disk    SIGKILL, its log directory deleted and memcached flushed: the
#           same (floors come from the promoted standby's log)
#   freeze  SIGSTOP past its lease, then SIGCONT: another takes over, no
#           two nodes ever say primary at once, the old one rejoins
#   start   one primary; both other nodes stream from it at once
#           (replication_standbys 2: one synchronous, one behind it)
#   standby the synchronous standby SIGKILLed: the third node, streaming
#           already, takes its place without a new copy, and the primary
#           names it in /sync only once it holds every write (then
#           approves its acknowledgments); ids resume; the killed one,
#           restarted, follows again
#   cut     its proxy to etcd cut (a partition: requests time out): it
#           stops handing out ids before its lease can have expired
#           (stats says fenced) and before the new primary's first id;
#           healed, it rejoins as a standby
#   quorum  two of etcd's three members killed: no node is promoted (no
#           term changes), the primary fences itself and hands out
#           nothing; the members restarted, a primary serves again
# Then a one-member etcd over https with client certificates and
# user/password auth (--etcd-cacert, --etcd-cert, --etcd-key, --etcd-user,
# --etcd-password-file): a wrong password or no certificate never leads;
# with both, a node leads, a second follows, both give ids.
# Each fault: the time without any acknowledged id is printed.  At the
# end: no id acknowledged twice, every client's ids strictly increasing
# (cluster_tool.py check).  LC_TEST_KEEP=1 keeps the temporary directory
# (node and etcd logs, every acknowledged id).  Ends with
# "cluster: N passed, M failed".
set -u
shopt -s extglob
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd
SUITE=cluster
. tests/check.sh
TOOL() { /usr/bin/python3 tests/daemon/cluster_tool.py "$@"; }
TTL=2
T_START=$SECONDS

[ -x "$DAEMON" ] || { echo "suite_cluster: $DAEMON not built" >&2; failed=1; finish; }
if ! "$DAEMON" --help 2>&1 | grep -q -- '--etcd'; then
  echo "suite_cluster: $DAEMON has no --etcd" >&2; failed=1; finish
fi
command -v etcd >/dev/null ||
  { echo "suite_cluster: no etcd (Debian's etcd-server: tests/deps.sh)" >&2; failed=1; finish; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_cluster.XXXXXX") || exit 1
# etcd fsyncs every write: on tmpfs when there is one, so that a loaded
# machine's disk does not starve the 2 s leases
EDIR=$TMP
[ -d /dev/shm ] && [ -w /dev/shm ] && EDIR=$(mktemp -d /dev/shm/suite_cluster.XXXXXX)
declare -A PID=() EPID=() XPID=()
cleanup() {
  local p
  touch "$TMP/load/stop" 2>/dev/null
  {
    for p in "${PID[@]}" "${EPID[@]}" "${XPID[@]}"; do
      kill -CONT "$p"; kill -9 "$p"
    done
    [ -n "${LPID:-}" ] && kill "$LPID"
    touch "$TMP/pin/stop"
    wait
  } 2>/dev/null
  tests/memcached.sh stop "$TMP" 2>/dev/null
  [ "$EDIR" != "$TMP" ] && rm -rf "$EDIR"
  if [ "${LC_TEST_KEEP:-0}" = 1 ]; then echo "# kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
MCPORT=$(tests/memcached.sh start "$TMP") ||
  { echo "suite_cluster: no memcached" >&2; failed=1; finish; }

# ---- etcd: three members -----------------------------------------------------
declare -A EC=() EP=()
for m in 1 2 3; do EC[$m]=$(free_port); EP[$m]=$(free_port); done
ICL="m1=http://127.0.0.1:${EP[1]},m2=http://127.0.0.1:${EP[2]},m3=http://127.0.0.1:${EP[3]}"
member() {
  local m=$1
  etcd --name "m$m" --data-dir "$EDIR/m$m" \
    --listen-client-urls "http://127.0.0.1:${EC[$m]}" \
    --advertise-client-urls "http://127.0.0.1:${EC[$m]}" \
    --listen-peer-urls "http://127.0.0.1:${EP[$m]}" \
    --initial-advertise-peer-urls "http://127.0.0.1:${EP[$m]}" \
    --initial-cluster "$ICL" --initial-cluster-token "lc-$$" \
    --initial-cluster-state new >>"$TMP/etcd$m.log" 2>&1 &
  EPID[$m]=$!
}
# etcd_ok M: member M answers /health with a leader (within 1 s)
etcd_ok() {
  (exec 3<>"/dev/tcp/127.0.0.1/${EC[$1]}" &&
    printf 'GET /health HTTP/1.0\r\n\r\n' >&3 && timeout 1 cat <&3) 2>/dev/null |
    grep -q '"health":"true"'
}
for m in 1 2 3; do member "$m"; done
ok=0
for _ in $(seq 100); do etcd_ok 1 && etcd_ok 2 && etcd_ok 3 && { ok=1; break; }; sleep 0.1; done
[ "$ok" = 1 ] || { echo "suite_cluster: etcd did not start"; tail -3 "$TMP/etcd1.log"; failed=1; finish; }

# ---- the nodes, each behind its own proxy to every member --------------------
declare -A D=() R=() X=() URLS=()
for n in 1 2 3; do
  D[$n]=$(free_port); R[$n]=$(free_port)
  maps="" URLS[$n]=""
  for m in 1 2 3; do
    x=$(free_port)
    maps="$maps${maps:+,}$x:${EC[$m]}"
    URLS[$n]="${URLS[$n]}${URLS[$n]:+,}http://127.0.0.1:$x"
  done
  /usr/bin/python3 tests/daemon/cluster_tool.py proxy "$maps" >"$TMP/proxy$n.out" 2>&1 &
  XPID[$n]=$!   # python's own pid: the signals cut and heal
done
for n in 1 2 3; do
  for _ in $(seq 50); do grep -q ready "$TMP/proxy$n.out" 2>/dev/null && break; sleep 0.1; done
done
node() {
  local n=$1
  rm -f "$TMP/$n.sock"
  echo "=== $(date -u +%T.%N) start" >>"$TMP/n$n.log"
  "$DAEMON" --db "$TMP/db$n" --memcached "--SERVER=127.0.0.1:$MCPORT" \
    -l "127.0.0.1:${D[$n]}" --admin-socket "$TMP/$n.sock" \
    --replication-listen "127.0.0.1:${R[$n]}" --etcd "${URLS[$n]}" \
    --cluster suite --node "n$n" --leader-ttl "${TTL}s" 2>>"$TMP/n$n.log" &
  PID[$n]=$!
}
PORTS="${D[1]},${D[2]},${D[3]}"
# roles: "PORT ROLE TERM LEADER SYNC" per node into ROLES; PRIMARY = the node
# (1..3) that says primary ("" with none), NPRIM how many say it
roles() {
  ROLES=$(TOOL roles "$PORTS")
  PRIMARY="" NPRIM=0
  local n
  for n in 1 2 3; do
    if grep -q "^${D[$n]} primary " <<<"$ROLES"; then PRIMARY=$n; NPRIM=$((NPRIM + 1)); fi
  done
}
role_of() { awk -v p="${D[$1]}" '$1 == p { print $2 }' <<<"$ROLES"; }
# wait_primary NOT SECONDS: until a node other than NOT says primary
# (T_NEW: when it was seen)
wait_primary() {
  local end=$((SECONDS + $2))
  while [ $SECONDS -le $end ]; do
    roles
    [ -n "$PRIMARY" ] && [ "$PRIMARY" != "$1" ] && { T_NEW=$(now); return 0; }
    sleep 0.1
  done
  return 1
}
# wait_standby N SECONDS: until N says standby of the current primary
wait_standby() {
  local end=$((SECONDS + $2))
  while [ $SECONDS -le $end ]; do
    roles
    [ "$(role_of "$1")" = standby ] && [ -n "$PRIMARY" ] &&
      grep -Eq "^${D[$1]} standby [0-9]+ n$PRIMARY( |\$)" <<<"$ROLES" && return 0
    sleep 0.2
  done
  return 1
}
nacks() { cat "$TMP"/load/client_*.txt 2>/dev/null | wc -l; }
# wait_acks K SECONDS: until K more ids are acknowledged than now
wait_acks() {
  local want=$(($(nacks) + $1)) end=$((SECONDS + $2))
  while [ $SECONDS -le $end ]; do
    [ "$(nacks)" -ge "$want" ] && return 0
    sleep 0.1
  done
  return 1
}
now() { date +%s.%N; }
# need_primary PHASE: a phase needs a primary to hurt (waits up to 10 s
# for one); without one the rest of the suite cannot run (a failure)
need_primary() {
  wait_primary none 10 && return 0
  echo "FAIL - $1: no primary to start from"; failed=$((failed + 1))
  echo "$ROLES" | sed 's/^/#   /'
  finish
}
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
report_outage() { # NAME T0: the longest time without an id since T0
  local o
  o=$(TOOL outage "$TMP/load" "$2" "$(now)" | head -1)
  echo "# $1: longest time without an acknowledged id: ${o} s"
  OUTAGE=$o
}

for n in 1 2 3; do node "$n"; sleep 0.3; done
wait_primary none 15 || { echo "# no primary:"; tail -5 "$TMP"/n*.log; }
check "start: one node is primary" test "$NPRIM" = 1
for n in 1 2 3; do
  [ "$n" = "$PRIMARY" ] && continue
  check "start: n$n follows n$PRIMARY" wait_standby "$n" 10
done
mkdir -p "$TMP/load"
TOOL load "$TMP/load" cl 4 "$PORTS" &
LPID=$!
check "start: ids are handed out" wait_acks 200 10
# stat_of N NAME: STAT NAME of node N
stat_of() {
  timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"${D[$1]}"'; printf "stats\r\nquit\r\n" >&3; cat <&3' 2>/dev/null |
    tr -d '\r' | awk -v k="$2" '$1 == "STAT" && $2 == k { print $3 }'
}
two_streams() {
  local end=$((SECONDS + $1))
  while [ $SECONDS -le $end ]; do
    roles; [ -n "$PRIMARY" ] && [ "$(stat_of "$PRIMARY" replication_standbys)" = 2 ] && return 0
    sleep 0.2
  done
  return 1
}
check "start: both other nodes stream from n$PRIMARY (replication_standbys 2)" two_streams 10
# the CLI finds the primary in etcd (--etcd, --cluster), straight to etcd
ETCD_URLS="http://127.0.0.1:${EC[1]},http://127.0.0.1:${EC[2]},http://127.0.0.1:${EC[3]}"
v1=$("$B/logcounter" --etcd "$ETCD_URLS" --cluster suite next cl-etcd 2>&1)
v2=$("$B/logcounter" --etcd "$ETCD_URLS" --cluster suite next cl-etcd 2>&1)
check "logcounter --etcd --cluster: next through the primary ($v1, then $v2)" \
  eval '[[ "$v1" =~ ^[0-9]+$ ]] && [ "$v2" = $((v1 + 1)) ]'
"$B/logcounter" --etcd "$ETCD_URLS" --cluster nosuch next cl-etcd >"$TMP/out" 2>&1; rc=$?
check "  a cluster with no primary: exit 1, said ($(head -c 80 "$TMP/out"))" \
  eval '[ "$rc" = 1 ] && grep -q "has no primary" "$TMP/out"'

# ---- kill ---------------------------------------------------------------------
need_primary kill
old=$PRIMARY
T0=$(now)
kill -9 "${PID[$old]}"; wait "${PID[$old]}" 2>/dev/null
echo "# kill: SIGKILL n$old (primary) at $T0"
check "kill: another node is primary within ttl + 4 s" wait_primary "$old" $((TTL + 4))
check "kill: the new primary hands out ids" wait_acks 100 $((TTL + 6))
report_outage kill "$T0"
check "kill: ids again within ttl + 4 s (${OUTAGE} s)" le "$OUTAGE" $((TTL + 4))
third=$((6 - old - PRIMARY))
check "kill: n$third follows n$PRIMARY" wait_standby "$third" 15
copies=$(stat_of "$PRIMARY" replication_snapshots)
check "kill: ... having resumed from where it stood, no copy ($copies copies sent)" \
  test "$copies" = 0
node "$old"
check "kill: n$old, restarted, follows n$PRIMARY" wait_standby "$old" 15

# ---- disk: the primary lost with its log, memcached flushed -------------------------
need_primary disk
old=$PRIMARY
wait_acks 100 10 >/dev/null
T0=$(now)
kill -9 "${PID[$old]}"; wait "${PID[$old]}" 2>/dev/null
rm -rf "$TMP/db$old"
(exec 3<>"/dev/tcp/127.0.0.1/$MCPORT" && printf 'flush_all\r\n' >&3 && IFS= read -r -t 2 l <&3) 2>/dev/null
echo "# disk: SIGKILL n$old (primary), its log deleted, memcached flushed, at $T0"
check "disk: another node is primary within ttl + 4 s" wait_primary "$old" $((TTL + 4))
check "disk: the new primary hands out ids" wait_acks 100 $((TTL + 6))
report_outage disk "$T0"
node "$old"
check "disk: n$old, restarted without its log, follows n$PRIMARY" wait_standby "$old" 15

# ---- freeze -------------------------------------------------------------------
need_primary freeze
old=$PRIMARY
T0=$(now)
kill -STOP "${PID[$old]}"
echo "# freeze: SIGSTOP n$old (primary) at $T0 for $((TTL + 3)) s"
two=0
end=$((SECONDS + TTL + 3))
while [ $SECONDS -lt $end ]; do roles; [ "$NPRIM" -gt 1 ] && two=1; sleep 0.2; done
check "freeze: another node is primary" test -n "$PRIMARY" -a "$PRIMARY" != "$old"
kill -CONT "${PID[$old]}"
end=$((SECONDS + 3))
while [ $SECONDS -lt $end ]; do
  roles; [ "$NPRIM" -gt 1 ] && { two=1; echo "# two primaries:"; echo "$ROLES" | sed 's/^/#   /'; }
  sleep 0.1
done
check "freeze: never two nodes saying primary" test "$two" = 0
check "freeze: the new primary hands out ids" wait_acks 100 10
report_outage freeze "$T0"
check "freeze: n$old, resumed, follows n$PRIMARY" wait_standby "$old" 15

# ---- the synchronous standby killed ------------------------------------------------
need_primary standby
prim=$PRIMARY
sync_of() { awk -v p="${D[$1]}" '$1 == p { print $5 }' <<<"$ROLES"; }
sb=$(sync_of "$prim"); sb=${sb#n}
if [ -z "$sb" ] || [ "$sb" = "$prim" ] || [ -z "${PID[$sb]:-}" ]; then
  echo "FAIL - standby: n$prim names no standby in sync (${sb:-none})"; failed=$((failed + 1))
else
  snaps0=$(stat_of "$prim" replication_snapshots)
  T0=$(now)
  kill -9 "${PID[$sb]}"; wait "${PID[$sb]}" 2>/dev/null
  echo "# standby: SIGKILL n$sb (the synchronous standby of n$prim) at $T0"
  third=$((6 - prim - sb))
  ok=0 end=$((SECONDS + 15))
  while [ $SECONDS -le $end ]; do roles; [ "$(sync_of "$prim")" = "n$third" ] && { ok=1; break; }; sleep 0.2; done
  check "standby: n$prim names n$third in sync instead" test "$ok" = 1
  snaps1=$(stat_of "$prim" replication_snapshots)
  check "standby: ... which streamed already: no new copy ($snaps0 copies, then $snaps1)" \
    test -n "$snaps0" -a "$snaps0" = "$snaps1"
  check "standby: n$prim hands out ids again" wait_acks 100 15
  roles
  check "standby: n$prim is still the primary" test "$PRIMARY" = "$prim"
  report_outage standby "$T0"
  node "$sb"
  check "standby: n$sb, restarted, follows n$prim" wait_standby "$sb" 15
fi

# ---- cut from etcd --------------------------------------------------------------
need_primary cut
old=$PRIMARY
wait_acks 100 10 >/dev/null
# one client more, pinned to n$old's port: what n$old itself answers
mkdir -p "$TMP/pin"
TOOL load "$TMP/pin" cl 1 "${D[$old]}" &
PPID_PIN=$!
wait_acks_in() { local d=$1 want=$2 end=$((SECONDS + 10)); while [ $SECONDS -le $end ]; do [ "$(cat "$d"/client_*.txt 2>/dev/null | wc -l)" -ge "$want" ] && return 0; sleep 0.1; done; return 1; }
wait_acks_in "$TMP/pin" 50
T0=$(now)
kill -USR1 "${XPID[$old]}"
echo "# cut: n$old (primary) cut from etcd at $T0"
check "cut: another node is primary" wait_primary "$old" 10
echo "# cut: $(TOOL roles "${D[$old]}")"
check "cut: n$old says fenced once another leads" test "$(role_of "$old")" = fenced
check "cut: the new primary hands out ids" wait_acks 100 10
# n$old's last id on its own data port (the standbys forward to the
# primary, so an id on another port may be either primary's: the
# uniqueness check at the end covers those) against the earliest moment
# its lease could expire and the moment the new primary was seen
touch "$TMP/pin/stop"; wait "$PPID_PIN"
last=$(awk -v t="$T0" -v p="${D[$old]}" '$1 > t && $2 == p { print $1 }' "$TMP"/load/client_*.txt "$TMP"/pin/client_*.txt | sort -n | tail -1)
before=$(awk -v t="$T0" '$1 <= t' "$TMP"/pin/client_*.txt | wc -l)
check "cut: the pinned client had ids from n$old before the cut ($before)" test "$before" -gt 0
last=${last:-$T0}
rel() { awk -v a="$1" -v b="$T0" 'BEGIN { printf "%.3f", a - b }'; }
echo "# cut: n$old's last id at +$(rel "$last") s; n$PRIMARY seen primary at +$(rel "$T_NEW") s (lease ${TTL} s)"
check "cut: n$old's last id before its lease could expire" lt "$last" "$(awk -v t="$T0" -v l="$TTL" 'BEGIN { printf "%.6f", t + l }')"
check "cut: n$old's last id before the new primary was seen" lt "$last" "$T_NEW"
report_outage cut "$T0"
kill -USR2 "${XPID[$old]}"
check "cut: n$old, healed, follows n$PRIMARY" wait_standby "$old" 15

# ---- etcd's quorum lost ------------------------------------------------------------
need_primary quorum
wait_acks 100 10 >/dev/null
roles
prim=$PRIMARY terms=$(awk '{ print $3 }' <<<"$ROLES" | sort -u | tr '\n' ' ')
T0=$(now)
kill -9 "${EPID[2]}" "${EPID[3]}"; wait "${EPID[2]}" "${EPID[3]}" 2>/dev/null
echo "# quorum: etcd members m2 and m3 killed at $T0 (n$prim primary, terms $terms)"
moved=0
end=$((SECONDS + 2 * TTL + 3))
while [ $SECONDS -lt $end ]; do
  roles
  for n in 1 2 3; do # a node other than n$prim leading, even fenced
    [ "$n" != "$prim" ] && [[ $(role_of "$n") == @(primary|fenced) ]] && moved=1
  done
  [ "$(awk '{ print $3 }' <<<"$ROLES" | sort -u | tr '\n' ' ')" != "$terms" ] && moved=1
  sleep 0.2
done
echo "# quorum: $(echo "$ROLES" | tr '\n' ';')"
check "quorum: no node promoted, no term changed" test "$moved" = 0
check "quorum: n$prim fenced itself" test "$(role_of "$prim")" = fenced
n0=$(nacks); sleep 1
check "quorum: no id handed out while fenced" test "$(nacks)" = "$n0"
T1=$(now)
member 2; member 3
check "quorum: etcd back" bash -c 'for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/'"${EC[2]}"') 2>/dev/null && exit 0; sleep 0.1; done; exit 1'
check "quorum: ids again once etcd is back" wait_acks 100 30
two=0
end=$((SECONDS + 2))
while [ $SECONDS -lt $end ]; do roles; [ "$NPRIM" -gt 1 ] && two=1; sleep 0.1; done
echo "# quorum: after: $(echo "$ROLES" | tr '\n' ';')"
check "quorum: etcd back, never two nodes saying primary" test "$two" = 0
report_outage quorum "$T0"

# ---- the ids --------------------------------------------------------------------
touch "$TMP/load/stop"
wait "$LPID"; LPID=""
check "no id twice, each client's ids increasing" TOOL check "$TMP/load" "$TMP/pin"
# ---- etcd over TLS with client certificates and user/password auth ---------------
. tests/tls_certs.sh
# the nodes' certificate has no CommonName: etcd 3.4's gateway refuses a
# client certificate with one once auth is on (it would not use it)
nocn_cert() {
  openssl req -newkey rsa:2048 -nodes -keyout "$TMP/$1.key" -out "$TMP/$1.csr" \
    -subj "/O=logcounter-test" 2>/dev/null &&
  openssl x509 -req -in "$TMP/$1.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" \
    -CAcreateserial -out "$TMP/$1.pem" -days 2 2>/dev/null
}
if make_certs etcd && nocn_cert node; then
  head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TMP/etcd.pw"
  ST=$(free_port) SP=$(free_port)
  etcd --name s1 --data-dir "$EDIR/s1" \
    --listen-client-urls "https://127.0.0.1:$ST" --advertise-client-urls "https://127.0.0.1:$ST" \
    --cert-file "$TMP/etcd.pem" --key-file "$TMP/etcd.key" --client-cert-auth --trusted-ca-file "$TMP/ca.pem" \
    --listen-peer-urls "http://127.0.0.1:$SP" --initial-advertise-peer-urls "http://127.0.0.1:$SP" \
    --initial-cluster "s1=http://127.0.0.1:$SP" >>"$TMP/etcd-tls.log" 2>&1 &
  EPID[s]=$!
  ok=0
  for _ in $(seq 50); do
    TOOL etcdauth "https://127.0.0.1:$ST" "$TMP/ca.pem" "$TMP/node.pem" "$TMP/node.key" "$TMP/etcd.pw" 2>/dev/null && { ok=1; break; }
    sleep 0.2
  done
  check "tls: etcd over TLS with auth on" test "$ok" = 1
  tls_node() { # N NODE ARGS...: node N on the TLS etcd with these options
    local n=$1 name=$2; shift 2
    D[$n]=${D[$n]:-$(free_port)} R[$n]=${R[$n]:-$(free_port)}
    rm -f "$TMP/$n.sock"
    "$DAEMON" --db "$TMP/db$n" --memcached "--SERVER=127.0.0.1:$MCPORT" \
      -l "127.0.0.1:${D[$n]}" --admin-socket "$TMP/$n.sock" \
      --replication-listen "127.0.0.1:${R[$n]}" --etcd "https://127.0.0.1:$ST" \
      --cluster tls --node "$name" --leader-ttl "${TTL}s" --etcd-cacert "$TMP/ca.pem" "$@" 2>>"$TMP/n$n.log" &
    PID[$n]=$!
  }
  says() { # N ROLE SECONDS
    local end=$((SECONDS + $3))
    while [ $SECONDS -le $end ]; do TOOL roles "${D[$1]}" | grep -q " $2 " && return 0; sleep 0.2; done
    return 1
  }
  never_primary() { ! says 4 primary 4; }
  GOOD=(--etcd-cert "$TMP/node.pem" --etcd-key "$TMP/node.key" --etcd-user root --etcd-password-file "$TMP/etcd.pw")
  tls_node 4 t1 --etcd-cert "$TMP/node.pem" --etcd-key "$TMP/node.key" --etcd-user root --etcd-password-file "$TMP/ca.srl"
  check "tls: with a wrong etcd password it never leads" never_primary
  kill -9 "${PID[4]}"; wait "${PID[4]}" 2>/dev/null
  tls_node 4 t1 --etcd-user root --etcd-password-file "$TMP/etcd.pw"
  check "tls: without a client certificate it never leads" never_primary
  kill -9 "${PID[4]}"; wait "${PID[4]}" 2>/dev/null
  tls_node 4 t1 "${GOOD[@]}"
  check "tls: with its certificate and password it leads" says 4 primary 10
  tls_node 5 t2 "${GOOD[@]}"
  check "tls: a second node follows it" says 5 standby 10
  ask_tls() { (exec 3<>"/dev/tcp/127.0.0.1/${D[$1]}" && printf 'incr tls 1\r\n' >&3 && IFS= read -r -t 2 l <&3 && echo "${l%$'\r'}") 2>/dev/null; }
  v4="" v5=""
  for _ in $(seq 10); do v4=$(ask_tls 4); [[ $v4 =~ ^[0-9]+$ ]] && break; sleep 0.3; done
  v5=$(ask_tls 5)
  echo "# tls: incr tls 1 on t1 -> $v4, on t2 (forwarded) -> $v5"
  check "tls: ids from the primary and through the standby" test "$v4" -ge 1 -a "$v5" -gt "$v4" 2>/dev/null
  no_password() { ! grep -qF "$(cat "$TMP/etcd.pw")" "$TMP"/n*.log; }
  check "tls: the password is in no log" no_password
else
  echo "FAIL - tls: cannot make certificates"; failed=$((failed + 1))
fi

echo "# failovers: $(grep -h 'PRIMARY: promoted' "$TMP"/n*.log | sed 's/.*(term/term/' | tr '\n' ';')"
echo "# suite_cluster: $((SECONDS - T_START)) s"
finish
