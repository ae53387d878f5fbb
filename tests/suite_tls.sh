#!/bin/bash
# suite_tls.sh - logcounterd's TLS (--tls-cert, --tls-key, --tls-ca,
# --tls-verify; tools/logcounterd/lcd_tls.c), with a throwaway CA, server
# and client certificates made by the openssl command in $TMP (never kept):
#   - usage errors, and a certificate that cannot be loaded;
#   - openssl s_client sees the certificate and verifies it (code 0);
#   - pymemcache (tls_context) allocates and pipelines 100,000 noreply incr
#     lines, then a raw TLS socket pipelines 100,000 more: read back exact;
#   - a plain-text client on the TLS port gets nothing and is closed
#     (counted in ssl_handshake_errors), the daemon serves others;
#   - a notls: listener of the same daemon speaks plain text;
#   - SIGHUP after the files are replaced: a new connection sees the new
#     certificate, one opened before keeps working; a failed reload keeps
#     the certificate in use;
#   - a TLS client that pipelines and never reads is closed by
#     --reply-timeout while another TLS client is answered;
#   - mutual TLS (--tls-verify require): refused without a client
#     certificate, served with one; a client that never starts the
#     handshake is closed after --line-timeout;
#   - SIGTERM while TLS clients allocate exits 0; the log verifies;
#   - /metrics (--metrics-listen) with TLS on: HTTPS with the same
#     certificate (logcounterd_counters grows by exactly the names made),
#     a plain HTTP request to it gets no answer and the daemon serves on,
#     SIGHUP's new certificate is what a new /metrics connection sees
#     (SHA-256 fingerprints from openssl s_client), mutual TLS refuses a
#     scraper without a client certificate; notls:HOST:PORT stays plain;
#     a non-loopback --metrics-listen without mutual TLS exits 2;
#   - 1,030 stalled TLS handshakes from 127.0.0.2 (tests/daemon/flood.py):
#     new plain and TLS clients from 127.0.0.1 are answered, an old one
#     allocates throughout;
#   - --auth-file with TLS: pymemcache (tls_context) authenticates with
#     the set handshake and allocates; a wrong password and an incr
#     before the handshake are refused with their messages and closed.
# All of it while another TLS client allocates.  Uses $BUILD/logcounterd,
# $BUILD/logcounter, /usr/bin/python3 with python3-pymemcache, openssl, a
# private memcached, free 127.0.0.1 ports.  Ends "tls: N passed, M failed".
# shellcheck disable=SC2034
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd CLI=$B/logcounter
PY=/usr/bin/python3 TC=tests/daemon/tls_clients.py

SUITE=tls
. tests/check.sh

TLS_NEED=("$DAEMON" "$CLI" "$B/tests/lc_remote") TLS_CERTS="lc-server-1 lc-server-2 lc-client"
. tests/tls_suite.sh
cp "$TMP/lc-server-1.pem" "$TMP/server.pem" && cp "$TMP/lc-server-1.key" "$TMP/server.key"
CA=$TMP/ca.pem
TLSOPTS=(--tls-cert "$TMP/server.pem" --tls-key "$TMP/server.key")

# run NAME ARGS...: tls_clients.py ARGS, its lines shown; one check.
run() {
  local name=$1; shift
  "$PY" "$TC" "$@" >"$TMP/py.out" 2>&1; local rc=$?
  sed 's/^/    /' "$TMP/py.out"
  check "$name" [ "$rc" = 0 ]
}
# start_tls DB ARGS...: TLS on TPORT, plain (notls:) on DPORT.
start_tls() {
  local db=$1; shift
  DPORT=$(free_port) && TPORT=$(free_port) && [ "$DPORT" != "$TPORT" ] || return 1
  SAME_PORT=1 start_daemon "$db" -l "127.0.0.1:$TPORT,notls:127.0.0.1:$DPORT" "$@"
}
# subject: the subject and the verify result openssl s_client reports.
subject() {
  openssl s_client -connect "127.0.0.1:$TPORT" -CAfile "$CA" </dev/null 2>&1 |
    grep -E '^subject=|Verify return code'
}
# settings: "stats settings" through the plain port.
settings() {
  conn; say "stats settings"
  while hear && [ "$REPLY_LINE" != END ]; do echo "$REPLY_LINE"; done
  conn_close
}
# usage_rc ARGS...: the daemon's exit status for ARGS.
usage_rc() { "$DAEMON" --db "$TMP/u" --memcached "$MC" "$@" >/dev/null 2>"$TMP/u.err"; echo $?; }

