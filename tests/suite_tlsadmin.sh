#!/bin/bash
# suite_tlsadmin.sh - the admin commands over TCP with TLS (lcd_relay.c,
# the library's h->admin_tls): a daemon with a TLS listener, --auth-file,
# --rights-file (alice has the admin right, bob not) and --admin-socket
# (and --prefetch off, so that each allocation is a record of its own),
# while an authenticated TLS client allocates all along:
#   - logcounter --server HOST:PORT --tls-ca --user alice allocates over
#     the data protocol and runs void, gaps, verify, dump and backup through
#     the relay; gaps and dump (a stream of 20,000 records, past every
#     buffer) are byte for byte what the admin socket
#     itself answers;
#   - "admin" pipelined after the handshake, then 1,000 pipelined admin
#     requests through the relay;
#   - bob's void is refused naming the missing right, nothing is voided,
#     and his connection stays a data connection; "admin" on the plain
#     port and before the handshake are refused;
#   - a relay that asks for records and never reads is closed by
#     --reply-timeout while another TLS client is answered;
#   - SIGTERM with a relay open closes it and exits 0; the log verifies.
set -u
cd "$(dirname "$0")/.." || exit 1
B=${BUILD:-build}
DAEMON=$B/logcounterd CLI=$B/logcounter
PY=/usr/bin/python3 TA=tests/daemon/tls_admin.py TC=tests/daemon/tls_clients.py

. tests/port.sh
SUITE=tlsadmin
. tests/check.sh

TLS_NEED=("$DAEMON" "$CLI") TLS_CERTS=server
. tests/tls_suite.sh
CA=$TMP/ca.pem

AUTH_ALICE="a$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
AUTH_BOB="b$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
export AUTH_ALICE AUTH_BOB
printf 'alice:%s\nbob:%s\n' "$AUTH_ALICE" "$AUTH_BOB" >"$TMP/auth"
chmod 600 "$TMP/auth" # group or others may not read it
printf 'alice prefix=* admin\nbob prefix=*\n' >"$TMP/rights"
ASOCK=$TMP/admin.sock
SCALE=${LC_TEST_SCALE:-1}
NREC=$((20000 / SCALE))

DPORT=$(free_port) && TPORT=$(free_port) && [ "$DPORT" != "$TPORT" ] ||
  { failed=1; finish; }
SAME_PORT=1 start_daemon d1 -l "127.0.0.1:$TPORT,notls:127.0.0.1:$DPORT" \
  --tls-cert "$TMP/server.pem" --tls-key "$TMP/server.key" \
  --auth-file "$TMP/auth" --rights-file "$TMP/rights" --admin-socket "$ASOCK" \
  --reply-timeout 2 --prefetch off || { failed=1; finish; }
check "a daemon with TLS, auth, rights and an admin socket starts" [ -S "$ASOCK" ]

TLS_LOAD_USER=alice "$PY" "$TC" load "$TPORT" "$CA" bgadm "$TMP/stop" >"$TMP/bg.out" 2>&1 &
BGPID=$!
LOADPIDS="$BGPID"

# as USER ARGS...: the CLI through the TLS port.
as() {
  local u=$1; shift
  local pw=AUTH_${u^^}
  LOGCOUNTER_PASSWORD=${!pw} "$CLI" --server "127.0.0.1:$TPORT" --tls-ca "$CA" \
    --user "$u" "$@"
}
py() {
  local name=$1; shift
  "$PY" "$TA" "$@" >"$TMP/py.out" 2>&1; local rc=$?
  sed 's/^/    /' "$TMP/py.out"
  check "$name" [ "$rc" = 0 ]
}

# ---- the CLI's commands through the relay --------------------------------
ids=$(for i in 1 2 3 4 5; do as alice next adm; done | tr '\n' ' ')
check "alice over TLS allocates 1..5 (the data protocol: $ids)" [ "$ids" = "1 2 3 4 5 " ]
as alice void adm 3 --reason "suite void" >"$TMP/o" 2>"$TMP/e"; rc=$?
sed 's/^/    /' "$TMP/e"
check "alice: void adm 3 over TLS (exit $rc)" [ "$rc" = 0 ]
as alice gaps adm >"$TMP/gaps.tls" 2>&1
"$CLI" --server "$ASOCK" gaps adm >"$TMP/gaps.sock" 2>&1
sed 's/^/    /' "$TMP/gaps.tls"
check "gaps over TLS show the void, as the admin socket does" \
  eval 'grep -q "suite void" "$TMP/gaps.tls" && cmp -s "$TMP/gaps.tls" "$TMP/gaps.sock"'
