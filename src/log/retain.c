/*
 * retain.c - retention: the list of the counters in the log
 * (lc_list_counters), and a thread of the handle that prunes every one of
 * them each retain_interval_ms (lc_options.retain_*), with its status
 * (lc_get_retention_status).
 *
 * The list reads one LevelDB snapshot with two iterators, one over the
 * records ('r' NAME '\0' be64) and one over the reservations ('v' NAME),
 * merged by name.  From a name's first record it seeks to 'r' NAME '\1',
 * past all of that name's records (NAME has no '\0'), so it costs one seek
 * per name however many records the name has.  Keys whose name is not a
 * valid counter name (nothing the library writes) are stepped over, not
 * reported: nothing could be done with them by name.
 *
 * The thread sleeps on a monotonic timed wait, then lists the counters
 * (into memory, outside any callback) and prunes each one as lc_prune
 * would (keep = retain_records, older_than_us = now - retain_age_us), so
 * it keeps lc_prune's guarantees: the newest record, the reservation and
 * the ledger entries of kept records stay.  It holds no lock of the
 * handle while it prunes except the log's gate for reading (as every
 * reader does) and, per batch of deletions, the log's write turn.  A stop
 * (lc_close) or a log that stops being OK ends a prune between batches
 * (lc__prune), so lc_close waits at most about one batch (and a compaction
 * already under way).  The status is under ret.mu.
 */
#include "log/log.h"
#include "handle.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_INTERVAL_MS 60000
#define INTERVAL_MAX_MS (366LL * 86400 * 1000) /* a year */

/* ---- lc_list_counters -------------------------------------------------- */

/* One of the two merged streams: records ('r') or reservations ('v'). */
typedef struct cursor {
  leveldb_iterator_t *it;
  char tag;
  bool valid;                 /* name holds the stream's current name */
  char name[LC_NAME_MAX + 1]; /* NUL-terminated */
  size_t nlen;
} cursor;

/* Moves c to its next valid name at or after where the iterator is. */
static void cursor_load(cursor *c) {
  c->valid = false;
  while (leveldb_iter_valid(c->it)) {
    size_t klen;
    const char *k = leveldb_iter_key(c->it, &klen);
    if (klen < 1 || k[0] != c->tag) return; /* past the stream's keys */
    const char *nul = c->tag == 'r' ? memchr(k + 1, '\0', klen - 1) : NULL;
    size_t nlen = nul ? (size_t)(nul - (k + 1)) : klen - 1;
    bool ok = nlen >= 1 && nlen <= LC_NAME_MAX && (c->tag == 'v' || nul);
    for (size_t i = 0; ok && i < nlen; i++)
      ok = (unsigned char)k[1 + i] >= 0x21 && (unsigned char)k[1 + i] <= 0x7e;
    if (ok) {
      memcpy(c->name, k + 1, nlen);
      c->name[nlen] = '\0';
      c->nlen = nlen;
      c->valid = true;
      return;
    }
    leveldb_iter_next(c->it); /* not a counter's key: step over it */
  }
}

/* Past the current name: one seek over all its records, or the next
 * reservation. */
static void cursor_advance(cursor *c) {
  if (c->tag == 'r') {
    char past[LC_NAME_MAX + 2];
    past[0] = 'r';
    memcpy(past + 1, c->name, c->nlen);
    past[c->nlen + 1] = '\1';
    leveldb_iter_seek(c->it, past, c->nlen + 2);
  } else {
    leveldb_iter_next(c->it);
  }
  cursor_load(c);
}

static int cursor_cmp(const cursor *a, const cursor *b) {
  size_t n = a->nlen < b->nlen ? a->nlen : b->nlen;
  int c = memcmp(a->name, b->name, n);
  if (c) return c;
  return a->nlen < b->nlen ? -1 : a->nlen > b->nlen ? 1 : 0;
}

static int iter_error(leveldb_iterator_t *it, int rc) {
  char *err = NULL;
  leveldb_iter_get_error(it, &err);
  if (err == NULL) return rc;
  if (!rc) rc = lc__fail(LC_ELOG, "leveldb list counters: %s", err);
  leveldb_free(err);
  return rc;
}

