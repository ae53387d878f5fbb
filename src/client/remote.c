/*
 * remote.c - remote mode: the handle talks to a logcounterd instead of
 * owning a log.  The daemon speaks memcached's text protocol, so this is
 * the same pooled libmemcached connection: "incr NAME n" answers the last
 * value of a fresh block of n, "get NAME" the value the counter stands at.
 *
 * An answer is trusted only if it is a possible block end (n <= v <=
 * 2^63-1).  The daemon's SERVER_ERROR lines carry the library's error name
 * (e.g. "SERVER_ERROR EOVERFLOW ..."), which is mapped back to its code.
 *
 * With lc_options.user, each connection authenticates first (cache.c:
 * memcached's text handshake, the daemon's --auth-file).  With
 * lc_options.tls_ca the same requests go over TLS (tls.c) instead.
 *
 * "PRIMARY,STANDBY" (two TCP daemons): each call goes to the one that
 * answered last and, when it answers ESTANDBY or cannot be reached, once
 * to the other.  A standby never hands out an id, so asking both can
 * never yield one twice; an increment lost on the way is a gap.
 */
#include "client/client.h"
#include "handle.h"

#include <stdio.h>
#include <string.h>

/* The LC_E code named by the token right after "SERVER_ERROR " in the
 * detail text (the daemon's "SERVER_ERROR EOVERFLOW ..."), or fallback. */
static int code_from_detail(int fallback) {
  const char *d = lc_last_detail(), *p = strstr(d, "SERVER_ERROR ");
  if (p) {
    p += strlen("SERVER_ERROR ");
  } else if ((p = strstr(d, "SERVER ERROR, ")) != NULL) { /* libmemcached's */
    p += strlen("SERVER ERROR, ");
  } else {
    return fallback;
  }
  size_t n = strcspn(p, " :\r\n");
  for (int code = -1; strcmp(lc_err_name(code), "EUNKNOWN") != 0; code--) {
    const char *name = lc_err_name(code);
    if (strlen(name) == n && strncmp(p, name, n) == 0) return code;
  }
  return fallback;
}

int lc__remote_config(const char *server, char *buf, size_t size) {
  int n = server[0] == '/' ? snprintf(buf, size, "--SOCKET=\"%s\"", server)
                           : snprintf(buf, size, "--SERVER=%s", server);
  if (n < 0 || (size_t)n >= size)
    return lc__fail(LC_EINVAL, "server address too long");
  return 0;
}

/* logcounterd treats every key starting with "tally:" as a tally: such a
 * name cannot be a serial counter through it. */
static int check_serial_name(const char *name) {
  if (name == NULL) return lc__fail(LC_ENAME, "NULL counter name");
  if (strncmp(name, LC_DAEMON_TALLY_PREFIX,
              sizeof LC_DAEMON_TALLY_PREFIX - 1) == 0)
    return lc__fail(LC_ENAME,
                    "\"%s\": names starting with \"%s\" are "
                    "tallies in logcounterd, not serial counters",
                    name, LC_DAEMON_TALLY_PREFIX);
  return 0;
}

/* One daemon's pool (i 0: the first, 1: the standby of "A,B"). */
static int open_one(lc_t *h, int i, const char *addr) {
  if (h->opt.tls_ca && h->opt.tls_ca[0])
    return lc__tls_open(&h->tls[i], &h->opt, addr);
  char config[1100];
  lc__cache *c = i ? &h->alt : &h->cache;
  int rc = lc__remote_config(addr, config, sizeof config);
  if (!rc) rc = lc__cache_open(c, config, h->opt.timeout_ms, h->opt.pool_size);
  if (!rc && h->opt.user)
    rc = lc__cache_set_auth(c, h->opt.user, h->opt.password);
  if (rc) lc__cache_close(c);
  return rc;
}

void lc__remote_pools_close(lc_t *h) {
  for (int i = 0; i < 2; i++) {
    lc__tls_close(h->tls[i]);
    h->tls[i] = NULL;
  }
  lc__cache_close(&h->alt);
  lc__cache_close(&h->cache);
}

