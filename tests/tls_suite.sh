# tls_suite.sh - the prologue of the TLS suites (suite_tls.sh,
# suite_tlsadmin.sh), sourced after check.sh with SUITE, PY, TLS_NEED (the
# binaries they run, an array) and TLS_CERTS (the certificates to make) set: checks
# that the binaries, openssl and pymemcache are there; makes $TMP (removed
# at exit, after killing $DPID and $LOADPIDS; the daemon's log is kept as
# $TMPDIR/suite_SUITE.failed.log on a failure); starts memcached (MC);
# sources daemon.sh; makes the throwaway CA and TLS_CERTS (tls_certs.sh).
# shellcheck shell=bash
for bin in "${TLS_NEED[@]}"; do
  [ -x "$bin" ] || { echo "suite_$SUITE: $bin not built" >&2; failed=1; finish; }
done
command -v openssl >/dev/null ||
  { echo "suite_$SUITE: no openssl command (tests/deps.sh installs openssl)" >&2; failed=1; finish; }
"$PY" -c 'import pymemcache' 2>/dev/null ||
  { echo "suite_$SUITE: $PY lacks pymemcache (python3-pymemcache)" >&2; failed=1; finish; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_$SUITE.XXXXXX") || exit 1
DPID="" LOADPIDS=""
cleanup() {
  [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
  for p in $LOADPIDS; do kill -9 "$p" 2>/dev/null; done
  tests/memcached.sh stop "$TMP" 2>/dev/null
  [ "$failed" -gt 0 ] && cp "$TMP/daemon.log" "${TMPDIR:-/tmp}/suite_$SUITE.failed.log" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MCPORT=$(tests/memcached.sh start "$TMP") || { echo "suite_$SUITE: no memcached" >&2; failed=1; finish; }
MC="--SERVER=127.0.0.1:$MCPORT"
. tests/daemon.sh
. tests/tls_certs.sh
# shellcheck disable=SC2086
make_certs $TLS_CERTS ||
  { echo "suite_$SUITE: cannot make the test certificates" >&2; failed=1; finish; }
