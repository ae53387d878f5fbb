/*
 * counter.c - allocation: memcached increment, log append, restore.
 *
 * Per counter, one thread at a time is the "leader": it alone talks to
 * memcached and the log for that counter.  Callers of lc_next_n queue their
 * requests; the leader takes every request queued so far, sends ONE
 * increment by their total, writes ONE record for the whole block, and
 * splits the block among them in arrival order.  So concurrent callers share
 * a round trip and a (group-committed) sync, and at most one increment per
 * counter is in flight in this process.
 *
 * Invariants, for each counter (touched only by its leader):
 *  - floor: every value <= floor has been handed out, burned, or reserved
 *    by an earlier owner.  An answer from memcached whose block does not
 *    lie wholly above floor means memcached went backwards (restart, a stray
 *    set): it is raised, never trusted.  A lost key is re-seeded with
 *    memcached's add (never set) at max(floor, log max).
 *  - reserved (default durability): a synced reservation >= every value
 *    handed out.  Before a block above it is handed out, a new reservation
 *    is written, synced, in the same write as the block's record.  A new
 *    handle starts with floor = max(log max, reservation), so even records
 *    lost to an OS crash cannot be reissued.
 *  - a value is returned only after its record's write succeeded; on a
 *    failed write the block is burned (floor still moves past it).
 *  - with durability sync, the leader hands its role on before its synced
 *    write, so several batches may be syncing at once; their values are
 *    all below floor already, so a restore meanwhile starts above them.
 */
#include "counter.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ATTEMPTS 8
#define MAX_ROUNDS 4    /* batches one leader serves in a row */

/* Test seam (the chaos harness): when set, called by a leader between its
 * memcached increment and its log write.  NULL outside tests. */
void (*lc__test_before_commit)(const char *name);

struct lc__req {
  uint64_t n;
  int64_t first;
  int rc;
  bool taken;                 /* in a batch: its thread must not lead */
  bool done;
  pthread_cond_t cv;          /* signalled when done, or to lead */
  char detail[LC__DETAIL_MAX];
  struct lc__req *next;
};
typedef lc__req req;

void lc__table_init(lc__table *t) {
  pthread_mutex_init(&t->mu, NULL);
  memset(t->buckets, 0, sizeof t->buckets);
}

static unsigned hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h % 256;
}

/* A new counter's state, not in any table; NULL when out of memory. */
static lc__counter *counter_new(const char *name, size_t n) {
  size_t plen = strlen(LC__MC_PREFIX);
  lc__counter *c = calloc(1, sizeof *c + plen + n + 1);
  if (c == NULL) return NULL;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  lc__seg_init(c);
  memcpy(c->key, LC__MC_PREFIX, plen);
  memcpy(c->key + plen, name, n + 1);
  c->name = c->key + plen;
  c->nlen = n;
  c->klen = plen + n;
  return c;
}

