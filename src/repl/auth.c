/*
 * auth.c - the replication handshake's proof of a shared secret
 * (lc_options.replication_secret), so that no stray process can follow a
 * primary, nor pose as one to a standby.
 *
 * Challenge and response, each side proving the secret on the other's
 * fresh nonce (32 random bytes from getrandom, hex), with HMAC-SHA256
 * (OpenSSL's libcrypto), compared in constant time:
 *   standby -> primary  'h' "2 EPOCH SEQ NS"
 *   primary -> standby  'c' "NP HMAC(secret, "primary" NS NP)"
 *   standby -> primary  'v' "HMAC(secret, "standby" NP NS)"
 * then the primary's 'm' as without a secret.  The secret itself never
 * crosses the wire; a recorded exchange is useless against fresh nonces.
 * It does not encrypt the stream: run replication on a trusted network
 * or a tunnel (TLS for the stream is not built).
 */
#include "repl/repl.h"
#include "handle.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

static void hex(const unsigned char *p, size_t n, char *out) {
  for (size_t i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", p[i]);
}

int lc__repl_nonce(char out[LC__REPL_HEX + 1]) {
  unsigned char b[LC__REPL_HEX / 2];
  if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
    return lc__fail(LC_EREMOTE, "replication: no random bytes for a nonce");
  hex(b, sizeof b, out);
  return 0;
}

void lc__repl_mac(const char *secret, const char *role, const char *a,
                  const char *b, char out[LC__REPL_HEX + 1]) {
  char msg[16 + 2 * (LC__REPL_HEX + 1)];
  int n = snprintf(msg, sizeof msg, "%s %s %s", role, a, b);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret, (int)strlen(secret), (unsigned char *)msg,
       (size_t)n, md, &len);
  hex(md, len < LC__REPL_HEX / 2 ? len : LC__REPL_HEX / 2, out);
}

bool lc__repl_mac_ok(const char *secret, const char *role, const char *a,
                     const char *b, const char *got) {
  char want[LC__REPL_HEX + 1];
  lc__repl_mac(secret, role, a, b, want);
  return strlen(got) == LC__REPL_HEX &&
         CRYPTO_memcmp(want, got, LC__REPL_HEX) == 0;
}