# ---- options --------------------------------------------------------------
check "--tls-cert without --tls-key: usage error (2)" \
  [ "$(usage_rc --tls-cert "$TMP/server.pem")" = 2 ]
check "--tls-verify require without --tls-ca: usage error (2)" \
  [ "$(usage_rc "${TLSOPTS[@]}" --tls-verify require)" = 2 ]
check "--tls-verify maybe: usage error (2)" \
  [ "$(usage_rc "${TLSOPTS[@]}" --tls-ca "$CA" --tls-verify maybe)" = 2 ]
rc=$(usage_rc --tls-cert "$TMP/server.pem" --tls-key "$TMP/lc-server-2.key" -l 127.0.0.1:1)
check "a key that does not match the certificate: exit 1, says so" \
  bash -c "[ $rc = 1 ] && grep -q 'cannot set up TLS' '$TMP/u.err'"
"$DAEMON" --help | grep -q -- '--tls-verify' && "$DAEMON" --help | grep -q 'notls:'
check "--help describes --tls-verify and notls:" [ $? = 0 ]
"$DAEMON" --help | grep -q 'needs TLS with --tls-verify require'
check "--help gives the non-loopback /metrics rule" [ $? = 0 ]
rc=$(usage_rc "${TLSOPTS[@]}" -l 127.0.0.1:1 --metrics-listen 0.0.0.0:1)
check "a non-loopback --metrics-listen with TLS but no --tls-verify require: exit 2, says why" \
  bash -c "[ $rc = 2 ] && grep -q \"refusing to serve /metrics on '0.0.0.0:1'\" '$TMP/u.err'"
rc=$(usage_rc "${TLSOPTS[@]}" --tls-ca "$CA" --tls-verify require -l 127.0.0.1:1 \
  --metrics-listen notls:0.0.0.0:1)
check "a non-loopback notls: --metrics-listen, even with mutual TLS on: exit 2" \
  bash -c "[ $rc = 2 ] && grep -q 'without mutual TLS' '$TMP/u.err'"
rc=$(usage_rc -l 127.0.0.1:1 --metrics-listen '[::]:1')
check "a non-loopback --metrics-listen without TLS: exit 2" [ "$rc" = 2 ]

# fp_served PORT / fp_file PEM: the SHA-256 fingerprint of the certificate
# served on 127.0.0.1:PORT / in PEM.
fp_served() {
  openssl s_client -connect "127.0.0.1:$1" -CAfile "$CA" </dev/null 2>/dev/null |
    openssl x509 -noout -fingerprint -sha256 2>/dev/null
}
fp_file() { openssl x509 -in "$1" -noout -fingerprint -sha256; }

# ---- one TLS daemon -------------------------------------------------------
MPORT=$(free_port)
start_tls d1 "${TLSOPTS[@]}" --metrics-listen "127.0.0.1:$MPORT" --reply-timeout 3 ${TLS_SUITE_DEBUG:-} || { failed=$((failed + 1)); finish; }
"$PY" "$TC" load "$TPORT" "$CA" bgload "$TMP/stop" >"$TMP/bg.out" 2>&1 &
BGPID=$!
LOADPIDS="$BGPID"

out=$(subject)
echo "$out" | sed 's/^/    /'
check "openssl s_client: the certificate (CN lc-server-1), verify return code 0" \
  bash -c "grep -q 'subject=CN = lc-server-1' <<<'$out' && grep -q 'Verify return code: 0 (ok)' <<<'$out'"
run "pymemcache and a raw TLS socket pipeline noreply incr, read back exact" \
  pipeline "$TPORT" "$CA" pipe
run "a plain-text client on the TLS port fails cleanly" plain "$TPORT"
check "ssl_handshake_errors counts it" [ "$(stats_value ssl_handshake_errors)" -ge 1 ]
conn; ask "incr plainctr 1"
check "the notls: listener speaks plain text (incr: $REPLY_LINE)" \
  bash -c "grep -Eq '^[0-9]+\$' <<<'$REPLY_LINE'"
conn_close
settings=$(settings)
check "stats settings: ssl_enabled yes, ssl_chain_cert, ssl_verify_mode none" \
  bash -c "grep -q '^STAT ssl_enabled yes' <<<'$settings' && grep -q '^STAT ssl_chain_cert $TMP/server.pem' <<<'$settings' && grep -q '^STAT ssl_verify_mode none' <<<'$settings'"