static void counter_free(lc__counter *c) {
  lc__seg_destroy(c);
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

/* Finds the counter, creating it when create (else *out may be NULL);
 * validates the name. */
static int find(lc_t *h, const char *name, bool create, lc__counter **out) {
  int rc = lc_check_name(name);
  if (rc) return lc__fail(rc, rc == LC_EINVAL ? "counter name is NULL" :
                          "invalid counter name");
  size_t n = strlen(name);
  lc__table *t = &h->counters;
  unsigned b = hash(name, n);
  pthread_mutex_lock(&t->mu);
  lc__counter *c = t->buckets[b];
  while (c && !(c->nlen == n && memcmp(c->name, name, n) == 0)) c = c->next;
  if (c == NULL && create) {
    if ((c = counter_new(name, n)) == NULL) {
      pthread_mutex_unlock(&t->mu);
      return lc__fail(LC_ENOMEM, "cannot allocate counter state");
    }
    c->next = t->buckets[b];
    t->buckets[b] = c;
  }
  pthread_mutex_unlock(&t->mu);
  *out = c;
  return 0;
}

int lc__counter_lookup(lc_t *h, const char *name, lc__counter **out) {
  return find(h, name, true, out);
}


/* Gives up the leader role and wakes whoever may take it; c->mu held. */
static void handoff(lc__counter *c) {
  c->busy = false;
  if (c->head) pthread_cond_signal(&c->head->cv);
  if (c->excl_waiting) pthread_cond_broadcast(&c->cv);
}

/* Leader role for operations that are not batched. */
void lc__counter_acquire(lc__counter *c) {
  pthread_mutex_lock(&c->mu);
  c->excl_waiting++;
  while (c->busy) pthread_cond_wait(&c->cv, &c->mu);
  c->excl_waiting--;
  c->busy = true;
  pthread_mutex_unlock(&c->mu);
}

void lc__counter_release(lc__counter *c) {
  pthread_mutex_lock(&c->mu);
  handoff(c);
  pthread_mutex_unlock(&c->mu);
}

int lc__counter_load(lc_t *h, lc__counter *c) {
  if (c->loaded) return 0;
  int64_t max = 0, res = 0;
  int rc = lc__log_max(&h->log, c->name, c->nlen, &max);
  if (!rc) rc = lc__log_get_reservation(&h->log, c->name, c->nlen, &res);
  if (rc) return rc;
  c->floor = max > res ? max : res;
  c->reserved = res;
  c->loaded = true;
  return 0;
}

/* Leader only: seeds a lost key at max(floor, log max) with add. */
static int seed(lc_t *h, lc__counter *c, int64_t *seeded) {
  int64_t max = 0;
  int rc = lc__log_max(&h->log, c->name, c->nlen, &max);
  if (rc) return rc;
  if (max > c->floor) c->floor = max;
  rc = lc__cache_add(&h->cache, c->key, c->klen, (uint64_t)c->floor);
  if (rc == 0) {
    LC__STAT(h, restores, 1);
    *seeded = c->floor;
  }
  return rc;  /* LC__EXISTS: someone else seeded it; go back to incr */
}

int lc__counter_increment(lc_t *h, lc__counter *c, uint64_t n,
                          int64_t *last) {
  uint64_t delta = n;
  for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    uint64_t v = 0;
    int64_t seeded;
    LC__STAT(h, increments, 1);
    int rc = lc__cache_incr(&h->cache, c->key, c->klen, delta, &v);
    if (rc == LC__MISS) {
      rc = seed(h, c, &seeded);
      if (rc < 0) return rc;
      delta = n;
      continue;
    }
    if (rc) return rc;
    if (v > (uint64_t)LC_VALUE_MAX)
      return lc__fail(LC_EOVERFLOW, "memcached holds %llu for %s",
                      (unsigned long long)v, c->key);
    if (v >= n && (int64_t)(v - n) >= c->floor) {
      *last = (int64_t)v;
      return 0;
    }
    /* memcached is behind what was handed out: raise it past floor. */
    LC__STAT(h, backwards, 1);
    delta = (uint64_t)c->floor + n - v;
  }
  return lc__fail(LC_EAGAIN, "memcached lost or lowered %s %d times in a row",
                  c->key, MAX_ATTEMPTS);
}

/* A block obtained from memcached, on its way to the log. */
typedef struct block {
  int64_t last;
  uint64_t n;
  int64_t reservation;  /* a new reservation to write with it, or 0 */
  bool sync;
} block;

/* Leader only: obtains a block of n values above floor from memcached and
 * decides how its record must be written. */
static int obtain(lc_t *h, lc__counter *c, uint64_t n, block *b) {
  int rc = lc__counter_load(h, c);
  if (rc) return rc;
  if (n > (uint64_t)(LC_VALUE_MAX - c->floor))
    return lc__fail(LC_EOVERFLOW, "%s stands at %lld", c->name,
                    (long long)c->floor);
  rc = lc__counter_increment(h, c, n, &b->last);
  if (rc) return rc;
  b->n = n;
  b->reservation = 0;
  b->sync = h->opt.durability == LC_DURABILITY_SYNC;
  if (!b->sync && b->last > c->reserved) {
    uint64_t block16 = n > UINT64_MAX / 16 ? UINT64_MAX : 16 * n;
    uint64_t window = h->opt.reserve > block16 ? h->opt.reserve : block16;
    b->reservation = (uint64_t)(LC_VALUE_MAX - b->last) < window
                         ? LC_VALUE_MAX : b->last + (int64_t)window;
    b->sync = true;
  }
  c->floor = b->last;  /* handed out or burned: never again */
  c->used = true;
  return 0;
}

