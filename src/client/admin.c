/*
 * client/admin.c - the client side of the admin socket: a remote handle whose
 * server is an admin socket (lc_open finds out with "hello") sends every
 * call there, the log's calls included; one connection per call, or per
 * open iterator, so calls from many threads never share one.  A remote
 * handle over TLS with a user (h->admin_tls) sends the log's calls the
 * same way, on a connection the daemon relays to its admin socket after
 * "admin" (tls.c), and its allocations over the data protocol.
 */
#include "client/client.h"
#include "handle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#define ADMIN_MIN_WAIT_MS 30000 /* long commands send progress this often */

struct lc__admin_stream {
  lc__aconn conn;
  char *ok; /* after OK: the numbers that follow it */
};

static int code_of(const char *name, size_t n) {
  for (int code = -1; strcmp(lc_err_name(code), "EUNKNOWN") != 0; code--) {
    const char *s = lc_err_name(code);
    if (strlen(s) == n && strncmp(name, s, n) == 0) return code;
  }
  return LC_EREMOTE;
}

static int dial(const char *path, int *out) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path)
    return lc__fail(LC_EINVAL, "socket path over %zu bytes",
                    sizeof a.sun_path - 1);
  strcpy(a.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return lc__fail(LC_EREMOTE, "socket: %s", strerror(errno));
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    int e = errno;
    close(fd);
    return lc__fail(LC_EREMOTE, "connect to %s: %s", path, strerror(e));
  }
  *out = fd;
  return 0;
}

void lc__admin_stream_close(lc__admin_stream *s) {
  if (s == NULL) return;
  lc__aconn_close(&s->conn);
  free(s);
}

/* Sends one request (formatted) on a new connection. */
static int astream_vopen(lc_t *h, lc__admin_stream **out, const char *fmt,
                         va_list ap) {
  lc__admin_stream *s = malloc(sizeof *s);
  if (s == NULL) return lc__fail(LC_ENOMEM, "cannot allocate a connection");
  int wait = h->opt.timeout_ms > ADMIN_MIN_WAIT_MS ? h->opt.timeout_ms
                                                   : ADMIN_MIN_WAIT_MS;
  int fd = -1, rc = !h->admin_tls
                        ? dial(h->server, &fd)
                        : lc__tls_admin(h->tls[atomic_load(&h->active)],
                                        &s->conn, wait);
  if (rc) {
    free(s);
    return rc;
  }
  if (!h->admin_tls) lc__aconn_init(&s->conn, fd, wait);
  s->ok = NULL;
  char line[LC__ADMIN_LINE_MAX];
  int n = vsnprintf(line, sizeof line, fmt, ap);
  if (n < 0 || n >= (int)sizeof line - 2)
    rc = lc__fail(LC_EINVAL, "admin request too long");
  if (!rc) rc = lc__aconn_printf(&s->conn, "%s", line);
  if (!rc) rc = lc__aconn_flush(&s->conn);
  if (rc) {
    lc__admin_stream_close(s);
    return rc;
  }
  *out = s;
  return 0;
}

int lc__admin_stream_open(lc_t *h, lc__admin_stream **out, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = astream_vopen(h, out, fmt, ap);
  va_end(ap);
  return rc;
}

int lc__admin_stream_next(lc__admin_stream *s, char **item, void (*progress)(void *,
                     uint64_t, uint64_t), void *arg) {
  for (;;) {
    char *line;
    int rc = lc__aconn_readline(&s->conn, &line);
    if (rc == 0) return lc__fail(LC_EREMOTE, "the admin socket closed the "
                                             "connection before the end");
    if (rc < 0) return rc;
    if (!strncmp(line, "OK", 2) && (line[2] == '\0' || line[2] == ' ')) {
      s->ok = line + 2 + (line[2] == ' ');
      return 0;
    }
    if (!strncmp(line, "ERR ", 4)) {
      size_t n = strcspn(line + 4, " ");
      const char *detail = line + 4 + n + (line[4 + n] == ' ');
      return lc__fail(code_of(line + 4, n), "%s", detail);
    }
    if (line[0] == 'P' && line[1] == ' ') {
      unsigned long long a = 0, b = 0;
      if (progress && sscanf(line + 2, "%llu %llu", &a, &b) == 2)
        progress(arg, a, b);
      continue;
    }
    *item = line;
    return 1;
  }
}

