/*
 * admin_ops.c - the verbs of the admin socket (wire format: net/net.h),
 * each one call on the handle: what a remote handle's call (client/admin.c)
 * sends, answered with the call's own result or error (its name and the
 * thread's detail).  Streams (records, ledger, tallies, counters) are
 * written as they are read, from the library's snapshot iterators.
 */
#include "core/core.h"
#include "handle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 10

typedef struct args {
  int n;
  char *v[MAX_ARGS];
  char *rest; /* what follows the last field, for a verb that takes it */
} args;

/* Splits line at single spaces into at most max fields; with rest, what
 * follows the max-th field (may be "") is the rest. */
static void split(char *line, int max, bool rest, args *a) {
  memset(a, 0, sizeof *a);
  char *p = line;
  while (*p && a->n < max) {
    a->v[a->n++] = p;
    char *sp = strchr(p, ' ');
    if (!sp) {
      p += strlen(p);
      break;
    }
    *sp = '\0';
    p = sp + 1;
  }
  if (rest) a->rest = p;
}

static bool num_i64(const char *s, int64_t *out) {
  if (s == NULL || *s == '\0') return false;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

static bool num_u64(const char *s, uint64_t *out) {
  if (s == NULL || *s < '0' || *s > '9') return false;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

/* The final line of a call: OK with its numbers, or ERR. */
static int reply(lc__aconn *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int reply(lc__aconn *c, int rc, const char *fmt, ...) {
  if (rc < 0)
    return lc__aconn_printf(c, "ERR %s %s", lc_err_name(rc), lc_last_detail());
  char buf[256] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return lc__aconn_printf(c, "OK%s%s", buf[0] ? " " : "", buf);
}

/* OK, or ERR with the call's error. */
static int done(lc__aconn *c, int rc) {
  if (rc < 0)
    return lc__aconn_printf(c, "ERR %s %s", lc_err_name(rc), lc_last_detail());
  return lc__aconn_printf(c, "OK");
}

static int usage(lc__aconn *c, const char *verb, const char *want) {
  lc__fail(LC_EINVAL, "admin: usage: %s %s", verb, want);
  return done(c, LC_EINVAL);
}

/* ---- streams: each item is one line; a failed write ends the stream */
typedef struct stream {
  lc__aconn *c;
  int err; /* a write failed: the client is gone */
} stream;

static int records(lc_t *h, lc__aconn *c, const char *name, bool ledger) {
  lc_iter *it;
  int rc = ledger ? lc_ledger_open(h, name, &it) : lc_iter_open(h, name, &it);
  if (rc) return done(c, rc);
  int wrc = 0;
  for (;;) {
    lc_record r;
    lc_gap g;
    rc = ledger ? lc_ledger_next(it, &g) : lc_iter_next(it, &r);
    if (rc == 0 || (rc < 0 && rc != LC_ECORRUPT)) break;
    if (rc == LC_ECORRUPT)
      wrc = lc__aconn_printf(c, "B %lld %s",
                             (long long)(ledger ? g.last : r.last),
                             lc_last_detail());
    else if (ledger)
      wrc = lc__aconn_printf(c, "G %lld %lld %lld %d%s%s", (long long)g.first,
                             (long long)g.last, (long long)g.time_us, g.cause,
                             g.reason[0] ? " " : "", g.reason);
    else
      wrc = lc__aconn_printf(c, "R %lld %lld %llu %lld %d", (long long)r.first,
                             (long long)r.last, (unsigned long long)r.count,
                             (long long)r.time_us, r.version);
    if (wrc) break;
  }
  lc_iter_close(it);
  if (wrc) return wrc;
  return done(c, rc);
}

static int put_tally(void *arg, const lc_tally_info *t) {
  stream *s = arg;
  s->err = lc__aconn_printf(s->c, "T %lld %llu %s", (long long)t->total,
                            (unsigned long long)t->losses, t->name);
  return s->err != 0;
}

static int put_counter(void *arg, const char *name) {
  stream *s = arg;
  s->err = lc__aconn_printf(s->c, "N %s", name);
  return s->err != 0;
}

static void progress(void *arg, uint64_t a, uint64_t b) {
  stream *s = arg;
  if (!s->err) s->err = lc__aconn_printf(s->c, "P %llu %llu",
                                         (unsigned long long)a,
                                         (unsigned long long)b);
  if (!s->err) s->err = lc__aconn_flush(s->c);
}

static void backup_progress(void *arg, uint64_t keys) {
  progress(arg, keys, 0);
}

/* tally-list ORDER HASMIN MIN HASMAX MAX OFFSET LIMIT [PREFIX] */
static int tally_list(lc_t *h, lc__aconn *c, args *a) {
  lc_tally_list_opts o;
  memset(&o, 0, sizeof o);
  uint64_t order, hmin, hmax, count = 0;
  if (a->n != 8 || !num_u64(a->v[1], &order) || !num_u64(a->v[2], &hmin) ||
      !num_i64(a->v[3], &o.min) || !num_u64(a->v[4], &hmax) ||
      !num_i64(a->v[5], &o.max) || !num_u64(a->v[6], &o.offset) ||
      !num_u64(a->v[7], &o.limit))
    return usage(c, a->v[0], "ORDER HASMIN MIN HASMAX MAX OFFSET LIMIT "
                             "[PREFIX]");
  stream s = {.c = c};
  o.order = order ? LC_TALLY_BY_TOTAL_DESC : LC_TALLY_BY_NAME;
  o.has_min = hmin != 0;
  o.has_max = hmax != 0;
  o.prefix = a->rest;
  o.cb = put_tally;
  o.arg = &s;
  int rc = lc_tally_list(h, &o, &count);
  if (s.err) return s.err;
  return reply(c, rc, "%llu", (unsigned long long)count);
}

/* prune NAME KEEP BELOW OLDER_US */
static int prune(lc_t *h, lc__aconn *c, args *a) {
  lc_prune_opts o;
  memset(&o, 0, sizeof o);
  if (a->n != 5 || !num_u64(a->v[2], &o.keep) || !num_i64(a->v[3], &o.below) ||
      !num_i64(a->v[4], &o.older_than_us))
    return usage(c, a->v[0], "NAME KEEP BELOW OLDER_US");
  stream s = {.c = c};
  o.progress = progress;
  o.progress_arg = &s;
  lc_prune_result r = {0, 0, 0};
  int rc = lc_prune(h, a->v[1], &o, &r);
  if (s.err) return s.err;
  return reply(c, rc, "%llu %llu %llu", (unsigned long long)r.deleted,
               (unsigned long long)r.kept, (unsigned long long)r.ledger_deleted);
}

static int backup(lc_t *h, lc__aconn *c, args *a) {
  if (a->n != 1 || a->rest[0] != '/')
    return usage(c, a->v[0], "/ABSOLUTE/DIR");
  stream s = {.c = c};
  lc_backup_opts o = {backup_progress, &s};
  lc_backup_result r;
  memset(&r, 0, sizeof r);
  int rc = lc_backup(h, a->rest, &o, &r);
  if (s.err) return s.err;
  return reply(c, rc, "%llu %llu %llu %lld", (unsigned long long)r.keys,
               (unsigned long long)r.records, (unsigned long long)r.bytes,
               (long long)r.time_us);
}

/* The verbs that take NAME and at most one number, and answer at most one
 * number. */
static int simple(lc_t *h, lc__aconn *c, args *a, bool *known) {
  const char *verb = a->v[0], *name = a->n > 1 ? a->v[1] : "";
  int64_t arg = 0, out = 0;
  uint64_t u = 0;
  bool one = a->n == 2, two = a->n == 3 && num_i64(a->v[2], &arg);
  int rc;
  *known = true;
  if (!strcmp(verb, "next")) {
    if (a->n != 3 || !num_u64(a->v[2], &u)) return usage(c, verb, "NAME N");
    rc = lc_next_n(h, name, u, &out);
  } else if (!strcmp(verb, "current") && one) {
    rc = lc_current(h, name, &out);
  } else if (!strcmp(verb, "restore") && one) {
    rc = lc_restore(h, name, &out);
  } else if (!strcmp(verb, "reservation") && one) {
    rc = lc_reservation(h, name, &out);
  } else if (!strcmp(verb, "release") && one) {
    rc = lc_release(h, name, &out);
  } else if (!strcmp(verb, "advance") && two) {
    return done(c, lc_advance(h, name, arg));
  } else if (!strcmp(verb, "adopt") && two) {
    return done(c, lc_adopt(h, name, arg));
  } else if (!strcmp(verb, "tally-add") && two) {
    rc = lc_tally_add_total(h, name, arg, &out);
  } else if (!strcmp(verb, "tally-lost") && one) {
    uint64_t m = 0;
    rc = lc_tally_lost(h, name, &u, &m);
    return reply(c, rc, "%llu %llu", (unsigned long long)u,
                 (unsigned long long)m);
  } else if (!strcmp(verb, "tally-get") && one) {
    int64_t total = 0, pending = 0;
    rc = lc_tally_get(h, name, &total, &pending, &u);
    return reply(c, rc, "%lld %lld %llu", (long long)total, (long long)pending,
                 (unsigned long long)u);
  } else {
    *known = false;
    return 0;
  }
  return reply(c, rc, "%lld", (long long)out);
}

/* How many fields a verb's line has before its rest (a void's reason, a
 * tally prefix, a backup's directory); 0: no rest. */
static int fields_before_rest(const char *verb, size_t n) {
  if (n == 4 && !memcmp(verb, "void", 4)) return 3;
  if (n == 10 && !memcmp(verb, "tally-list", 10)) return 8;
  if (n == 6 && !memcmp(verb, "backup", 6)) return 1;
  return 0;
}

int lc__admin_srv_serve(lc_t *h, lc__aconn *c, char *line) {
  args a;
  int nrest = fields_before_rest(line, strcspn(line, " "));
  split(line, nrest ? nrest : MAX_ARGS, nrest > 0, &a);
  if (a.n == 0) return usage(c, "", "VERB ARGS (see net/net.h)");
  const char *verb = a.v[0];
  lc__detail_clear();
  if (!strcmp(verb, "hello"))
    return reply(c, 0, "logcounter-admin %d %s", LC__ADMIN_PROTO,
                 lc_version());
  if (!strcmp(verb, "records") || !strcmp(verb, "ledger")) {
    if (a.n != 2) return usage(c, verb, "NAME");
    return records(h, c, a.v[1], verb[0] == 'l');
  }
  if (!strcmp(verb, "void")) {
    int64_t v = 0;
    if (a.n != 3 || !num_i64(a.v[2], &v))
      return usage(c, verb, "NAME VALUE REASON");
    return done(c, lc_void(h, a.v[1], v, a.rest));
  }
  if (!strcmp(verb, "prune")) return prune(h, c, &a);
  if (!strcmp(verb, "tally-list")) return tally_list(h, c, &a);
  if (!strcmp(verb, "tally-flush")) {
    uint64_t max = 0, flags = 0, flushed = 0;
    if (a.n != 3 || !num_u64(a.v[1], &max) || !num_u64(a.v[2], &flags))
      return usage(c, verb, "MAX FLAGS");
    int rc = lc_tally_flush(h, max, (int)flags, &flushed);
    return reply(c, rc, "%llu", (unsigned long long)flushed);
  }
  if (!strcmp(verb, "counters")) {
    stream s = {.c = c};
    uint64_t n = 0;
    int rc = lc_list_counters(h, put_counter, &s, &n);
    return s.err ? s.err : reply(c, rc, "%llu", (unsigned long long)n);
  }
  if (!strcmp(verb, "backup")) return backup(h, c, &a);
  if (!strcmp(verb, "promote")) { /* promote FORCE ABOVE */
    uint64_t force = 0, n = 0;
    lc_promote_opts o = {0};
    if (a.n != 3 || !num_u64(a.v[1], &force) || force > 1 ||
        !num_i64(a.v[2], &o.above))
      return usage(c, verb, "FORCE(0|1) ABOVE");
    o.force = force == 1;
    int rc = lc_promote(h, &o, &n);
    return reply(c, rc, "%llu", (unsigned long long)n);
  }
  bool known;
  int rc = simple(h, c, &a, &known);
  if (known) return rc;
  lc__fail(LC_EINVAL, "admin: unknown verb or wrong arguments: %s", verb);
  return done(c, LC_EINVAL);
}