/* Writes the block's record, with its reservation if any. */
static int commit(lc_t *h, lc__counter *c, const block *b) {
  int rc = lc__log_append(&h->log, c->name, c->nlen, b->last, b->n,
                          b->reservation, b->sync);
  LC__STAT(h, log_writes, 1);
  if (b->sync) LC__STAT(h, log_syncs, 1);
  return rc;
}

/* Takes queued requests, at most max (0: any number), whose total fits
 * below 2^63; c->mu held. */
static req *take_batch(lc__counter *c, unsigned max, uint64_t *total) {
  req *batch = c->head, **tail = &batch;
  uint64_t room = (uint64_t)(LC_VALUE_MAX - c->floor);
  unsigned taken = 0;
  *total = 0;
  while (*tail && (*tail)->n <= room - *total && (max == 0 || taken++ < max)) {
    (*tail)->taken = true;
    *total += (*tail)->n;
    tail = &(*tail)->next;
  }
  if (*total == 0) {  /* the first request alone does not fit: take it */
    batch->taken = true;
    *total = batch->n;
    tail = &batch->next;
  }
  c->head = *tail;
  if (c->head == NULL) c->tail = NULL;
  *tail = NULL;
  return batch;
}

/*
 * Serves one batch as leader: called with c->mu held, returns with it
 * held.  A synced record without a reservation (durability sync) is written
 * after giving up the leader role, so that the next batch's increment
 * overlaps this sync, and LevelDB merges the concurrent synced writes into
 * one fsync.  Returns false when it gave up the role.
 */
static bool serve(lc_t *h, lc__counter *c) {
  int rc = 0;
  lc__detail_clear();
  if (!c->loaded) {  /* load first, so that the batch can respect floor */
    pthread_mutex_unlock(&c->mu);
    rc = lc__counter_load(h, c);
    pthread_mutex_lock(&c->mu);
  }
  uint64_t total;
  req *batch = take_batch(c, h->opt.batch_max, &total);
  pthread_mutex_unlock(&c->mu);

  block b = {0};
  if (!rc) rc = obtain(h, c, total, &b);
  bool pipelined = !rc && b.sync && b.reservation == 0;
  if (pipelined) {
    pthread_mutex_lock(&c->mu);
    handoff(c);
    pthread_mutex_unlock(&c->mu);
  }
  if (!rc && lc__test_before_commit) lc__test_before_commit(c->name);
  if (!rc) rc = commit(h, c, &b);
  if (!rc && b.reservation) c->reserved = b.reservation;  /* still leader */
  uint64_t first = (uint64_t)(b.last - (int64_t)b.n + 1);  /* unsigned: */
  for (req *r = batch; r; r = r->next) {         /* may pass 2^63-1 */
    r->rc = rc;
    if (rc) {
      memcpy(r->detail, lc_last_detail(), LC__DETAIL_MAX);
    } else {
      r->first = (int64_t)first;
      first += r->n;
    }
  }
  pthread_mutex_lock(&c->mu);
  for (req *r = batch, *next; r; r = next) {
    next = r->next;  /* r may vanish once done is seen */
    r->done = true;
    pthread_cond_signal(&r->cv);
  }
  return !pipelined;
}

/* Called with c->mu held and no leader; returns with c->mu held.  The
 * leader, already running, serves a few batches in a row rather than
 * waking another thread for each. */
static void lead(lc_t *h, lc__counter *c) {
  c->busy = true;
  for (int round = 0; round < MAX_ROUNDS && c->head; round++)
    if (!serve(h, c)) return;
  handoff(c);
}

static int count_call(lc_t *h, int rc, uint64_t n) {
  if (rc) {
    LC__STAT(h, errors, 1);
  } else {
    LC__STAT(h, allocations, 1);
    LC__STAT(h, ids, n);
  }
  return rc;
}