run "HTTPS /metrics: a counter figure follows what was allocated over TLS" \
  scrape "$MPORT" "$TPORT" "$CA" 7
run "a plain HTTP request to the HTTPS /metrics port fails cleanly" \
  plainhttp "$MPORT" "$CA"
check "the daemon logs /metrics as https" \
  grep -q "Prometheus text at https://127.0.0.1:$MPORT/metrics" "$TMP/daemon.log"
fp1=$(fp_file "$TMP/lc-server-1.pem") fp2=$(fp_file "$TMP/lc-server-2.pem")
check "/metrics serves the data ports' certificate (lc-server-1's fingerprint)" \
  eval '[ -n "$fp1" ] && [ "$(fp_served "$MPORT")" = "$fp1" ] && [ "$fp1" != "$fp2" ]'
run "SIGHUP: new connections see the new certificate, old ones go on" \
  reload "$TPORT" "$CA" "$TMP/daemon.pid" "$TMP/server.pem" "$TMP/server.key" \
  "$TMP/lc-server-2.pem" "$TMP/lc-server-2.key" lc-server-2
fpm=$(fp_served "$MPORT")
echo "    /metrics after SIGHUP: $fpm"
check "after SIGHUP a new /metrics connection sees the new certificate (lc-server-2's fingerprint)" \
  eval '[ -n "$fp2" ] && [ "$fpm" = "$fp2" ]'
printf 'not a certificate\n' >"$TMP/server.pem"
kill -HUP "$DPID"; sleep 0.5
out=$(subject)
check "a failed reload keeps the certificate in use (CN lc-server-2) and says why" \
  bash -c "grep -q 'subject=CN = lc-server-2' <<<'$out' && grep -q 'certificates not reloaded' '$TMP/daemon.log'"
check "stats: ssl_cert_reloads 1, ssl_cert_reload_errors 1" \
  [ "$(stats_value ssl_cert_reloads)/$(stats_value ssl_cert_reload_errors)" = 1/1 ]

run "a TLS client that never reads is closed by --reply-timeout, another is served" \
  unread "$TPORT" "$CA" unread

touch "$TMP/stop"; wait "$BGPID"; rc=$?; LOADPIDS=""
sed 's/^/    /' "$TMP/bg.out"
check "meanwhile another TLS client allocated, every id higher" [ "$rc" = 0 ]

# ---- the CLI (and the library's remote mode) over TLS ---------------------
# tcli ARGS...: logcounter over TLS to the daemon now on TPORT
tcli() { "$CLI" --server "127.0.0.1:$TPORT" --tls-ca "$CA" "$@"; }
a=$(tcli next clitls 2>"$TMP/cli.err") && b=$(tcli next clitls 2>>"$TMP/cli.err")
check "logcounter --tls-ca: two next calls over TLS give consecutive ids ($a, $b)" \
  eval '[ -n "$a" ] && [ "$b" = $((a + 1)) ]'
check "the plain (notls:) port's current agrees: $b" \
  [ "$("$CLI" --server "127.0.0.1:$DPORT" current clitls 2>&1)" = "$b" ]
"$CLI" --server "127.0.0.1:$TPORT" --tls-ca "$TMP/lc-client.pem" next clitls >"$TMP/o" 2>"$TMP/e"; rc=$?
sed 's/^/    /' "$TMP/e"
check "--tls-ca that the server's certificate does not chain to: refused, says why" \
  eval '[ "$rc" != 0 ] && grep -q "certificate" "$TMP/e"'
timeout 20 "$CLI" --server "127.0.0.1:$DPORT" --tls-ca "$CA" --timeout 2000 next clitls >"$TMP/o" 2>"$TMP/e"; rc=$?
sed 's/^/    /' "$TMP/e"
check "--tls-ca against the plain port: a clear TLS error within the timeout, no id" \
  eval '[ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "TLS" "$TMP/e" && [ ! -s "$TMP/o" ]'
tcli --tls-cert "$TMP/lc-client.pem" next x >/dev/null 2>&1; rc=$?
check "logcounter --tls-cert without --tls-key: usage error (2)" [ "$rc" = 2 ]
c=$("$CLI" --server "127.0.0.1:$DPORT" current clitls 2>&1)
check "no refused call allocated an id ($c = $b)" [ "$c" = "$b" ]
# remote WHAT NAME THREADS CALLS POOL CA [CERT KEY] [USER]: lc_remote (one
# handle over TLS to TPORT, its pool smaller than its threads); one check.
remote() {
  local what=$1; shift
  "$REMOTE" "127.0.0.1:$TPORT" "$@" >"$TMP/r.out" 2>&1; local rc=$?
  sed 's/^/    /' "$TMP/r.out"
  check "$what" [ "$rc" = 0 ]
}
REMOTE=$B/tests/lc_remote
remote "the library over TLS: 8 threads, a pool of 2, 4,000 ids distinct and in order" \
  libtls 8 500 2 "$CA"