as alice verify adm >"$TMP/o" 2>&1; rc=$?
check "verify adm over TLS: exit 0" [ "$rc" = 0 ]
py "$NREC records of 'big' through the admin socket" fill "$ASOCK" big "$NREC"
as alice dump big >"$TMP/rec.tls" 2>"$TMP/e"; rc=$?
"$CLI" --server "$ASOCK" dump big >"$TMP/rec.sock" 2>&1
n=$(wc -l <"$TMP/rec.tls") bytes=$(wc -c <"$TMP/rec.tls")
check "dump big over TLS (exit $rc): $n lines, $bytes bytes, the same as the admin socket's" \
  eval '[ "$rc" = 0 ] && [ "$n" -ge "$NREC" ] && cmp -s "$TMP/rec.tls" "$TMP/rec.sock"'
as alice backup "$TMP/bk" >"$TMP/o" 2>&1; rc=$?
sed 's/^/    /' "$TMP/o"
check "backup over TLS (exit $rc) writes the copy" \
  eval '[ "$rc" = 0 ] && [ -n "$(ls "$TMP/bk" 2>/dev/null)" ]'
py "admin pipelined after the handshake; 1,000 admin requests pipelined through the relay" \
  relay "$TPORT" "$CA" alice adm

# ---- refusals ------------------------------------------------------------
as bob void adm 4 --reason "bob" >"$TMP/o" 2>"$TMP/e"; rc=$?
sed 's/^/    /' "$TMP/e"
as alice gaps adm >"$TMP/gaps2" 2>&1
check "bob (no admin right): void refused naming the right, nothing voided" \
  eval '[ "$rc" != 0 ] && grep -q "no admin right" "$TMP/e" && cmp -s "$TMP/gaps2" "$TMP/gaps.tls"'
py "bob's admin: CLIENT_ERROR, the connection still allocates" \
  refused "$TPORT" "$CA" bob bobname "permission denied: no admin right"
py "admin before the handshake over TLS: refused, closed" unauth "$TPORT" "$CA"
tok="alice $AUTH_ALICE"
conn; say "set auth 0 0 ${#tok}"; ask "$tok"; s=$REPLY_LINE; ask "admin"; r=$REPLY_LINE
ask "incr plainadm 1"; v=$REPLY_LINE; conn_close
check "alice's admin on the plain port: refused, needs TLS ($r); then allocates ($v)" \
  eval '[ "$s" = STORED ] && [[ $r == "CLIENT_ERROR permission denied: admin commands over TCP need TLS"* ]] && [ "$v" = 1 ]'
LOGCOUNTER_PASSWORD=$AUTH_ALICE "$CLI" --server "127.0.0.1:$DPORT" --user alice verify adm >"$TMP/o" 2>"$TMP/e"; rc=$?
check "the CLI without --tls-ca refuses the log's commands over TCP, saying how" \
  eval '[ "$rc" != 0 ] && grep -q "tls-ca" "$TMP/e"'

# ---- back-pressure and shutdown -------------------------------------------
py "a relay that never reads is closed by --reply-timeout; others are served" \
  unread "$TPORT" "$CA" alice big
conn; say "set auth 0 0 ${#tok}"; ask "$tok"; say "stats"; v="" r=""
while hear && [ "$REPLY_LINE" != END ]; do
  case $REPLY_LINE in
  "STAT closed_unread "*) v=${REPLY_LINE##* } ;;
  "STAT admin_relays "*) r=${REPLY_LINE##* } ;;
  esac
done
conn_close
check "stats: closed_unread $v, admin_relays $r" \
  eval '[ "${v:-0}" -ge 1 ] && [ "${r:-0}" -ge 8 ]'
touch "$TMP/stop"; wait "$BGPID"; rc=$?; LOADPIDS=""
sed 's/^/    /' "$TMP/bg.out"
check "meanwhile an authenticated TLS client allocated, every id higher" [ "$rc" = 0 ]
"$PY" "$TA" hold "$TPORT" "$CA" alice >"$TMP/hold.out" 2>&1 &
HPID=$!
LOADPIDS="$HPID"
for _ in $(seq 100); do grep -q held "$TMP/hold.out" && break; sleep 0.05; done
stop_daemon TERM
wait "$HPID"; hrc=$?; LOADPIDS=""
sed 's/^/    /' "$TMP/hold.out"
check "SIGTERM with a relay open: the relay is closed, exit 0" \
  eval '[ "$RC" = 0 ] && [ "$hrc" = 0 ]'
ok_all=1
for name in adm big bgadm; do
  "$CLI" --memcached "$MC" --db "$TMP/d1" verify "$name" >"$TMP/v.out" 2>&1 ||
    { cat "$TMP/v.out"; ok_all=0; }
done
check "the log verifies adm, big and bgadm" [ "$ok_all" = 1 ]
check "no sanitizer report in the daemon's log" \
  bash -c "! grep -Eq 'Sanitizer|runtime error' '$TMP/daemon.log'"
finish
