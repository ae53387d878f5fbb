/*
 * cache.c - memcached, through libmemcachedutil's connection pool.
 *
 * memcached_st is not thread-safe, so each call takes one connection from
 * the pool and gives it back.  Every wait is bounded by the configured
 * timeout (libmemcached's own defaults block for seconds): connect, poll,
 * send and receive, and the wait for a free pooled connection.
 *
 * libmemcached writes UINT64_MAX into an increment's result on failure; the
 * result is only read here after MEMCACHED_SUCCESS.
 *
 * Every failure's detail comes from reason(): memcached's or libmemcached's
 * own words, never libmemcached's stale "SUCCESS" and never empty.
 */
#include "cache/cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* libmemcached's messages start with the address of its handle and end
 * with its source file; keep only the words between. */
static const char *clean(const char *msg, char *buf, size_t size) {
  if (msg == NULL) return "";
  if (msg[0] == '(' && strncmp(msg, "(0x", 3) == 0) {
    const char *p = strchr(msg, ')');
    if (p) msg = p + 1;
  }
  while (*msg == ' ') msg++;
  size_t n = 0;
  for (; *msg && n + 1 < size && strncmp(msg, " -> ", 4) != 0; msg++) {
    if (*msg == ' ' && n > 0 && buf[n - 1] == ' ') continue;
    buf[n++] = *msg;
  }
  while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == ',')) n--;
  buf[n] = '\0';
  return buf;
}

/* The server replies libmemcached turns into a code of their own without
 * recording them (textual_read_one_response in its response.cc): after
 * those, memcached_last_error() is MEMCACHED_SUCCESS and
 * memcached_last_error_message() answers "SUCCESS".  These are the words
 * it matched the reply against (memcached 1.6 goes on, e.g. "... out of
 * memory storing object"; the rest is lost). */
static const char *dropped_reply(memcached_return_t rc) {
  switch (rc) {
  case MEMCACHED_SERVER_MEMORY_ALLOCATION_FAILURE:
    return "SERVER_ERROR out of memory";
  case MEMCACHED_E2BIG: return "SERVER_ERROR object too large for cache";
  case MEMCACHED_SERVER_ERROR: return "SERVER_ERROR"; /* a bare one */
  default: return NULL;
  }
}

/* Why a call on mc (NULL: no handle) failed with rc: libmemcached's record
 * of this failure, cleaned (memcached's own words for a CLIENT_ERROR or a
 * SERVER_ERROR it keeps, the system's for a socket error); else the reply
 * it dropped; else its name for rc.  Never empty, never "SUCCESS". */
static const char *reason(memcached_st *mc, memcached_return_t rc, char *buf,
                          size_t size) {
  /* initialize_query() clears the record at each call, so a record is
   * this call's; it is about rc unless another failure came first. */
  memcached_return_t rec = mc ? memcached_last_error(mc) : MEMCACHED_SUCCESS;
  const char *reply = dropped_reply(rc);
  if (memcached_failed(rec) && (rec == rc || reply == NULL)) {
    const char *why = clean(memcached_last_error_message(mc), buf, size);
    if (why[0] != '\0' &&
        strcmp(why, memcached_strerror(mc, MEMCACHED_SUCCESS)))
      return why;
  }
  if (reply) return reply;
  if (rc == MEMCACHED_SUCCESS) return "libmemcached gave no reason";
  return memcached_strerror(mc, rc);
}

static int map_error(memcached_st *mc, memcached_return_t rc, const char *op) {
  char buf[LC__DETAIL_MAX];
  const char *why = reason(mc, rc, buf, sizeof buf);
  switch (rc) {
  case MEMCACHED_TIMEOUT:
    return lc__fail(LC_ETIMEDOUT, "memcached %s: %s", op, why);
  default: return lc__fail(LC_EMEMCACHED, "memcached %s: %s", op, why);
  }
}

