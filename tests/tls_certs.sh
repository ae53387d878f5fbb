# tls_certs.sh - sourced by the TLS suites: a throwaway CA in $TMP (never
# kept) and cert NAME, which makes $TMP/NAME.pem and NAME.key signed by it
# (CN NAME, SAN IP 127.0.0.1).  make_certs NAME...: the CA, then each.
cert() {
  openssl req -newkey rsa:2048 -nodes -keyout "$TMP/$1.key" -out "$TMP/$1.csr" \
    -subj "/CN=$1" 2>/dev/null &&
  printf 'subjectAltName=IP:127.0.0.1\n' >"$TMP/$1.ext" &&
  openssl x509 -req -in "$TMP/$1.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" \
    -CAcreateserial -out "$TMP/$1.pem" -days 2 -extfile "$TMP/$1.ext" 2>/dev/null
}
make_certs() {
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/ca.key" \
    -out "$TMP/ca.pem" -days 2 -subj "/CN=lc-test-ca" 2>/dev/null || return 1
  local n
  for n in "$@"; do cert "$n" || return 1; done
}