static const char *astream_ok(const lc__admin_stream *s) {
  return s->ok ? s->ok : "";
}

/* Reads up to n numbers after OK into out (signed). */
static int ok_numbers(lc__admin_stream *s, int64_t *out, int n) {
  const char *p = astream_ok(s);
  for (int i = 0; i < n; i++) {
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno)
      return lc__fail(LC_EREMOTE, "admin socket answered 'OK %s'",
                      astream_ok(s));
    out[i] = v;
    p = end;
  }
  return 0;
}

typedef void (*progress_fn)(void *, uint64_t, uint64_t);

/* One request, its items skipped (progress lines to progress, may be
 * NULL), then up to nout numbers after OK into out. */
static int vcall(lc_t *h, progress_fn progress, void *arg, int64_t *out,
                 int nout, const char *fmt, va_list ap) {
  lc__admin_stream *s;
  int rc = astream_vopen(h, &s, fmt, ap);
  if (rc) return rc;
  char *item;
  while ((rc = lc__admin_stream_next(s, &item, progress, arg)) == 1) {
  }
  if (rc == 0 && nout) rc = ok_numbers(s, out, nout);
  lc__admin_stream_close(s);
  return rc;
}

static int call_progress(lc_t *h, progress_fn progress, void *arg,
                         int64_t *out, int nout, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static int call_progress(lc_t *h, progress_fn progress, void *arg,
                         int64_t *out, int nout, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vcall(h, progress, arg, out, nout, fmt, ap);
  va_end(ap);
  return rc;
}

int lc__admin_call(lc_t *h, int64_t *out, int nout, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vcall(h, NULL, NULL, out, nout, fmt, ap);
  va_end(ap);
  return rc;
}

int lc__admin_probe(lc_t *h) {
  lc__admin_stream *s;
  if (lc__admin_stream_open(h, &s, "hello") != 0) {
    lc__detail_clear();
    return 0; /* not there yet, or not a socket: treated as a data port */
  }
  char *item;
  int rc = lc__admin_stream_next(s, &item, NULL, NULL);
  h->admin = rc == 0 && !strncmp(astream_ok(s), "logcounter-admin ", 17);
  lc__admin_stream_close(s);
  lc__detail_clear();
  return 0;
}

/* ---- remote versions of the calls with results beyond one number */

static void prune_progress(void *arg, uint64_t a, uint64_t b) {
  const lc_prune_opts *o = arg;
  if (o->progress) o->progress(o->progress_arg, a, b);
}

int lc__admin_prune(lc_t *h, const char *name, const lc_prune_opts *o,
                    lc_prune_result *res) {
  int64_t v[3];
  int rc = call_progress(h, prune_progress, (void *)o, v, 3,
                         "prune %s %llu %lld %lld", name,
                         (unsigned long long)o->keep, (long long)o->below,
                         (long long)o->older_than_us);
  if (rc) return rc;
  res->deleted = (uint64_t)v[0];
  res->kept = (uint64_t)v[1];
  res->ledger_deleted = (uint64_t)v[2];
  return 0;
}

static void backup_progress(void *arg, uint64_t a, uint64_t b) {
  (void)b;
  const lc_backup_opts *o = arg;
  if (o && o->progress) o->progress(o->progress_arg, a);
}

int lc__admin_promote(lc_t *h, const lc_promote_opts *o, uint64_t *counters) {
  int64_t n = 0;
  int rc = lc__admin_call(h, &n, 1, "promote %d %lld", o->force ? 1 : 0,
                          (long long)o->above);
  if (!rc && counters) *counters = (uint64_t)n;
  return rc;
}

int lc__admin_backup(lc_t *h, const char *dir, const lc_backup_opts *o,
                     lc_backup_result *res) {
  char abs[LC__ADMIN_LINE_MAX - 16];
  if (dir[0] != '/') { /* the daemon runs elsewhere: make it absolute */
    char cwd[LC__ADMIN_LINE_MAX - 64];
    if (getcwd(cwd, sizeof cwd) == NULL)
      return lc__fail(LC_EINVAL, "getcwd: %s", strerror(errno));
    if ((size_t)snprintf(abs, sizeof abs, "%s/%s", cwd, dir) >= sizeof abs)
      return lc__fail(LC_EINVAL, "backup directory path too long");
    dir = abs;
  }
  int64_t v[4];
  int rc = call_progress(h, backup_progress, (void *)o, v, 4, "backup %s",
                         dir);
  if (rc) return rc;
  res->keys = (uint64_t)v[0];
  res->records = (uint64_t)v[1];
  res->bytes = (uint64_t)v[2];
  res->time_us = v[3];
  return 0;
}

int lc__admin_tally_list(lc_t *h, const lc_tally_list_opts *o,
                         uint64_t *count) {
  lc__admin_stream *s;
  int rc = lc__admin_stream_open(
      h, &s, "tally-list %d %d %lld %d %lld %llu %llu %s",
      o->order == LC_TALLY_BY_TOTAL_DESC, o->has_min != 0, (long long)o->min,
      o->has_max != 0, (long long)o->max, (unsigned long long)o->offset,
      (unsigned long long)o->limit, o->prefix ? o->prefix : "");
  if (rc) return rc;
  uint64_t n = 0;
  char *item;
  while ((rc = lc__admin_stream_next(s, &item, NULL, NULL)) == 1) {
    lc_tally_info t;
    unsigned long long losses;
    long long total;
    int off = 0;
    if (sscanf(item, "T %lld %llu %n", &total, &losses, &off) < 2 || !off ||
        strlen(item + off) > LC_NAME_MAX) {
      rc = lc__fail(LC_EREMOTE, "admin socket sent '%.60s'", item);
      break;
    }
    t.total = total;
    t.losses = losses;
    strcpy(t.name, item + off);
    n++;
    if (o->cb && o->cb(o->arg, &t)) break; /* stop: drop the connection */
  }
  lc__admin_stream_close(s);
  if (rc < 0) return rc;
  if (count) *count = n;
  return 0;
}

int lc__admin_list_counters(lc_t *h, int (*fn)(void *, const char *),
                            void *arg, uint64_t *count) {
  lc__admin_stream *s;
  int rc = lc__admin_stream_open(h, &s, "counters");
  if (rc) return rc;
  uint64_t n = 0;
  char *item;
  while ((rc = lc__admin_stream_next(s, &item, NULL, NULL)) == 1) {
    if (item[0] != 'N' || item[1] != ' ') {
      rc = lc__fail(LC_EREMOTE, "admin socket sent '%.60s'", item);
      break;
    }
    n++;
    if (fn && fn(arg, item + 2)) break;
  }
  lc__admin_stream_close(s);
  if (rc < 0) return rc;
  if (count) *count = n;
  return 0;
}

/* One item of a records or ledger stream: 1 (rec or gap filled), 0 at the
 * end, LC_ECORRUPT (its last value set, as the local iterator does), or
 * another error. */
int lc__admin_iter_next(lc__admin_stream *s, lc_record *rec, lc_gap *gap) {
  char *item;
  int rc = lc__admin_stream_next(s, &item, NULL, NULL);
  if (rc <= 0) return rc;
  long long a = 0, b = 0, t = 0;
  unsigned long long n = 0;
  int kind = 0, off = 0;
  if (item[0] == 'B' && sscanf(item, "B %lld %n", &b, &off) >= 1) {
    if (rec) rec->last = b;
    else gap->last = b;
    return lc__fail(LC_ECORRUPT, "%s", off ? item + off : "");
  }
  if (rec && sscanf(item, "R %lld %lld %llu %lld %d", &a, &b, &n, &t,
                    &kind) == 5) {
    *rec = (lc_record){a, b, n, t, kind};
    return 1;
  }
  if (gap && sscanf(item, "G %lld %lld %lld %d%n", &a, &b, &t, &kind,
                    &off) == 4) {
    memset(gap, 0, sizeof *gap);
    gap->first = a;
    gap->last = b;
    gap->time_us = t;
    gap->cause = kind;
    const char *r = item + off + (item[off] == ' ');
    snprintf(gap->reason, sizeof gap->reason, "%s", r);
    return 1;
  }
  return lc__fail(LC_EREMOTE, "admin socket sent '%.60s'", item);
}

int lc__admin_op(lc_t *h, const char *verb, const char *name, const int64_t *arg,
                 int64_t *out, int nout) {
  int rc = lc_check_name(name);
  if (rc) return lc__fail(rc, "invalid name");
  if (arg)
    return lc__admin_call(h, out, nout, "%s %s %lld", verb, name,
                          (long long)*arg);
  return lc__admin_call(h, out, nout, "%s %s", verb, name);
}
