/*
 * lcd_etcd.c - the etcd v3 JSON gateway client (see lcd_etcd.h): one
 * POST per call with libcurl, bodies built and answers parsed with
 * json-c, keys and values base64 with OpenSSL.
 */
#include "lcd_etcd.h"

#include <curl/curl.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define URLS_MAX 8
#define BODY_MAX (4u << 20) /* an answer larger than this is refused */

struct lcd_etcd {
  CURL *curl;
  char *urls[URLS_MAX];
  int n, cur;
  int timeout_ms;
  lcd_etcd_auth auth;
  char token[512]; /* auth: the current token, "" before the first */
  char *body; /* the answer being read */
  size_t blen, bcap;
  int too_big;
};

static void say(char *err, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *err, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, size, fmt, ap);
  va_end(ap);
}

static void curl_global(void) {
  static int done;
  if (!done) { /* from the main thread, before the cluster's starts */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    done = 1;
  }
}

lcd_etcd *lcd_etcd_new(const char *urls, int timeout_ms,
                       const lcd_etcd_auth *auth, char *err, size_t errsize) {
  curl_global();
  lcd_etcd *e = calloc(1, sizeof *e);
  if (e == NULL) {
    say(err, errsize, "out of memory");
    return NULL;
  }
  e->timeout_ms = timeout_ms;
  if (auth) e->auth = *auth;
  const char *p = urls;
  while (p && *p) {
    size_t len = strcspn(p, ",");
    if (len == 0 || e->n == URLS_MAX ||
        (strncmp(p, "http://", 7) != 0 && strncmp(p, "https://", 8) != 0)) {
      say(err, errsize,
          len == 0 ? "an empty endpoint"
          : e->n == URLS_MAX
              ? "more than 8 endpoints"
              : "endpoints are http://HOST:PORT or https://HOST:PORT");
      lcd_etcd_free(e);
      return NULL;
    }
    e->urls[e->n] = strndup(p, len);
    while (len > 1 && e->urls[e->n][len - 1] == '/') e->urls[e->n][--len] = 0;
    e->n++;
    p += len + (p[len] == ',');
  }
  if (e->n == 0) {
    say(err, errsize, "no endpoint");
    lcd_etcd_free(e);
    return NULL;
  }
  e->curl = curl_easy_init();
  if (e->curl == NULL) {
    say(err, errsize, "cannot start libcurl");
    lcd_etcd_free(e);
    return NULL;
  }
  return e;
}

void lcd_etcd_free(lcd_etcd *e) {
  if (e == NULL) return;
  for (int i = 0; i < e->n; i++) free(e->urls[i]);
  if (e->curl) curl_easy_cleanup(e->curl);
  free(e->body);
  free(e);
}

const char *lcd_etcd_endpoint(const lcd_etcd *e) { return e->urls[e->cur]; }

static size_t on_body(char *p, size_t size, size_t n, void *arg) {
  lcd_etcd *e = arg;
  size_t len = size * n;
  if (e->blen + len + 1 > BODY_MAX) {
    e->too_big = 1;
    return 0;
  }
  if (e->blen + len + 1 > e->bcap) {
    size_t cap = (e->blen + len + 1) * 2;
    char *b = realloc(e->body, cap);
    if (b == NULL) return 0;
    e->body = b;
    e->bcap = cap;
  }
  memcpy(e->body + e->blen, p, len);
  e->blen += len;
  e->body[e->blen] = '\0';
  return len;
}

/* POSTs req to path (with the token unless bare); *out the parsed answer
 * (json_object_put it).  *refused: etcd answered 4xx. */