/* Does the libmemcached config set this option (matched without regard
 * to case, as libmemcached's own parser does)? */
static bool names_option(const char *config, const char *opt) {
  size_t n = strlen(opt);
  for (const char *p = config; *p; p++)
    if (strncasecmp(p, opt, n) == 0) return true;
  return false;
}

int lc__cache_open(lc__cache *c, const char *config, int timeout_ms,
                   int pool_size) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->pipe_mu, NULL);
  char err[256] = "";
  if (libmemcached_check_configuration(config, strlen(config), err,
                                       sizeof err) != MEMCACHED_SUCCESS)
    return lc__fail(LC_ECONFIG, "'%s': %s", config,
                    clean(err, err, sizeof err));
  c->master = memcached(config, strlen(config));
  if (c->master == NULL)
    return lc__fail(LC_ECONFIG, "cannot parse '%s'", config);
  const struct {
    memcached_behavior_t b;
    uint64_t v;
  } set[] = {
      {MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, (uint64_t)timeout_ms},
      {MEMCACHED_BEHAVIOR_POLL_TIMEOUT, (uint64_t)timeout_ms},
      {MEMCACHED_BEHAVIOR_SND_TIMEOUT, (uint64_t)timeout_ms * 1000},
      {MEMCACHED_BEHAVIOR_RCV_TIMEOUT, (uint64_t)timeout_ms * 1000},
      {MEMCACHED_BEHAVIOR_RETRY_TIMEOUT, 0}, /* reconnect at once */
      {MEMCACHED_BEHAVIOR_TCP_NODELAY, 1},
      {MEMCACHED_BEHAVIOR_NOREPLY, 0}, /* every answer is needed */
  };
  /* Several servers: consistent hashing (libmemcached's ketama continuum,
   * what pylibmc's "ketama" behavior sets too), unless the config chose a
   * distribution: a server that comes or goes moves only its own share of
   * counters. */
  if (!names_option(config, "--distribution=") &&
      memcached_behavior_set(c->master, MEMCACHED_BEHAVIOR_KETAMA, 1) !=
          MEMCACHED_SUCCESS) {
    memcached_free(c->master);
    c->master = NULL;
    return lc__fail(LC_ECONFIG, "cannot set consistent hashing");
  }
  for (size_t i = 0; i < sizeof set / sizeof set[0]; i++) {
    if (memcached_behavior_set(c->master, set[i].b, set[i].v) !=
        MEMCACHED_SUCCESS) {
      memcached_free(c->master);
      c->master = NULL;
      return lc__fail(LC_ECONFIG, "cannot set libmemcached behavior %d",
                      set[i].b);
    }
  }
  c->pool = memcached_pool_create(c->master, 1, (uint32_t)pool_size);
  if (c->pool == NULL) {
    memcached_free(c->master);
    c->master = NULL;
    return lc__fail(LC_ENOMEM, "cannot create the memcached pool");
  }
  c->fetch_wait.tv_sec = timeout_ms / 1000;
  c->fetch_wait.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
  return 0;
}

void lc__cache_close(lc__cache *c) {
  lc__cache_pipe_close(c);
  pthread_mutex_destroy(&c->pipe_mu);
  if (c->pool) memcached_pool_destroy(c->pool);
  if (c->master) memcached_free(c->master);
  if (c->auth) {
    explicit_bzero(c->auth, c->auth_len);
    free(c->auth);
  }
  memset(c, 0, sizeof *c);
}

int lc__cache_set_auth(lc__cache *c, const char *user, const char *password) {
  size_t n = strlen(user) + 1 + strlen(password);
  if ((c->auth = malloc(n + 1)) == NULL)
    return lc__fail(LC_ENOMEM, "cannot copy the credentials");
  snprintf(c->auth, n + 1, "%s %s", user, password);
  c->auth_len = n;
  return 0;
}

/* The handshake on a connection that has not made it since it last
 * connected: a connection that made it carries c as its user data
 * (cleared when give closes it).  The key is ignored by the daemon. */
