/*
 * lcd_etcd.h - a small client of etcd's v3 JSON gateway (etcd 3.4's
 * /v3/...: lease grant, keepalive and revoke, range, and the
 * transactions a leader election needs), over libcurl with json-c, for
 * the cluster (lcd_cluster.c).  Keys and values are base64 in the JSON
 * (OpenSSL's EVP_EncodeBlock/EVP_DecodeBlock); int64 fields come back as
 * JSON strings, which json-c converts.
 *
 * A handle is used by one thread at a time (it owns one curl handle, so
 * its connection is kept).  Each call tries the endpoints in turn, from
 * the one that answered last, each within the handle's timeout (moving
 * on when one cannot be reached or answers 5xx, e.g. a member without a
 * leader; a 4xx is the answer); it
 * returns 0, or -1 with a message in err (etcd unreachable, an HTTP
 * error, an answer that is not JSON or lacks what is needed).  Nothing
 * here retries beyond that or sleeps.
 */
#ifndef LCD_ETCD_H
#define LCD_ETCD_H

#include <stddef.h>
#include <stdint.h>

#define LCD_ETCD_ERR 256
#define LCD_ETCD_VALUE_MAX 1024 /* values this client reads */

typedef struct lcd_etcd lcd_etcd;

/* How to reach etcd beyond the URLs: TLS files (PEM; NULL: none, the
 * system's CAs for https) and user/password auth (user NULL: none; the
 * gateway then gets a token from /v3/auth/authenticate, again whenever
 * etcd refuses it).  The strings must outlive the handle. */
typedef struct lcd_etcd_auth {
  const char *cacert, *cert, *key;
  const char *user, *password;
} lcd_etcd_auth;

/* urls: "http://HOST:PORT[,https://HOST:PORT...]"; timeout_ms per
 * request; auth may be NULL.  NULL on a bad list (err says why) or no
 * memory. */
lcd_etcd *lcd_etcd_new(const char *urls, int timeout_ms,
                       const lcd_etcd_auth *auth, char *err, size_t errsize);
void lcd_etcd_free(lcd_etcd *e);
/* The endpoint the last call used (for messages). */
const char *lcd_etcd_endpoint(const lcd_etcd *e);

/* A lease of ttl_s seconds: its ID, and the TTL etcd granted. */
int lcd_etcd_grant(lcd_etcd *e, int ttl_s, int64_t *id, int *granted,
                   char *err, size_t errsize);
/* One renewal: *ttl the TTL it now has, 0 when the lease is gone. */
int lcd_etcd_keepalive(lcd_etcd *e, int64_t id, int *ttl, char *err,
                       size_t errsize);
int lcd_etcd_revoke(lcd_etcd *e, int64_t id, char *err, size_t errsize);

/* One key: *found, its value (NUL-terminated, at most
 * LCD_ETCD_VALUE_MAX - 1 bytes kept) and create revision. */
typedef struct lcd_etcd_kv {
  int found;
  int64_t create_rev, mod_rev, lease;
  char value[LCD_ETCD_VALUE_MAX];
} lcd_etcd_kv;
int lcd_etcd_get(lcd_etcd *e, const char *key, lcd_etcd_kv *kv, char *err,
                 size_t errsize);
/* Every key under prefix: fn per key (its name and kv); fn returning
 * nonzero stops the walk. */
int lcd_etcd_scan(lcd_etcd *e, const char *prefix,
                  int (*fn)(void *arg, const char *key, const lcd_etcd_kv *kv),
                  void *arg, char *err, size_t errsize);
/* Puts key = value bound to lease (0: none) if key does not exist (its
 * create revision is 0): *won, and then *rev, the new key's create
 * revision (the transaction's revision). */
int lcd_etcd_create(lcd_etcd *e, const char *key, const char *value,
                    int64_t lease, int *won, int64_t *rev, char *err,
                    size_t errsize);
/* Puts key = value (lease 0: none) if guard's create revision is
 * guard_rev: *ok. */
int lcd_etcd_put_if(lcd_etcd *e, const char *guard, int64_t guard_rev,
                    const char *key, const char *value, int64_t lease, int *ok,
                    char *err, size_t errsize);
/* Puts key = value bound to lease (0: none), unconditionally. */
int lcd_etcd_put(lcd_etcd *e, const char *key, const char *value,
                 int64_t lease, char *err, size_t errsize);
/* Deletes key if its create revision is rev: *ok. */
int lcd_etcd_delete_if(lcd_etcd *e, const char *key, int64_t rev, int *ok,
                       char *err, size_t errsize);

#endif