/* The merge, in the gate, on iterators of one snapshot. */
static int list(cursor *r, cursor *v, int (*fn)(void *, const char *),
                void *arg, uint64_t *count) {
  uint64_t n = 0;
  int stop = 0;
  leveldb_iter_seek(r->it, "r", 1);
  leveldb_iter_seek(v->it, "v", 1);
  cursor_load(r);
  cursor_load(v);
  while (!stop && (r->valid || v->valid)) {
    int c = !r->valid ? 1 : !v->valid ? -1 : cursor_cmp(r, v);
    n++;
    stop = fn(arg, c <= 0 ? r->name : v->name);
    if (c <= 0) cursor_advance(r);
    if (c >= 0) cursor_advance(v);
  }
  int rc = iter_error(v->it, iter_error(r->it, 0));
  if (!rc && count) *count = n;
  return rc;
}

int lc_list_counters(lc_t *h, int (*fn)(void *arg, const char *name), void *arg,
                     uint64_t *count) {
  lc__detail_clear();
  if (h == NULL || fn == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  if (LC__ADMIN_WAY(h)) return lc__admin_list_counters(h, fn, arg, count);
  int rc = LC__LOCAL_ONLY(h);
  if (rc) return rc;
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  if (ro == NULL) return lc__fail(LC_ENOMEM, "cannot allocate read options");
  if ((rc = lc__log_enter(&h->log)) != 0) {
    leveldb_readoptions_destroy(ro);
    return rc;
  }
  const leveldb_snapshot_t *snap = leveldb_create_snapshot(h->log.db);
  leveldb_readoptions_set_snapshot(ro, snap);
  leveldb_readoptions_set_verify_checksums(ro, 1);
  leveldb_readoptions_set_fill_cache(ro, 0);
  cursor r = {.it = leveldb_create_iterator(h->log.db, ro), .tag = 'r'};
  cursor v = {.it = leveldb_create_iterator(h->log.db, ro), .tag = 'v'};
  rc = list(&r, &v, fn, arg, count);
  leveldb_iter_destroy(r.it);
  leveldb_iter_destroy(v.it);
  leveldb_release_snapshot(h->log.db, snap);
  lc__log_leave(&h->log);
  leveldb_readoptions_destroy(ro);
  return rc;
}

/* ---- the retention thread ---------------------------------------------- */

int lc__retain_check(const lc_options *o, bool remote) {
  if (o->retain_age_us < 0)
    return lc__fail(LC_EINVAL, "retain_age_us %lld: must be >= 0",
                    (long long)o->retain_age_us);
  if (o->retain_interval_ms < 0 || o->retain_interval_ms > INTERVAL_MAX_MS)
    return lc__fail(LC_EINVAL, "retain_interval_ms %lld: must be 0..%lld",
                    (long long)o->retain_interval_ms, INTERVAL_MAX_MS);
  bool on = o->retain_records || o->retain_age_us;
  if (remote && (on || o->retain_interval_ms))
    return lc__fail(LC_EINVAL, "retention runs where the log is: not with "
                               "server (set it in the daemon)");
  if (!on && o->retain_interval_ms)
    return lc__fail(LC_EINVAL, "retain_interval_ms without retain_records or "
                               "retain_age_us");
  return 0;
}

/* The names of one listing, packed ("a\0b\0..."). */
typedef struct names_buf {
  char *p;
  size_t len, cap;
  uint64_t n;
  bool nomem;
} names_buf;

static int collect(void *arg, const char *name) {
  names_buf *b = arg;
  size_t n = strlen(name) + 1;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->len + n) cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
      b->nomem = true;
      return 1;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, name, n);
  b->len += n;
  b->n++;
  return 0;
}

int lc__log_counter_names(lc_t *h, char **names, uint64_t *count) {
  names_buf b = {0};
  int rc = lc_list_counters(h, collect, &b, NULL);
  if (!rc && b.nomem) rc = lc__fail(LC_ENOMEM, "the list of counters");
  if (rc) {
    free(b.p);
    return rc;
  }
  *names = b.p;
  *count = b.n;
  return 0;
}

/* Records a failure (rc, what it was doing, the detail) in the status. */
static void note_error(lc_t *h, int rc, const char *what, const char *name) {
  char text[sizeof h->ret.st.last_error];
  const char *d = lc_last_detail();
  snprintf(text, sizeof text, "%s%s%s: %s%s%s", what, name ? " " : "",
           name ? name : "", lc_err_name(rc), *d ? ": " : "", d);
  pthread_mutex_lock(&h->ret.mu);
  h->ret.st.errors++;
  memcpy(h->ret.st.last_error, text, sizeof text);
  pthread_mutex_unlock(&h->ret.mu);
}