c=$("$CLI" --server "127.0.0.1:$DPORT" current libtls 2>&1)
check "the daemon stands at the last of them ($c)" [ "$c" = 4000 ]

# SIGTERM while TLS clients allocate
pids=""
for i in 1 2 3; do
  "$PY" "$TC" load "$TPORT" "$CA" term$i - >"$TMP/term$i.out" 2>&1 &
  pids="$pids $!"
done
LOADPIDS=$pids
for i in $(seq 100); do  # each has its first id
  [ "$(cat "$TMP"/term*.out 2>/dev/null | grep -c started)" = 3 ] && break
  sleep 0.1
done
sleep 0.3
stop_daemon TERM
check "SIGTERM while three TLS clients allocate: exit 0" [ "$RC" = 0 ]
ok_all=1
for p in $pids; do wait "$p" || ok_all=0; done
LOADPIDS=""
cat "$TMP"/term*.out | sed 's/^/    /'
check "the TLS clients saw increasing ids until the daemon closed" [ "$ok_all" = 1 ]

# ---- mutual TLS -----------------------------------------------------------
cp "$TMP/lc-server-1.pem" "$TMP/server.pem"; cp "$TMP/lc-server-1.key" "$TMP/server.key"
MPORT=$(free_port)
start_tls d1 "${TLSOPTS[@]}" --tls-ca "$CA" --tls-verify require --line-timeout 2 \
  --metrics-listen "127.0.0.1:$MPORT" ||
  { failed=$((failed + 1)); finish; }
"$PY" "$TC" load "$TPORT" "$CA" bgload "$TMP/stop2" "$TMP/lc-client.pem" \
  "$TMP/lc-client.key" >"$TMP/bg.out" 2>&1 &
BGPID=$!
LOADPIDS="$BGPID"
sleep 0.3
run "mutual TLS: refused without a client certificate, served with one" \
  mtls "$TPORT" "$CA" "$TMP/lc-client.pem" "$TMP/lc-client.key"
run "mutual TLS on /metrics: refused without a client certificate, 200 with one" \
  metricsmtls "$MPORT" "$CA" "$TMP/lc-client.pem" "$TMP/lc-client.key"
run "mutual TLS /metrics: a counter figure follows what was allocated" \
  scrape "$MPORT" "$TPORT" "$CA" 5 "$TMP/lc-client.pem" "$TMP/lc-client.key"
before=$(stats_value ssl_handshake_errors)
run "a client that never starts the handshake is closed (--line-timeout 2)" \
  silent "$TPORT" 2
check "ssl_handshake_errors counts it" [ "$(stats_value ssl_handshake_errors)" -gt "$before" ]
tcli next climtls >"$TMP/o" 2>"$TMP/e"; rc=$?
sed 's/^/    /' "$TMP/e"
check "logcounter --tls-ca without a client certificate, mutual TLS: refused" \
  eval '[ "$rc" != 0 ] && [ ! -s "$TMP/o" ]'
a=$(tcli --tls-cert "$TMP/lc-client.pem" --tls-key "$TMP/lc-client.key" next climtls 2>&1)
check "logcounter --tls-cert/--tls-key, mutual TLS: allocates ($a)" [ "$a" = 1 ]
remote "the library over mutual TLS: 4 threads, a pool of 3" \
  libmtls 4 500 3 "$CA" "$TMP/lc-client.pem" "$TMP/lc-client.key"
settings=$(settings)
check "stats settings: ssl_verify_mode require, ssl_ca_cert" \
  bash -c "grep -q '^STAT ssl_verify_mode require' <<<'$settings' && grep -q '^STAT ssl_ca_cert $CA' <<<'$settings'"
touch "$TMP/stop2"; wait "$BGPID"; rc=$?; LOADPIDS=""
sed 's/^/    /' "$TMP/bg.out"
check "meanwhile a client with a certificate allocated, every id higher" [ "$rc" = 0 ]
stop_daemon TERM
check "mutual TLS daemon: SIGTERM, exit 0" [ "$RC" = 0 ]