static int authenticate(lc__cache *c, memcached_st *mc) {
  if (!c->auth || memcached_get_user_data(mc) == c) return 0;
  memcached_return_t rc =
      memcached_set(mc, "auth", 4, c->auth, c->auth_len, 0, 0);
  if (rc == MEMCACHED_SUCCESS) {
    memcached_set_user_data(mc, c);
    return 0;
  }
  int err = rc == MEMCACHED_CLIENT_ERROR || rc == MEMCACHED_NOTSTORED ||
                    rc == MEMCACHED_ERROR
                ? LC_EAUTH
                : 0;
  if (err) {
    char buf[LC__DETAIL_MAX];
    err = lc__fail(LC_EAUTH, "authentication refused: %s",
                   reason(mc, rc, buf, sizeof buf));
  } else {
    err = map_error(mc, rc, "authenticate");
  }
  memcached_quit(mc); /* the daemon closes it anyway */
  return err;
}

/* A request refused because the connection was not authenticated: it
 * reconnected inside libmemcached since its handshake.  Nothing was done,
 * so the caller authenticates again and retries once. */
static bool unauthenticated(lc__cache *c, memcached_st *mc,
                            memcached_return_t rc) {
  if (!c->auth || rc != MEMCACHED_CLIENT_ERROR) return false;
  const char *m = memcached_last_error_message(mc);
  if (!m || !strstr(m, "unauthenticated")) return false;
  memcached_set_user_data(mc, NULL);
  return true;
}

static int take(lc__cache *c, memcached_st **mc) {
  memcached_return_t rc;
  struct timespec wait = c->fetch_wait;
  *mc = memcached_pool_fetch(c->pool, &wait, &rc);
  if (*mc == NULL) /* MEMCACHED_SUCCESS: it could not create one */
    return lc__fail(LC_ETIMEDOUT, "no free memcached connection: %s",
                    rc == MEMCACHED_SUCCESS ? "cannot create one"
                                            : memcached_strerror(NULL, rc));
  int err = authenticate(c, *mc);
  if (err) memcached_pool_release(c->pool, *mc);
  return err;
}

/* Back to the pool.  After a failure (a timeout above all) the
 * connection may still owe an answer, which the next command on it would
 * read as its own: close it (the next use reconnects, and authenticates
 * again). */
static void give(lc__cache *c, memcached_st *mc, int err) {
  if (err < 0 && (err != LC_EBADVALUE || c->auth)) {
    memcached_quit(mc);
    memcached_set_user_data(mc, NULL);
  }
  memcached_pool_release(c->pool, mc);
}

bool lc__cache_parse_u64(const char *v, size_t n, uint64_t *out) {
  char buf[32];
  while (n > 0 && v[n - 1] == ' ') n--;
  if (n == 0 || n >= sizeof buf || v[0] < '0' || v[0] > '9') return false;
  memcpy(buf, v, n);
  buf[n] = '\0';
  char *end;
  errno = 0;
  unsigned long long x = strtoull(buf, &end, 10);
  if (errno || *end) return false;
  *out = x;
  return true;
}

int lc__cache_incr(lc__cache *c, const char *key, size_t klen, uint64_t delta,
                   uint64_t *out) {
  memcached_st *mc;
  int err = take(c, &mc);
  if (err) return err;
  uint64_t v = 0;
  memcached_return_t rc =
      memcached_increment_by_key(mc, key, klen, key, klen, delta, &v);
  if (unauthenticated(c, mc, rc) && (err = authenticate(c, mc)) == 0)
    rc = memcached_increment_by_key(mc, key, klen, key, klen, delta, &v);
  if (err) {
    /* authenticate closed it */
  } else if (rc == MEMCACHED_SUCCESS) {
    *out = v;
    err = 0;
  } else if (rc == MEMCACHED_NOTFOUND) {
    err = LC__MISS;
  } else if (rc == MEMCACHED_CLIENT_ERROR) {
    /* memcached answers CLIENT_ERROR to incr on a non-numeric value */
    char buf[LC__DETAIL_MAX];
    err = lc__fail(LC_EBADVALUE, "memcached incr %.*s: %s", (int)klen, key,
                   reason(mc, rc, buf, sizeof buf));
  } else {
    err = map_error(mc, rc, "incr");
  }
  give(c, mc, err);
  return err;
}