static int post(lcd_etcd *e, const char *path, json_object *req, int bare,
                json_object **out, int *refused, char *err, size_t errsize) {
  const char *body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
  *out = NULL;
  *refused = 0;
  char authz[600];
  struct curl_slist *hdrs = NULL;
  if (!bare && e->token[0]) {
    snprintf(authz, sizeof authz, "Authorization: %s", e->token);
    hdrs = curl_slist_append(NULL, authz);
  }
  for (int tries = 0; tries < e->n; tries++) {
    char url[512];
    snprintf(url, sizeof url, "%s%s", e->urls[e->cur], path);
    CURL *c = e->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)e->timeout_ms);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, e);
    if (hdrs) curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    if (e->auth.cacert) curl_easy_setopt(c, CURLOPT_CAINFO, e->auth.cacert);
    if (e->auth.cert) curl_easy_setopt(c, CURLOPT_SSLCERT, e->auth.cert);
    if (e->auth.key) curl_easy_setopt(c, CURLOPT_SSLKEY, e->auth.key);
    e->blen = 0;
    e->too_big = 0;
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (rc == CURLE_OK && status == 200 && e->blen) {
      json_object *j = json_tokener_parse(e->body);
      curl_slist_free_all(hdrs);
      if (j && json_object_is_type(j, json_type_object)) {
        *out = j;
        return 0;
      }
      json_object_put(j);
      say(err, errsize, "%s: an answer that is not a JSON object", url);
      return -1;
    }
    if (rc == CURLE_OK && status < 500) { /* a refusal: the same anywhere */
      curl_slist_free_all(hdrs);
      say(err, errsize, "%s: HTTP %ld: %.200s", url, status,
          e->blen ? e->body : "");
      *refused = 1;
      return -1;
    }
    if (rc == CURLE_OK) { /* 5xx: this member cannot answer (no leader,
                             no quorum): the next one may */
      say(err, errsize, "%s: HTTP %ld: %.200s", url, status,
          e->blen ? e->body : "");
      e->cur = (e->cur + 1) % e->n;
      continue;
    }
    say(err, errsize, "%s: %s", url,
        e->too_big ? "an answer too large" : curl_easy_strerror(rc));
    e->cur = (e->cur + 1) % e->n; /* the next endpoint */
  }
  curl_slist_free_all(hdrs);
  return -1;
}

/* A token for the user (/v3/auth/authenticate). */
static int authenticate(lcd_etcd *e, char *err, size_t errsize) {
  json_object *req = json_object_new_object(), *res, *tok;
  json_object_object_add(req, "name", json_object_new_string(e->auth.user));
  json_object_object_add(req, "password",
                         json_object_new_string(e->auth.password
                                                    ? e->auth.password
                                                    : ""));
  int refused;
  int rc = post(e, "/v3/auth/authenticate", req, 1, &res, &refused, err,
                errsize);
  json_object_put(req);
  if (rc) return rc;
  if (!json_object_object_get_ex(res, "token", &tok) ||
      strlen(json_object_get_string(tok)) >= sizeof e->token) {
    say(err, errsize, "etcd authenticate: no token in the answer");
    json_object_put(res);
    return -1;
  }
  snprintf(e->token, sizeof e->token, "%s", json_object_get_string(tok));
  json_object_put(res);
  return 0;
}

/* post() with auth: a token first, and a new one when etcd refuses the
 * one it gave (they expire). */
static int call(lcd_etcd *e, const char *path, json_object *req,
                json_object **out, char *err, size_t errsize) {
  if (e->auth.user && !e->token[0] && authenticate(e, err, errsize) != 0)
    return -1;
  int refused;
  int rc = post(e, path, req, 0, out, &refused, err, errsize);
  if (rc && refused && e->auth.user) {
    e->token[0] = '\0';
    if (authenticate(e, err, errsize) != 0) return -1;
    rc = post(e, path, req, 0, out, &refused, err, errsize);
  }
  return rc;
}

/* ---- JSON and base64 ----------------------------------------------------- */

static json_object *b64(const char *s, size_t n) {
  size_t cap = 4 * ((n + 2) / 3) + 1;
  unsigned char *o = malloc(cap);
  if (o == NULL) return NULL;
  int len = EVP_EncodeBlock(o, (const unsigned char *)s, (int)n);
  json_object *j = json_object_new_string_len((char *)o, len);
  free(o);
  return j;
}

static json_object *b64s(const char *s) { return b64(s, strlen(s)); }

/* base64 text into out (NUL-terminated, truncated to size - 1). */
static int unb64(const char *in, char *out, size_t size) {
  size_t n = strlen(in);
  if (n % 4) return -1;
  unsigned char *o = malloc(n / 4 * 3 + 1);
  if (o == NULL) return -1;
  int len = n ? EVP_DecodeBlock(o, (const unsigned char *)in, (int)n) : 0;
  if (len < 0) {
    free(o);
    return -1;
  }
  if (n && in[n - 1] == '=') len--;
  if (n > 1 && in[n - 2] == '=') len--;
  size_t k = (size_t)len < size - 1 ? (size_t)len : size - 1;
  memcpy(out, o, k);
  out[k] = '\0';
  free(o);
  return 0;
}