static bool stopping(lc_t *h) {
  return atomic_load(&h->ret.stop);
}

/* One pass over the log. */
static void run(lc_t *h) {
  if (atomic_load(&h->standby)) return; /* its primary prunes */
  int64_t t0 = lc__clock_mono_us();
  char *names = NULL;
  uint64_t count = 0;
  int rc = lc__log_counter_names(h, &names, &count);
  if (rc) {
    note_error(h, rc, "list counters", NULL);
    return;
  }
  bool finished = true;
  const char *name = names;
  for (uint64_t i = 0; i < count; i++, name += strlen(name) + 1) {
    if (stopping(h)) {
      finished = false;
      break;
    }
    lc_prune_opts o = {.keep = h->opt.retain_records};
    if (h->opt.retain_age_us) {
      o.older_than_us = lc__clock_now_us() - h->opt.retain_age_us;
      if (o.older_than_us <= 0) continue; /* the age keeps everything */
    }
    lc_prune_result res = {0};
    rc = lc__prune(h, name, &o, &res, &h->ret.stop);
    pthread_mutex_lock(&h->ret.mu);
    h->ret.st.records_deleted += res.deleted;
    h->ret.st.ledger_deleted += res.ledger_deleted;
    if (!rc && !stopping(h)) h->ret.st.counters++;
    pthread_mutex_unlock(&h->ret.mu);
    if (rc) {
      note_error(h, rc, "prune", name);
      if (lc__log_ok(&h->log) != 0) { /* the rest would fail the same way */
        lc__detail_clear();
        finished = false;
        break;
      }
    }
  }
  free(names);
  if (!finished) return;
  pthread_mutex_lock(&h->ret.mu);
  h->ret.st.runs++;
  h->ret.st.last_run_us = lc__clock_now_us();
  h->ret.st.last_duration_us = lc__clock_mono_us() - t0;
  pthread_mutex_unlock(&h->ret.mu);
}

static void *retainer(void *arg) {
  lc_t *h = arg;
  int64_t ms = h->opt.retain_interval_ms;
  pthread_mutex_lock(&h->ret.mu);
  while (!stopping(h)) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(ms / 1000);
    long ns = until.tv_nsec + (long)(ms % 1000) * 1000000L;
    until.tv_sec += ns / 1000000000L;
    until.tv_nsec = ns % 1000000000L;
    int w = 0;
    while (!stopping(h) && w != ETIMEDOUT)
      w = pthread_cond_timedwait(&h->ret.cv, &h->ret.mu, &until);
    if (stopping(h)) break;
    pthread_mutex_unlock(&h->ret.mu);
    run(h);
    pthread_mutex_lock(&h->ret.mu);
  }
  pthread_mutex_unlock(&h->ret.mu);
  return NULL;
}

int lc__retain_start(lc_t *h) {
  pthread_condattr_t ca;
  pthread_mutex_init(&h->ret.mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&h->ret.cv, &ca);
  pthread_condattr_destroy(&ca);
  atomic_init(&h->ret.stop, false);
  h->ret.started = false;
  if (!h->opt.retain_records && !h->opt.retain_age_us) return 0;
  if (h->opt.retain_interval_ms == 0)
    h->opt.retain_interval_ms = DEFAULT_INTERVAL_MS;
  sigset_t all, old; /* the application's threads take the signals */
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int e = pthread_create(&h->ret.thread, NULL, retainer, h);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e) /* lc__retain_stop still cleans up */
    return lc__fail(LC_ENOMEM, "cannot start the retention thread: %s",
                    strerror(e));
  h->ret.started = true;
  return 0;
}

void lc__retain_stop(lc_t *h) {
  pthread_mutex_lock(&h->ret.mu);
  atomic_store(&h->ret.stop, true);
  pthread_cond_signal(&h->ret.cv);
  pthread_mutex_unlock(&h->ret.mu);
  if (h->ret.started) pthread_join(h->ret.thread, NULL);
  h->ret.started = false;
  pthread_cond_destroy(&h->ret.cv);
  pthread_mutex_destroy(&h->ret.mu);
}

int lc_get_retention_status(lc_t *h, lc_retention_status *out) {
  lc__detail_clear();
  if (h == NULL || out == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  int rc = LC__LOCAL_ONLY(h);
  if (rc) return rc;
  pthread_mutex_lock(&h->ret.mu);
  *out = h->ret.st;
  pthread_mutex_unlock(&h->ret.mu);
  return 0;
}