int lc__cache_get(lc__cache *c, const char *key, size_t klen, uint64_t *out) {
  memcached_st *mc;
  int err = take(c, &mc);
  if (err) return err;
  size_t vlen = 0;
  uint32_t flags = 0;
  memcached_return_t rc;
  char *v = memcached_get(mc, key, klen, &vlen, &flags, &rc);
  if (!v && unauthenticated(c, mc, rc) && (err = authenticate(c, mc)) == 0)
    v = memcached_get(mc, key, klen, &vlen, &flags, &rc);
  if (err) {
    /* authenticate closed it */
  } else if (v != NULL) {
    err = lc__cache_parse_u64(v, vlen, out)
              ? 0
              : lc__fail(LC_EBADVALUE,
                         "memcached key %.*s holds %zu bytes that "
                         "are not a decimal number",
                         (int)klen, key, vlen);
    free(v);
  } else if (rc == MEMCACHED_NOTFOUND) {
    err = LC__MISS;
  } else if (rc == MEMCACHED_SUCCESS) { /* an empty value */
    err = lc__fail(LC_EBADVALUE, "memcached key %.*s holds an empty value",
                   (int)klen, key);
  } else {
    err = map_error(mc, rc, "get");
  }
  give(c, mc, err);
  return err;
}

int lc__cache_add(lc__cache *c, const char *key, size_t klen, uint64_t v) {
  char buf[24];
  int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
  return lc__cache_add_text(c, key, klen, key, klen, buf, (size_t)n, 0);
}

int lc__cache_lower(lc__cache *c, const char *key, size_t klen, uint64_t expect,
                    uint64_t to) {
  memcached_st *mc;
  int err = take(c, &mc);
  if (err) return err;
  memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_SUPPORT_CAS, 1);
  const char *keys[1] = {key};
  size_t lens[1] = {klen};
  memcached_return_t rc = memcached_mget(mc, keys, lens, 1);
  memcached_result_st *r =
      rc == MEMCACHED_SUCCESS ? memcached_fetch_result(mc, NULL, &rc) : NULL;
  if (r == NULL) {
    err = rc == MEMCACHED_NOTFOUND || rc == MEMCACHED_END
              ? LC__MISS
              : map_error(mc, rc, "gets");
  } else {
    uint64_t cas = memcached_result_cas(r);
    uint64_t x;
    err = lc__cache_parse_u64(memcached_result_value(r),
                              memcached_result_length(r), &x) &&
                  x == expect
              ? 0
              : LC__EXISTS;
    memcached_result_free(r);
    /* the end of the answer */
    while ((r = memcached_fetch_result(mc, NULL, &rc)) != NULL)
      memcached_result_free(r);
    if (err == 0) {
      char buf[24];
      int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)to);
      rc = memcached_cas(mc, key, klen, buf, (size_t)n, 0, 0, cas);
      err = rc == MEMCACHED_SUCCESS ? 0
            : rc == MEMCACHED_DATA_EXISTS || rc == MEMCACHED_NOTFOUND
                ? LC__EXISTS
                : map_error(mc, rc, "cas");
    }
  }
  memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_SUPPORT_CAS, 0);
  give(c, mc, err);
  return err;
}