static json_object *i64(int64_t v) {
  char t[24];
  snprintf(t, sizeof t, "%lld", (long long)v);
  return json_object_new_string(t);
}

static int64_t get_i64(json_object *o, const char *name) {
  json_object *v;
  return json_object_object_get_ex(o, name, &v) ? json_object_get_int64(v) : 0;
}

static int get_bool(json_object *o, const char *name) {
  json_object *v;
  return json_object_object_get_ex(o, name, &v) && json_object_get_boolean(v);
}

static json_object *obj(void) { return json_object_new_object(); }
static void add(json_object *o, const char *k, json_object *v) {
  json_object_object_add(o, k, v);
}

/* ---- leases ------------------------------------------------------------- */

int lcd_etcd_grant(lcd_etcd *e, int ttl_s, int64_t *id, int *granted,
                   char *err, size_t errsize) {
  json_object *req = obj(), *res;
  add(req, "TTL", i64(ttl_s));
  int rc = call(e, "/v3/lease/grant", req, &res, err, errsize);
  json_object_put(req);
  if (rc) return rc;
  *id = get_i64(res, "ID");
  *granted = (int)get_i64(res, "TTL");
  json_object *msg;
  if (*id == 0 || *granted <= 0) {
    say(err, errsize, "lease grant: %s",
        json_object_object_get_ex(res, "error", &msg)
            ? json_object_get_string(msg)
            : "no lease in the answer");
    rc = -1;
  }
  json_object_put(res);
  return rc;
}

int lcd_etcd_keepalive(lcd_etcd *e, int64_t id, int *ttl, char *err,
                       size_t errsize) {
  json_object *req = obj(), *res, *r;
  add(req, "ID", i64(id));
  int rc = call(e, "/v3/lease/keepalive", req, &res, err, errsize);
  json_object_put(req);
  if (rc) return rc;
  if (!json_object_object_get_ex(res, "result", &r)) {
    say(err, errsize, "lease keepalive: no result in the answer");
    json_object_put(res);
    return -1;
  }
  *ttl = (int)get_i64(r, "TTL"); /* absent (0): the lease is gone */
  json_object_put(res);
  return 0;
}

int lcd_etcd_revoke(lcd_etcd *e, int64_t id, char *err, size_t errsize) {
  json_object *req = obj(), *res;
  add(req, "ID", i64(id));
  int rc = call(e, "/v3/lease/revoke", req, &res, err, errsize);
  json_object_put(req);
  if (!rc) json_object_put(res);
  return rc;
}

/* ---- keys ---------------------------------------------------------------- */

static int read_kv(json_object *k, lcd_etcd_kv *kv, char *key, size_t ksize) {
  json_object *v;
  memset(kv, 0, sizeof *kv);
  kv->found = 1;
  kv->create_rev = get_i64(k, "create_revision");
  kv->mod_rev = get_i64(k, "mod_revision");
  kv->lease = get_i64(k, "lease");
  if (json_object_object_get_ex(k, "value", &v) &&
      unb64(json_object_get_string(v), kv->value, sizeof kv->value) != 0)
    return -1;
  if (key && json_object_object_get_ex(k, "key", &v) &&
      unb64(json_object_get_string(v), key, ksize) != 0)
    return -1;
  return 0;
}

static int range(lcd_etcd *e, const char *key, const char *end,
                 json_object **res, char *err, size_t errsize) {
  json_object *req = obj();
  add(req, "key", b64s(key));
  if (end) add(req, "range_end", b64s(end));
  int rc = call(e, "/v3/kv/range", req, res, err, errsize);
  json_object_put(req);
  return rc;
}

int lcd_etcd_get(lcd_etcd *e, const char *key, lcd_etcd_kv *kv, char *err,
                 size_t errsize) {
  json_object *res, *kvs;
  memset(kv, 0, sizeof *kv);
  if (range(e, key, NULL, &res, err, errsize)) return -1;
  int rc = 0;
  if (json_object_object_get_ex(res, "kvs", &kvs) &&
      json_object_array_length(kvs) > 0 &&
      read_kv(json_object_array_get_idx(kvs, 0), kv, NULL, 0) != 0) {
    say(err, errsize, "range %s: bad base64 in the answer", key);
    rc = -1;
  }
  json_object_put(res);
  return rc;
}