int lc__remote_open(lc_t *h) {
  char first[1024];
  const char *s = h->server, *comma = s[0] == '/' ? NULL : strchr(s, ',');
  if (comma) {
    size_t n = (size_t)(comma - s);
    if (n == 0 || n >= sizeof first || comma[1] == '\0' ||
        strchr(comma + 1, ','))
      return lc__fail(LC_EINVAL, "server '%s': give HOST:PORT or two, "
                                 "PRIMARY,STANDBY", s);
    memcpy(first, s, n);
    first[n] = '\0';
    s = first;
  }
  int rc = open_one(h, 0, s);
  if (rc || !comma) return rc;
  if ((rc = open_one(h, 1, comma + 1)) != 0) {
    lc__remote_pools_close(h);
    return rc;
  }
  h->has_alt = true;
  return 0;
}

/* With two daemons: worth asking the other one (this one is a standby, or
 * did not answer). */
static bool other_may(const lc_t *h, int rc) {
  return h->has_alt &&
         (rc == LC_ESTANDBY || rc == LC_EMEMCACHED || rc == LC_ETIMEDOUT);
}

/* incr NAME n (incr) or get NAME on the daemon that answered last, and
 * once on the other when that one is a standby or did not answer (a
 * failed increment there is a gap at most, never an id).  0, LC__MISS or
 * the daemon's error code. */
static int ask(lc_t *h, bool incr, const char *name, uint64_t n, uint64_t *v) {
  int at = atomic_load(&h->active), rc;
  for (int tries = 0;; tries++) {
    lc__cache *c = at ? &h->alt : &h->cache;
    lc__tls *t = h->tls[at];
    if (t)
      rc = incr ? lc__tls_incr(t, name, n, v) : lc__tls_get(t, name, v);
    else
      rc = incr ? lc__cache_incr(c, name, strlen(name), n, v)
                : lc__cache_get(c, name, strlen(name), v);
    if (rc < 0) rc = code_from_detail(rc);
    if (tries == 1 || !other_may(h, rc)) break;
    at = !at;
  }
  if (rc >= 0) atomic_store(&h->active, at);
  return rc;
}

int lc__remote_next(lc_t *h, const char *name, uint64_t n, int64_t *first) {
  uint64_t v = 0;
  int rc = check_serial_name(name);
  if (rc) return rc;
  if (h->admin) {
    int64_t v64 = 0;
    int64_t n64 = (int64_t)n;
    rc = lc__admin_op(h, "next", name, &n64, &v64, 1);
    if (!rc) *first = v64;
    return rc;
  }
  rc = ask(h, true, name, n, &v);
  if (rc == LC__MISS)
    return lc__fail(LC_EMEMCACHED,
                    "%s answered NOT_FOUND: is it a "
                    "logcounterd?",
                    h->opt.server);
  if (rc) return rc;
  if (v < n || v > (uint64_t)LC_VALUE_MAX)
    return lc__fail(LC_EMEMCACHED, "%s answered %llu for a block of %llu",
                    h->opt.server, (unsigned long long)v,
                    (unsigned long long)n);
  *first = (int64_t)(v - n + 1);
  return 0;
}

int lc__remote_current(lc_t *h, const char *name, int64_t *value) {
  uint64_t v = 0;
  int rc = check_serial_name(name);
  if (rc) return rc;
  if (h->admin) return lc__admin_op(h, "current", name, NULL, value, 1);
  rc = ask(h, false, name, 0, &v);
  if (rc < 0) return rc;
  if (rc == LC__MISS) v = 0; /* the daemon omits counters never used */
  if (v > (uint64_t)LC_VALUE_MAX)
    return lc__fail(LC_EMEMCACHED, "%s answered %llu", h->opt.server,
                    (unsigned long long)v);
  *value = (int64_t)v;
  return 0;
}