int lc_next_n(lc_t *h, const char *name, uint64_t n, int64_t *first) {
  lc__detail_clear();
  if (h == NULL || first == NULL)
    return lc__fail(LC_EINVAL, "NULL handle or result pointer");
  if (n == 0 || n > LC_BLOCK_MAX)
    return count_call(h, lc__fail(LC_ECOUNT, "count %llu",
                                  (unsigned long long)n), n);
  int rc;
  if (h->remote) {
    rc = lc_check_name(name);
    rc = rc ? lc__fail(rc, "invalid counter name")
            : lc__remote_next(h, name, n, first);
    return count_call(h, rc, n);
  }
  lc__counter *c;
  if ((rc = lc__counter_lookup(h, name, &c)) != 0) return count_call(h, rc, n);
  if (h->opt.prefetch) return count_call(h, lc__seg_next(h, c, n, first), n);
  req r = {.n = n};
  pthread_cond_init(&r.cv, NULL);
  pthread_mutex_lock(&c->mu);
  if (c->tail) c->tail->next = &r; else c->head = &r;
  c->tail = &r;
  while (!r.done) {
    if (!c->busy && !r.taken)
      lead(h, c);  /* unlocks and relocks c->mu */
    else
      pthread_cond_wait(&r.cv, &c->mu);
  }
  pthread_mutex_unlock(&c->mu);
  pthread_cond_destroy(&r.cv);
  if (r.rc)
    lc__detail_set(r.detail);
  else
    *first = r.first;
  return count_call(h, r.rc, n);
}

int lc_next(lc_t *h, const char *name, int64_t *value) {
  return lc_next_n(h, name, 1, value);
}

/* Runs op as the counter's leader, with its state loaded. */
static int exclusive(lc_t *h, const char *name, int64_t arg, int64_t *out,
                     int (*op)(lc_t *, lc__counter *, int64_t, int64_t *)) {
  lc__detail_clear();
  if (h == NULL) return lc__fail(LC_EINVAL, "NULL handle");
  lc__counter *c;
  int rc = LC__LOCAL_ONLY(h);
  if (!rc) rc = lc__counter_lookup(h, name, &c);
  if (!rc) {
    lc__counter_acquire(c);
    rc = lc__counter_load(h, c);
    if (!rc) rc = op(h, c, arg, out);
    lc__counter_release(c);
  }
  if (rc) LC__STAT(h, errors, 1);
  return rc;
}

static int op_current(lc_t *h, lc__counter *c, int64_t arg, int64_t *out) {
  (void)arg;
  int64_t handed = lc__seg_current(c);
  if (handed) {               /* memcached and floor run ahead of it */
    *out = handed;
    return 0;
  }
  uint64_t v = 0;
  int rc = lc__cache_get(&h->cache, c->key, c->klen, &v);
  if (rc < 0) return rc;
  int64_t cur = c->floor;
  if (rc == 0 && v > (uint64_t)cur)
    cur = v > (uint64_t)LC_VALUE_MAX ? LC_VALUE_MAX : (int64_t)v;
  *out = cur;
  return 0;
}

static int op_restore(lc_t *h, lc__counter *c, int64_t arg, int64_t *out) {
  (void)arg;
  for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    uint64_t v = 0;
    int rc = lc__cache_get(&h->cache, c->key, c->klen, &v);
    if (rc == LC__MISS) {
      rc = seed(h, c, out);
      if (rc <= 0) return rc;
      continue;  /* seeded by someone else meanwhile */
    }
    if (rc) return rc;
    if (v >= (uint64_t)c->floor) {
      *out = v > (uint64_t)LC_VALUE_MAX ? LC_VALUE_MAX : (int64_t)v;
      return 0;
    }
    LC__STAT(h, backwards, 1);
    rc = lc__cache_incr(&h->cache, c->key, c->klen, (uint64_t)c->floor - v, &v);
    if (rc < 0) return rc;
  }
  return lc__fail(LC_EAGAIN, "memcached kept changing %s", c->key);
}