int lcd_etcd_scan(lcd_etcd *e, const char *prefix,
                  int (*fn)(void *arg, const char *key, const lcd_etcd_kv *kv),
                  void *arg, char *err, size_t errsize) {
  char end[512];
  size_t n = strlen(prefix);
  if (n == 0 || n >= sizeof end) {
    say(err, errsize, "a bad prefix");
    return -1;
  }
  memcpy(end, prefix, n + 1);
  end[n - 1]++; /* the prefix's keys: [prefix, end) */
  json_object *res, *kvs;
  if (range(e, prefix, end, &res, err, errsize)) return -1;
  int rc = 0;
  if (json_object_object_get_ex(res, "kvs", &kvs)) {
    size_t count = json_object_array_length(kvs);
    for (size_t i = 0; i < count && !rc; i++) {
      lcd_etcd_kv kv;
      char key[512];
      if (read_kv(json_object_array_get_idx(kvs, i), &kv, key, sizeof key)) {
        say(err, errsize, "range %s: bad base64 in the answer", prefix);
        rc = -1;
      } else if (fn(arg, key, &kv)) {
        break;
      }
    }
  }
  json_object_put(res);
  return rc;
}

/* A transaction of one compare (key's create revision == rev) and one
 * request on success; *ok: it succeeded; *rev_out: its revision. */
static int txn(lcd_etcd *e, const char *guard, int64_t rev, json_object *op,
               int *ok, int64_t *rev_out, char *err, size_t errsize) {
  json_object *req = obj(), *cmp = obj(), *cmps = json_object_new_array(),
              *ops = json_object_new_array(), *res, *hdr;
  add(cmp, "key", b64s(guard));
  add(cmp, "target", json_object_new_string("CREATE"));
  add(cmp, "result", json_object_new_string("EQUAL"));
  add(cmp, "create_revision", i64(rev));
  json_object_array_add(cmps, cmp);
  json_object_array_add(ops, op);
  add(req, "compare", cmps);
  add(req, "success", ops);
  int rc = call(e, "/v3/kv/txn", req, &res, err, errsize);
  json_object_put(req);
  if (rc) return rc;
  *ok = get_bool(res, "succeeded"); /* false is left out of the JSON */
  if (rev_out)
    *rev_out = json_object_object_get_ex(res, "header", &hdr)
                   ? get_i64(hdr, "revision")
                   : 0;
  json_object_put(res);
  if (rev_out && *ok && *rev_out <= 0) {
    say(err, errsize, "txn: no revision in the answer");
    return -1;
  }
  return 0;
}

static json_object *put_op(const char *key, const char *value, int64_t lease) {
  json_object *op = obj(), *put = obj();
  add(put, "key", b64s(key));
  add(put, "value", b64s(value));
  if (lease) add(put, "lease", i64(lease));
  add(op, "request_put", put);
  return op;
}

int lcd_etcd_create(lcd_etcd *e, const char *key, const char *value,
                    int64_t lease, int *won, int64_t *rev, char *err,
                    size_t errsize) {
  return txn(e, key, 0, put_op(key, value, lease), won, rev, err, errsize);
}

int lcd_etcd_put_if(lcd_etcd *e, const char *guard, int64_t guard_rev,
                    const char *key, const char *value, int64_t lease, int *ok,
                    char *err, size_t errsize) {
  return txn(e, guard, guard_rev, put_op(key, value, lease), ok, NULL, err,
             errsize);
}

int lcd_etcd_put(lcd_etcd *e, const char *key, const char *value,
                 int64_t lease, char *err, size_t errsize) {
  json_object *op = put_op(key, value, lease), *put, *res;
  json_object_object_get_ex(op, "request_put", &put);
  int rc = call(e, "/v3/kv/put", put, &res, err, errsize);
  json_object_put(op);
  if (!rc) json_object_put(res);
  return rc;
}

int lcd_etcd_delete_if(lcd_etcd *e, const char *key, int64_t rev, int *ok,
                       char *err, size_t errsize) {
  json_object *op = obj(), *del = obj();
  add(del, "key", b64s(key));
  add(op, "request_delete_range", del);
  return txn(e, key, rev, op, ok, NULL, err, errsize);
}