# ---- stalled handshakes (issue 38) ----------------------------------------
# 1,030 connections to the TLS port from 127.0.0.2 that send a record
# header and nothing more: at most 64 of them stay (the oldest pushed out
# by newer ones, --max-unfinished-per-address), so a new plain client and
# a new TLS client from 127.0.0.1 are answered (before: every port said
# "SERVER_ERROR too many open connections")
start_tls d4 "${TLSOPTS[@]}" || { failed=$((failed + 1)); finish; }
"$PY" tests/daemon/flood.py "$TPORT" 1030 5 "$DPORT" --send 160301 \
  --from 127.0.0.2 --tls-port "$TPORT" --ca "$CA" >"$TMP/flood.out" 2>&1
frc=$?
sed 's/^/    /' "$TMP/flood.out"
check "1,030 stalled TLS handshakes: new plain and TLS clients are answered" [ "$frc" = 0 ]
check "  stats unfinished_dropped counts the stalled ones pushed out" \
  [ "$(stats_value unfinished_dropped)" -gt 0 ]
stop_daemon TERM
check "SIGTERM: exit 0" [ "$RC" = 0 ]

# ---- --auth-file and TLS together; a notls: /metrics ---------------------
AUTH_ALICE="a$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
export AUTH_ALICE
printf 'alice:%s\n' "$AUTH_ALICE" >"$TMP/auth"
chmod 600 "$TMP/auth" # group or others may not read it
MPORT=$(free_port)
start_tls d3 "${TLSOPTS[@]}" --auth-file "$TMP/auth" \
  --metrics-listen "notls:127.0.0.1:$MPORT" || { failed=$((failed + 1)); finish; }
TLS_LOAD_USER=alice "$PY" "$TC" load "$TPORT" "$CA" bgauth "$TMP/stop3" >"$TMP/bg3.out" 2>&1 &
BGPID=$!
LOADPIDS="$BGPID"
run "auth over TLS: pymemcache authenticates and allocates; wrong password and incr before auth refused, closed" \
  authtls "$TPORT" "$CA" authtls
run "notls: /metrics is plain HTTP while TLS and auth are on" httpscrape "$MPORT"
a=$(LOGCOUNTER_PASSWORD=$AUTH_ALICE tcli --user alice next cliauth 2>&1)
b=$(LOGCOUNTER_PASSWORD=$AUTH_ALICE tcli --user alice next cliauth 2>&1)
check "logcounter --user --tls-ca: authenticates over TLS and allocates ($a, $b)" \
  eval '[ "$a" = 1 ] && [ "$b" = 2 ]'
LOGCOUNTER_PASSWORD=wrong tcli --user alice next cliauth >"$TMP/o" 2>"$TMP/e"; rc=$?
sed 's/^/    /' "$TMP/e"
check "a wrong password over TLS: refused (authentication), no id" \
  eval '[ "$rc" != 0 ] && grep -qi "authentication" "$TMP/e" && [ ! -s "$TMP/o" ]'
tcli next cliauth >"$TMP/o" 2>"$TMP/e"; rc=$?
check "no --user against --auth-file over TLS: refused, no id" \
  eval '[ "$rc" != 0 ] && [ ! -s "$TMP/o" ]'
LC_REMOTE_PASSWORD=$AUTH_ALICE remote "the library with a user over TLS: 8 threads, a pool of 4" \
  libauth 8 500 4 "$CA" "" "" alice
check "the daemon logs the notls: /metrics as http" \
  grep -q "Prometheus text at http://127.0.0.1:$MPORT/metrics" "$TMP/daemon.log"
touch "$TMP/stop3"; wait "$BGPID"; rc=$?; LOADPIDS=""
sed 's/^/    /' "$TMP/bg3.out"
check "meanwhile an authenticated TLS client allocated, every id higher" [ "$rc" = 0 ]
stop_daemon TERM
check "auth and TLS daemon: SIGTERM, exit 0" [ "$RC" = 0 ]

ok_all=1
for name in pipe bgload unread unreadother term1 term2 term3 reload; do
  "$CLI" --memcached "$MC" --db "$TMP/d1" verify "$name" >"$TMP/v.out" 2>&1 ||
    { cat "$TMP/v.out"; ok_all=0; }
done
check "the log verifies the counters used over TLS" [ "$ok_all" = 1 ]
check "no sanitizer report in the daemon's log" \
  bash -c "! grep -Eq 'Sanitizer|runtime error' '$TMP/daemon.log'"
finish