static int op_advance(lc_t *h, lc__counter *c, int64_t min_next, int64_t *out) {
  (void)out;
  int64_t target = min_next - 1;  /* the value the counter must stand at */
  int rc = lc__seg_drop(h, c, target);   /* held values below min_next */
  if (rc) return rc;
  if (target > c->floor) {
    /* durable first: after this, no restore can start below target */
    if (target > c->reserved) {
      rc = lc__log_put_reservation(&h->log, c->name, c->nlen, target);
      LC__STAT(h, log_syncs, 1);
      if (rc) return rc;
      c->reserved = target;
    }
    c->floor = target;
    c->used = true;
  }
  int64_t now;
  return op_restore(h, c, 0, &now);  /* raises memcached to floor */
}

int lc_current(lc_t *h, const char *name, int64_t *value) {
  if (value == NULL) return lc__fail(LC_EINVAL, "NULL result pointer");
  if (h && h->remote) {
    lc__detail_clear();
    int rc = lc_check_name(name);
    return rc ? lc__fail(rc, "invalid counter name")
              : lc__remote_current(h, name, value);
  }
  if (h == NULL) return exclusive(h, name, 0, value, op_current);
  lc__detail_clear();
  lc__counter *c;
  int rc = find(h, name, false, &c);
  if (!rc && c) return exclusive(h, name, 0, value, op_current);
  if (!rc) {
    /* Not used by this handle: read it without keeping any state, so
     * that reading many names (a daemon's "get NAME") costs no memory. */
    if ((c = counter_new(name, strlen(name))) == NULL) {
      rc = lc__fail(LC_ENOMEM, "cannot allocate counter state");
    } else {
      rc = lc__counter_load(h, c);
      if (!rc) rc = op_current(h, c, 0, value);
      counter_free(c);
    }
  }
  if (rc) LC__STAT(h, errors, 1);
  return rc;
}

int lc_restore(lc_t *h, const char *name, int64_t *value) {
  if (value == NULL) return lc__fail(LC_EINVAL, "NULL result pointer");
  return exclusive(h, name, 0, value, op_restore);
}

int lc_advance(lc_t *h, const char *name, int64_t min_next) {
  if (min_next < 1) return lc__fail(LC_EINVAL, "advance to %lld", (long long)min_next);
  return exclusive(h, name, min_next, NULL, op_advance);
}

int lc_reservation(lc_t *h, const char *name, int64_t *value) {
  lc__detail_clear();
  if (h == NULL || value == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  int rc = LC__LOCAL_ONLY(h);
  if (!rc && (rc = lc_check_name(name)) != 0)
    return lc__fail(rc, "invalid counter name");
  return rc ? rc : lc__log_get_reservation(&h->log, name, strlen(name), value);
}

int lc__table_close(lc__table *t, lc__log *log, lc__cache *cache) {
  leveldb_writebatch_t *b = log->db ? leveldb_writebatch_create() : NULL;
  bool any = false;
  for (int i = 0; i < 256; i++) {
    for (lc__counter *c = t->buckets[i]; b && c; c = c->next) {
      int64_t stands = lc__seg_close(c, b);
      if (stands < 0) stands = c->floor;
      else any = true;        /* segment records rewritten */
      if (c->used && stands != c->reserved) {
        /* exact: a restart after a clean close skips nothing */
        lc__log_batch_reservation(b, c->name, c->nlen, stands);
        any = true;
      }
      c->reserved = stands;
    }
  }
  int rc = any ? lc__log_write(log, b, true) : 0;
  if (b) leveldb_writebatch_destroy(b);
  for (int i = 0; i < 256; i++) {
    for (lc__counter *c = t->buckets[i], *next; c; c = next) {
      next = c->next;
      /* Segments: memcached still holds floor, ahead of what went out;
       * set it back (only if untouched since) so that a restart goes on
       * at the next value.  Not possible: a gap, nothing worse. */
      if (!rc && b && c->used && c->reserved < c->floor)
        lc__cache_lower(cache, c->key, c->klen, (uint64_t)c->floor,
                        (uint64_t)c->reserved);
      counter_free(c);
    }
    t->buckets[i] = NULL;
  }
  pthread_mutex_destroy(&t->mu);
  return rc;
}