int lc__cache_add_text(lc__cache *c, const char *master, size_t mlen,
                       const char *key, size_t klen, const char *v, size_t vlen,
                       time_t ttl) {
  memcached_st *mc;
  int err = take(c, &mc);
  if (err) return err;
  memcached_return_t rc =
      memcached_add_by_key(mc, master, mlen, key, klen, v, vlen, ttl, 0);
  if (rc == MEMCACHED_SUCCESS)
    err = 0;
  else if (rc == MEMCACHED_NOTSTORED || rc == MEMCACHED_DATA_EXISTS)
    err = LC__EXISTS;
  else
    err = map_error(mc, rc, "add");
  give(c, mc, err);
  return err;
}

int lc__cache_set_text(lc__cache *c, const char *master, size_t mlen,
                       const char *key, size_t klen, const char *v,
                       size_t vlen) {
  memcached_st *mc;
  int err = take(c, &mc);
  if (err) return err;
  memcached_return_t rc =
      memcached_set_by_key(mc, master, mlen, key, klen, v, vlen, 0, 0);
  err = rc == MEMCACHED_SUCCESS ? 0 : map_error(mc, rc, "set");
  give(c, mc, err);
  return err;
}

int lc__cache_get_text(lc__cache *c, const char *master, size_t mlen,
                       const char *key, size_t klen, char *buf, size_t size) {
  memcached_st *mc;
  int err = take(c, &mc);
  if (err) return err;
  size_t vlen = 0;
  uint32_t flags = 0;
  memcached_return_t rc;
  char *v =
      memcached_get_by_key(mc, master, mlen, key, klen, &vlen, &flags, &rc);
  if (v != NULL || rc == MEMCACHED_SUCCESS) {
    size_t n = vlen < size - 1 ? vlen : size - 1;
    if (n) memcpy(buf, v, n);
    buf[n] = '\0';
    free(v);
    err = 0;
  } else {
    err = rc == MEMCACHED_NOTFOUND ? LC__MISS : map_error(mc, rc, "get");
  }
  give(c, mc, err);
  return err;
}

int lc__cache_delete(lc__cache *c, const char *master, size_t mlen,
                     const char *key, size_t klen) {
  memcached_st *mc;
  int err = take(c, &mc);
  if (err) return err;
  memcached_return_t rc =
      memcached_delete_by_key(mc, master, mlen, key, klen, 0);
  err = rc == MEMCACHED_SUCCESS    ? 0
        : rc == MEMCACHED_NOTFOUND ? LC__MISS
                                   : map_error(mc, rc, "delete");
  give(c, mc, err);
  return err;
}

int lc__cache_mget(lc__cache *c, const char *const *keys, const size_t *lens,
                   size_t n, lc__cache_got fn, void *arg) {
  memcached_st *mc;
  int err = take(c, &mc);
  if (err) return err;
  memcached_return_t rc = memcached_mget(mc, keys, lens, n);
  memcached_result_st *r;
  while (rc == MEMCACHED_SUCCESS &&
         (r = memcached_fetch_result(mc, NULL, &rc)) != NULL) {
    fn(arg, memcached_result_key_value(r), memcached_result_key_length(r),
       memcached_result_value(r), memcached_result_length(r));
    memcached_result_free(r);
    rc = MEMCACHED_SUCCESS;
  }
  memcached_return_t last = memcached_last_error(mc);
  if (rc != MEMCACHED_SUCCESS && rc != MEMCACHED_END &&
      rc != MEMCACHED_NOTFOUND)
    err = map_error(mc, rc, "multi-get");
  else if (memcached_failed(last) && last != MEMCACHED_NOTFOUND &&
           last != MEMCACHED_END)
    /* A server's connection failed under the fetch (closed by memcached
     * or a restart, and found so only now): libmemcached 1.1 goes on to
     * the other servers and, once they have answered, ends with NOT FOUND
     * as if that server's keys were missing.  Its record of the failure
     * (this call's: initialize_query clears it) tells. */
    err = map_error(mc, last, "multi-get");
  give(c, mc, err);
  return err;
}
