/*
 * counter.c - a counter's state and the primitives every way of
 * allocating shares: the name table, the leader role (acquire/release),
 * load, claim, seed, increment, restore, skip (close and eviction are
 * close.c's); and allocation without prefetch: memcached increment, log
 * append, restore.
 * It drives the leaves (segment.c, ledger.c, claim.c) and is driven by
 * next.c, first.c, prefetch.c and counter_ops.c; it calls none of them.
 *
 * Callers of lc_next_n (without prefetch) queue their requests.  The first queued caller
 * sends a batch: it takes every request queued so far, sends ONE increment
 * by their total, writes ONE record for the whole block, and splits the
 * block among them in arrival order.  Up to LC__INFLIGHT batches of one
 * counter are in flight at once, so a caller does not wait for another
 * caller's round trip; callers merge only beyond that.  Log writes happen
 * outside the lock, so they overlap (and LevelDB merges concurrent synced
 * writes into one fsync).
 *
 * Invariants, for each counter:
 *  - floor: every value <= floor has been handed out, burned, or reserved
 *    by an earlier owner.  An answer from memcached is accepted only if its
 *    block lies above floor as it was when the increment was sent, and
 *    overlaps no block accepted since (kept as merged ranges, only above
 *    the lowest floor an increment in flight was sent with, so a slow
 *    answer is still judged exactly); otherwise memcached went backwards
 *    (a restart, a stale warm restart, a stray set) and the increment is
 *    made again alone (nothing else in flight), raising the key exactly
 *    past floor.  A lost key is re-seeded alone, with memcached's add
 *    (never set) at max(floor, log max).  Restores, raises, lc_advance and
 *    lc_restore run alone (lc__counter_acquire waits until nothing is in
 *    flight and holds new increments back).
 *  - reserved (default durability): a synced reservation >= every value
 *    handed out.  A block above it is written together with a new,
 *    synced reservation.  A new handle starts with floor = max(log max,
 *    reservation), so even records lost to an OS crash cannot be reissued.
 *  - a value is returned only after its record's write succeeded; on a
 *    failed write the block is burned (floor still moves past it).
 *  - pending (a restored log, backup.c): the key is never seeded from
 *    the log; a miss, or memcached below what the log shows taken
 *    (records and ledger: proven), is LC_EBEHIND; between proven and
 *    floor (a reservation runs ahead) it is raised past floor as usual.  The first block accepted goes out alone
 *    (next_pending), written with a reservation at or above it and the
 *    counter's reconciled mark in one synced write.
 */
#include "counter/counter.h"
#include "handle.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ATTEMPTS 8

#ifdef LC_TEST_SEAMS
/* Test seam (the chaos harness): when set, called by a leader between its
 * memcached increment and its log write. */
void (*lc__test_before_commit)(const char *name);
#endif

struct lc__req {
  uint64_t n;
  int64_t first;
  int rc;
  bool taken; /* in a batch: its thread must not lead */
  bool done;
  pthread_cond_t cv; /* signalled when done, or to lead */
  char detail[LC__DETAIL_MAX];
  struct lc__req *next;
};
typedef lc__req req;

void lc__counter_table_init(lc__table *t) {
  memset(t, 0, sizeof *t);
  lc__names_init(&t->names, LC__COUNTER_NAME_AT);
  pthread_mutex_init(&t->mu, NULL);
}

/* A new counter's state, not in any table; NULL when out of memory. */
/* the byte-wide fields of lc__counter hold what they count */
_Static_assert(sizeof(LC__MC_PREFIX) - 1 + LC_NAME_MAX <= UCHAR_MAX, "klen");
_Static_assert(LC__ACCEPTED <= UCHAR_MAX && LC__GAPS <= UCHAR_MAX &&
                   LC__SEG_CLOSES <= UCHAR_MAX && LC__SEGS <= UCHAR_MAX &&
                   LC__INFLIGHT <= 8,
               "the counts");
/* nlen is the name table entry's own (the union atop lc__counter): the
 * same place and width */
_Static_assert(offsetof(lc__counter, nlen) == offsetof(lc__named, nlen) &&
                   sizeof(((lc__counter *)0)->nlen) ==
                       sizeof(((lc__named *)0)->nlen) &&
                   offsetof(lc__counter, node_hash_) ==
                       offsetof(lc__named, hash),
               "lc__counter's nlen is its lc__named's");

lc__counter *lc__counter_new(const char *name, size_t n) {
  size_t plen = strlen(LC__MC_PREFIX);
  lc__counter_stripes_init();
  /* the key from the end of the fields, not of the padded struct */
  lc__counter *c = calloc(1, offsetof(lc__counter, key) + plen + n + 1);
  if (c == NULL) return NULL;
  lc__seg_init(c);
  memcpy(c->key, LC__MC_PREFIX, plen);
  memcpy(c->key + plen, name, n + 1);
  c->nlen = n;
  c->klen = (unsigned char)(plen + n);
  return c;
}

void lc__counter_free(lc__counter *c) {
  lc__seg_destroy(c);
  free(c->refused_by);
  free(c->rare);
  free(c);
}

/* Each thread remembers the counters it found last, per handle (by uid,
 * never reused), so a hot name is found without the table's mutex.
 * Counters are freed by lc_close and by eviction passes (evict.c), which
 * run with no call inside and bump ev.gen: an entry of an older gen is
 * not used. */
#define LC__TCACHE 16
static _Thread_local struct {
  uint64_t uid, gen;
  lc__counter *c;
} tcache[LC__TCACHE];

static unsigned name_slot(const char *name, size_t n) {
  uint32_t x = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < n; i++) x = (x ^ (unsigned char)name[i]) * 16777619u;
  return x % LC__TCACHE;
}

/* c, marked used for the eviction passes (a load, and a store only
 * when a pass cleared the mark). */
static lc__counter *touch(lc_t *h, lc__counter *c) {
  if (h->ev.on && !atomic_load_explicit(&c->touched, memory_order_relaxed))
    atomic_store_explicit(&c->touched, true, memory_order_relaxed);
  return c;
}

/* Finds the counter, creating it when create (else *out may be NULL);
 * validates the name.  Inside the gate (evict.c). */
static int find(lc_t *h, const char *name, bool create, lc__counter **out) {
  int rc = lc_check_name(name);
  if (rc)
    return lc__fail(
        rc, rc == LC_EINVAL ? "counter name is NULL" : "invalid counter name");
  size_t n = strlen(name);
  unsigned slot = name_slot(name, n);
  uint64_t gen = atomic_load_explicit(&h->ev.gen, memory_order_relaxed);
  if (h->uid && tcache[slot].uid == h->uid && tcache[slot].gen == gen &&
      strcmp(lc__counter_name(tcache[slot].c), name) == 0) {
    *out = touch(h, tcache[slot].c);
    return 0;
  }
  lc__table *t = &h->counters;
  pthread_mutex_lock(&t->mu);
  lc__counter *c = (lc__counter *)lc__names_find(&t->names, name, n);
  if (c == NULL && create) {
    if (t->names.count >= t->names.max) {
      pthread_mutex_unlock(&t->mu);
      return lc__fail(LC_ELIMIT,
                      "%s would be counter %llu of this handle "
                      "(max_counters %llu)",
                      name, (unsigned long long)t->names.count + 1,
                      (unsigned long long)t->names.max);
    }
    c = lc__counter_new(name, n);
    if (c == NULL || !lc__names_add(&t->names, &c->node)) {
      pthread_mutex_unlock(&t->mu);
      if (c) lc__counter_free(c);
      return lc__fail(LC_ENOMEM, "cannot allocate counter state");
    }
  }
  pthread_mutex_unlock(&t->mu);
  if (c && h->uid) { /* 0: a handle not made by lc_open (the fuzzers') */
    tcache[slot].uid = h->uid;
    tcache[slot].gen = gen;
    tcache[slot].c = c;
  }
  *out = c ? touch(h, c) : NULL;
  return 0;
}

int lc__counter_lookup(lc_t *h, const char *name, lc__counter **out) {
  return find(h, name, true, out);
}

int lc__counter_find(lc_t *h, const char *name, lc__counter **out) {
  return find(h, name, false, out);
}

/* mu held: the first queued request, or NULL (the queue is a ring kept
 * by its last: qtail->next is the first). */
static req *qhead(const lc__counter *c) {
  return c->qtail ? c->qtail->next : NULL;
}

/* mu held: may the first queued request send its batch now? */
static bool can_send(const lc__counter *c) {
  const req *r = qhead(c);
  return r && !r->taken && !c->busy && c->excl_waiting == 0 &&
         c->inflight < LC__INFLIGHT;
}

/* mu held: wakes whoever may go on: exclusive operations once nothing is
 * in flight, else the first queued request if it may send. */
static void wake(lc__counter *c) {
  if (c->excl_waiting && !c->busy && c->inflight == 0)
    pthread_cond_broadcast(LC__CV(c));
  else if (can_send(c))
    pthread_cond_signal(&qhead(c)->cv);
}

/* Gives up the exclusive role and wakes whoever may go on; c->mu held. */
static void handoff(lc__counter *c) {
  c->busy = false;
  wake(c);
}

/* Leader role for operations that are not batched: nothing in flight. */
void lc__counter_acquire(lc__counter *c) {
  lc__counter_lock(c);
  c->excl_waiting++;
  while (c->busy || c->inflight > 0) lc__counter_wait(c, LC__CV(c));
  c->excl_waiting--;
  c->busy = true;
  lc__counter_unlock(c);
}

void lc__counter_settle(lc__counter *c) {
  lc__counter_acquire(c);
  lc__counter_lock(c);
  while (c->committing > 0) lc__counter_wait(c, LC__CV(c));
  lc__counter_unlock(c);
}

void lc__counter_release(lc__counter *c) {
  lc__counter_lock(c);
  handoff(c);
  lc__counter_unlock(c);
}

int lc__counter_load(lc_t *h, lc__counter *c) {
  if (c->loaded)
    return atomic_load(&c->unknown) ? lc__claim_reread(h, c) : 0;
  int64_t max = 0, res = 0, gapmax = 0;
  int rc =
      lc__log_max_both(&h->log, lc__counter_name(c), c->nlen, &max, &gapmax);
  if (!rc)
    rc = lc__log_get_reservation(&h->log, lc__counter_name(c), c->nlen, &res);
  if (!rc) rc = lc__claim_load(h, c);
  bool pending = false;
  if (!rc)
    rc = lc__backup_pending_load(h, lc__counter_name(c), c->nlen, &pending);
  if (rc) return rc;
  lc__counter_lock(c);               /* read under mu by lc_next_n */
  c->pending = pending;
  c->proven = max > gapmax ? max : gapmax;
  c->gap_low = max > gapmax ? max : gapmax; /* ledger gaps are skipped */
  c->floor = c->gap_low > res ? c->gap_low : res;
  c->restart_to = c->floor; /* holes up to it: the last run's */
  c->reserved = res;
  /* a promoted standby's holes are the old primary's lost records */
  /* no record (a first use): no hole between records to explain */
  rc = max == 0 ? 0
                : lc__ledger_load_tail(&h->log, c,
                                       h->promoting ? LC_GAP_FAILOVER
                                                    : LC_GAP_RESTART);
  if (rc) { /* loaded again next time */
    c->ngaps = 0;
    lc__counter_rare_trim(c);
  }
  c->loaded = rc == 0;
  lc__counter_unlock(c);
  return rc;
}

int lc__counter_claim(lc_t *h, lc__counter *c) {
  if (c->floor == 0 && !atomic_load(&c->refusal) && !c->pending) {
    /* A counter this log has never logged, reserved or skipped: seed its
     * key first (add: a key that exists is left alone), so that the first
     * increment finds it instead of missing, seeding and claiming again
     * (three round trips fewer per new name).  Before the claim, not
     * after: if memcached loses both meanwhile, that increment misses and
     * the usual seed claims again.  Seeding a key another log owns is
     * harmless (it restarts at 0; its owner's floor check raises it). */
    int rc = lc__cache_add(&h->cache, c->key, c->klen, 0);
    if (rc < 0) return rc;
    if (rc == 0) LC__STAT(h, restores, 1);
  }
  return lc__claim(h, c, false);
}

/* Leader only: seeds a lost key at max(floor, log max) with add, after
 * claiming the counter again (memcached lost the claim with the key). */
static int seed(lc_t *h, lc__counter *c, int64_t *seeded) {
  if (c->pending) return lc__backup_behind(lc__counter_name(c), -1, c->floor);
  int64_t max = 0;
  int rc = lc__claim(h, c, false);
  if (!rc) rc = lc__log_max(&h->log, lc__counter_name(c), c->nlen, &max);
  if (rc) return rc;
  if (max > c->floor) c->floor = max;
  rc = lc__cache_add(&h->cache, c->key, c->klen, (uint64_t)c->floor);
  if (rc == 0) {
    LC__STAT(h, restores, 1);
    *seeded = c->floor;
  }
  return rc; /* LC__EXISTS: someone else seeded it; go back to incr */
}

int lc__counter_increment(lc_t *h, lc__counter *c, uint64_t n, int64_t *last) {
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
    if (c->pending && (v < n || (int64_t)(v - n) < c->proven))
      /* below what the log shows taken: memcached went back, and the log
       * may be behind the original */
      return lc__backup_behind(lc__counter_name(c),
                               v >= n ? (int64_t)(v - n) : 0, c->proven);
    /* memcached is behind what was handed out: raise it past floor. */
    LC__STAT(h, backwards, 1);
    delta = (uint64_t)c->floor + n - v;
  }
  return lc__fail(LC_EAGAIN, "memcached lost or lowered %s %d times in a row",
                  c->key, MAX_ATTEMPTS);
}

typedef lc__block block;

/* mu held: the lowest floor an answer still in flight was sent with (the
 * floor itself when none is). */
static int64_t lowest_sent_floor(const lc__counter *c) {
  int64_t low = c->floor;
  for (int i = 0; i < LC__INFLIGHT; i++)
    if ((c->slots & (1u << i)) && c->sent_floor[i] < low)
      low = c->sent_floor[i];
  return low;
}

/* mu held: records the accepted range first..last for the overlap check,
 * and forgets the ranges no answer in flight can reach.  A range at or
 * below every floor in flight can meet no answer that acceptable() takes
 * (each lies above its own floor), so it is not kept at all: without two
 * increments in flight nothing is. */
static void remember(lc__counter *c, int64_t first, int64_t last) {
  int64_t low = lowest_sent_floor(c);
  lc__rare *r = last > low ? lc__counter_rare(c) : NULL;
  if (last > low && r == NULL) { /* no memory: as when full */
    if (last > c->lost_below) c->lost_below = last;
  } else if (r) {
    lc__span *a = r->accepted;
    int i = 0;
    while (i < c->naccepted && a[i].last < first) i++;
    if (i > 0 && a[i - 1].last == first - 1) { /* extends the one below */
      a[i - 1].last = last;
      if (i < c->naccepted && a[i].first == last + 1) { /* and the next */
        a[i - 1].last = a[i].last;
        memmove(a + i, a + i + 1, sizeof *a * (size_t)(c->naccepted - i - 1));
        c->naccepted--;
      }
    } else if (i < c->naccepted && a[i].first == last + 1) {
      a[i].first = first;
    } else {
      if (c->naccepted == LC__ACCEPTED) { /* full: forget the lowest */
        if (a[0].last > c->lost_below) c->lost_below = a[0].last;
        memmove(a, a + 1, sizeof *a * (size_t)(LC__ACCEPTED - 1));
        c->naccepted--;
        if (i > 0) i--;
      }
      memmove(a + i + 1, a + i, sizeof *a * (size_t)(c->naccepted - i));
      a[i] = (lc__span){first, last};
      c->naccepted++;
    }
  }
  if (c->naccepted > 0) {
    lc__span *a = c->rare->accepted;
    int drop = 0;
    while (drop < c->naccepted && a[drop].last <= low) drop++;
    memmove(a, a + drop, sizeof *a * (size_t)(c->naccepted - drop));
    c->naccepted -= drop;
  }
  if (c->lost_below <= low) c->lost_below = 0;
  lc__counter_rare_trim(c);
}

/* mu held: the block (last-n, last] is handed out (or burned if its write
 * fails): floor passes it, and whether its record needs a sync and a new
 * reservation is decided. */
static void plan(lc_t *h, lc__counter *c, int64_t last, uint64_t n, block *b) {
  b->last = last;
  b->n = n;
  b->reservation = 0;
  b->sync = h->opt.durability == LC_DURABILITY_SYNC;
  if (!b->sync && last > c->reserved) {
    uint64_t block16 = n > UINT64_MAX / 16 ? UINT64_MAX : 16 * n;
    uint64_t window = h->opt.reserve > block16 ? h->opt.reserve : block16;
    b->reservation = (uint64_t)(LC_VALUE_MAX - last) < window
                         ? LC_VALUE_MAX
                         : last + (int64_t)window;
    b->sync = true;
  }
  if (last > c->floor) c->floor = last; /* never again */
  c->used = true;
  remember(c, last - (int64_t)(n - 1), last);
  lc__ledger_taken(c, last - (int64_t)(n - 1), last, lowest_sent_floor(c));
  b->ngaps = lc__ledger_take(&h->log, c, b->gaps);
}

/* mu held: may the answer v to an increment by n, sent when floor was
 * floor0, be handed out?  Only if its block lies above floor0 and overlaps
 * no block accepted since (memcached went backwards otherwise: a restart,
 * a stale warm restart, a stray set).  Blocks accepted before it was sent
 * lie at or below floor0; those accepted since and above floor0 are in
 * c->rare->accepted. */
static bool acceptable(const lc__counter *c, uint64_t v, uint64_t n,
                       int64_t floor0) {
  if (v < n || (int64_t)(v - n) < floor0) return false;
  int64_t first = (int64_t)(v - n) + 1, last = (int64_t)v;
  if (first <= c->lost_below) return false; /* cannot tell: alone */
  for (int i = 0; i < c->naccepted; i++)
    if (!(last < c->rare->accepted[i].first ||
          first > c->rare->accepted[i].last))
      return false;
  return true;
}

/* Adds the block's record to wb, with its reservation and ledger entries
 * if any. */
static void batch_block(leveldb_writebatch_t *wb, const lc__counter *c,
                        const block *b) {
  lc__log_batch_record(wb, lc__counter_name(c), c->nlen, b->last,
                       LC_RECORD_BLOCK, b->n, lc__clock_now_us());
  if (b->reservation)
    lc__log_batch_reservation(wb, lc__counter_name(c), c->nlen, b->reservation);
  lc__ledger_batch(wb, c, b->gaps, b->ngaps);
  if (b->reconciles)
    lc__backup_reconciled(wb, lc__counter_name(c), c->nlen, b->last);
}

/* Writes the block's record (batch_block). */
static int commit(lc_t *h, lc__counter *c, const block *b) {
  leveldb_writebatch_t *wb = leveldb_writebatch_create();
  batch_block(wb, c, b);
  int64_t t0 = lc__clock_mono_us();
  int rc = lc__log_write(&h->log, wb, b->sync);
  if (b->reservation) lc__lat_record(&h->lat[LC__LAT_RESERVATION], t0);
  leveldb_writebatch_destroy(wb);
  LC__STAT(h, log_writes, 1);
  if (b->sync) LC__STAT(h, log_syncs, 1);
  return rc;
}

/* Takes queued requests, at most max (0: any number), whose total fits
 * below 2^63; c->mu held. */
static req *take_batch(lc__counter *c, unsigned max, uint64_t *total) {
  req *batch = qhead(c), *last = NULL; /* taken: batch..last, in order */
  uint64_t room = (uint64_t)(LC_VALUE_MAX - c->floor);
  unsigned taken = 0;
  *total = 0;
  for (req *r = batch;
       r && r->n <= room - *total && (max == 0 || taken++ < max);
       r = r == c->qtail ? NULL : r->next) {
    r->taken = true;
    *total += r->n;
    last = r;
  }
  if (*total == 0) { /* the first request alone does not fit: take it */
    batch->taken = true;
    *total = batch->n;
    last = batch;
  }
  if (last == c->qtail)
    c->qtail = NULL; /* all taken */
  else
    c->qtail->next = last->next; /* the rest, still a ring */
  last->next = NULL;
  return batch;
}

/* mu held: b needs a new reservation.  One reservation write at a time
 * per counter (writes that complete out of order would leave the lower
 * value in the log): wait for the one under way, then write only if the
 * block is still above what is reserved. */
static void claim_reservation(lc_t *h, lc__counter *c, block *b) {
  while (c->res_writing) lc__counter_wait(c, LC__CV(c));
  if (b->last <= c->reserved) { /* covered meanwhile */
    b->reservation = 0;
    b->sync = h->opt.durability == LC_DURABILITY_SYNC;
    return;
  }
  c->res_writing = true;
}

/* mu held: the reservation write claimed is over; written: its value,
 * or 0 when it failed. */
static void release_reservation(lc__counter *c, int64_t written) {
  if (written > c->reserved) c->reserved = written;
  c->res_writing = false;
  pthread_cond_broadcast(LC__CV(c));
}

/* mu held: block b's write is over (rc its result): its reservation
 * write released, and on a failure the block burned (the ledger says so
 * next time). */
static void block_written(lc__counter *c, const block *b, int rc) {
  if (b->reservation) release_reservation(c, rc ? 0 : b->reservation);
  if (rc && b->last) {
    lc__ledger_putback(c, b->gaps, b->ngaps);
    lc__ledger_gap(c, b->last - (int64_t)(b->n - 1), b->last, LC_GAP_BURNED);
  }
}

/* mu held, returns with it held: the increment of an answer that could
 * not be accepted (or of a lost key: missing, seeded first), made alone:
 * with nothing else in flight it restores or raises the key exactly past
 * floor. */
static int increment_alone(lc_t *h, lc__counter *c, uint64_t n, bool missing,
                           int64_t *last) {
  c->excl_waiting++;
  while (c->busy || c->inflight > 0) lc__counter_wait(c, LC__CV(c));
  c->excl_waiting--;
  c->busy = true;
  lc__counter_unlock(c);
  int64_t seeded;
  int rc = missing ? seed(h, c, &seeded) : 0;
  if (rc >= 0) rc = lc__counter_increment(h, c, n, last);
  lc__counter_lock(c);
  c->busy = false;
  return rc;
}

/*
 * Sends one batch (mu held, returns with it held): the queued requests, ONE
 * increment by their total, ONE record, the block split among them in
 * arrival order.  Up to LC__INFLIGHT batches of one counter are sent at
 * once; their log writes (synced ones too) overlap, and LevelDB merges
 * concurrent synced writes into one fsync.
 */
static void send_batch(lc_t *h, lc__counter *c) {
  uint64_t total;
  req *batch = take_batch(c, h->opt.batch_max, &total);
  block b = {0};
  int rc = 0;
  if (total > (uint64_t)(LC_VALUE_MAX - c->floor)) {
    rc = lc__fail(LC_EOVERFLOW, "%s stands at %lld", lc__counter_name(c),
                  (long long)c->floor);
  } else if ((rc = lc__log_ok(&h->log)) != 0) {
    /* nothing taken from memcached */
  } else {
    int64_t floor0 = c->floor;
    uint64_t v = 0;
    int slot = 0;
    while (c->slots & (1u << slot)) slot++; /* inflight < LC__INFLIGHT */
    c->slots |= 1u << slot;
    c->sent_floor[slot] = floor0;
    c->inflight++;
    wake(c); /* the next batch may go too */
    lc__counter_unlock(c);
    LC__STAT(h, increments, 1);
    rc = lc__cache_incr(&h->cache, c->key, c->klen, total, &v);
    lc__counter_lock(c);
    c->inflight--;
    c->slots &= ~(1u << slot);
    if (rc == 0 && v > (uint64_t)LC_VALUE_MAX) {
      rc = lc__fail(LC_EOVERFLOW, "memcached holds %llu for %s",
                    (unsigned long long)v, c->key);
    } else if (rc == 0 && acceptable(c, v, total, floor0)) {
      plan(h, c, (int64_t)v, total, &b);
    } else if (rc == 0 || rc == LC__MISS) {
      if (rc == 0) LC__STAT(h, backwards, 1);
      int64_t last;
      rc = increment_alone(h, c, total, rc == LC__MISS, &last);
      if (!rc) plan(h, c, last, total, &b);
    }
  }
  /* committing from here: a batch waiting for the reservation write under
   * way is on its way to the log too (lc__counter_settle waits for it: a
   * snapshot meanwhile would show its values as a hole, while a later
   * batch's record, not waiting, is there) */
  bool committing = rc == 0;
  if (committing) c->committing++;
  if (!rc && b.reservation) claim_reservation(h, c, &b);
  wake(c);
  lc__counter_unlock(c);

  if (!rc) LC__SEAM_BEFORE_COMMIT(lc__counter_name(c));
  if (!rc) rc = commit(h, c, &b);
  uint64_t first = (uint64_t)(b.last - (int64_t)b.n + 1); /* unsigned: */
  for (req *r = batch; r; r = r->next) {                  /* may pass 2^63-1 */
    r->rc = rc;
    if (rc) {
      memcpy(r->detail, lc_last_detail(), LC__DETAIL_MAX);
    } else {
      r->first = (int64_t)first;
      first += r->n;
    }
  }
  lc__counter_lock(c);
  if (committing && --c->committing == 0 && c->busy)
    pthread_cond_broadcast(LC__CV(c)); /* lc__counter_settle */
  block_written(c, &b, rc);
  for (req *r = batch, *next; r; r = next) {
    next = r->next; /* r may vanish once done is seen */
    r->done = true;
    pthread_cond_signal(&r->cv);
  }
  if (rc && b.last) { /* burned: noted where a later run finds it */
    lc__counter_unlock(c);
    lc__claim_note_burned(h, c);
    lc__counter_lock(c);
  }
}

/*
 * A pending counter's allocation (see backup.c), alone as leader:
 * memcached must hold the counter at or above floor (else LC_EBEHIND,
 * from lc__counter_increment); the block goes out only after its record,
 * a reservation at or above it and the reconciled mark are synced in one
 * write.  LC__MISS: the counter is not pending (or not claimed) any more:
 * the caller goes the usual way.
 */
static int next_pending(lc_t *h, lc__counter *c, uint64_t n, int64_t *first) {
  lc__counter_acquire(c);
  int rc = LC__MISS;
  block b = {0};
  if (!c->pending || !c->claimed) {
    /* reconciled meanwhile, or to be claimed again */
  } else if (n > (uint64_t)(LC_VALUE_MAX - c->floor)) {
    rc = lc__fail(LC_EOVERFLOW, "%s stands at %lld", lc__counter_name(c),
                  (long long)c->floor);
  } else if ((rc = lc__log_ok(&h->log)) == 0) {
    int64_t last = 0;
    rc = lc__counter_increment(h, c, n, &last);
    if (!rc) {
      lc__counter_lock(c);
      plan(h, c, last, n, &b);
      if (b.reservation == 0) b.reservation = last; /* sync durability */
      claim_reservation(h, c, &b);
      b.sync = true;
      b.reconciles = true;
      lc__counter_unlock(c);
      LC__SEAM_BEFORE_COMMIT(lc__counter_name(c));
      rc = commit(h, c, &b);
      lc__counter_lock(c);
      block_written(c, &b, rc);
      if (!rc) {
        c->pending = false;
        *first = last - (int64_t)(n - 1);
      }
      lc__counter_unlock(c);
      if (rc) lc__claim_note_burned(h, c);
    }
  }
  lc__counter_release(c);
  return rc;
}

/* mu held: takes r (at the head, if queued) out of the queue. */
static void unqueue(lc__counter *c, req *r, bool *queued) {
  if (!*queued) return;
  if (c->qtail == r)
    c->qtail = NULL; /* it was the only one */
  else
    c->qtail->next = r->next;
  r->next = NULL;
  *queued = false;
  wake(c);
}

/* ---- first.c's batch of first uses --------------------------------- */

bool lc__counter_try_first(lc_t *h, lc__counter *c) {
  lc__counter_lock(c);
  bool ok = !c->busy && c->inflight == 0 && c->excl_waiting == 0 &&
            c->qtail == NULL && !c->loaded && !c->claimed &&
            !(h->opt.prefetch && c->fetching);
  if (ok) {
    c->busy = true;
    if (h->opt.prefetch) c->fetching = true; /* prefetch_next callers wait */
  }
  lc__counter_unlock(c);
  return ok;
}

void lc__counter_end_first(lc_t *h, lc__counter *c) {
  lc__counter_lock(c);
  if (h->opt.prefetch) {
    c->fetching = false;
    pthread_cond_broadcast(LC__SEG_CV(c));
  }
  handoff(c);
  lc__counter_unlock(c);
}

void lc__counter_first_block(lc_t *h, lc__counter *c, int64_t last, uint64_t n,
                             lc__block *b, leveldb_writebatch_t *wb) {
  lc__counter_lock(c);
  plan(h, c, last, n, b);
  if (b->reservation) claim_reservation(h, c, b);
  lc__counter_unlock(c);
  batch_block(wb, c, b);
}

void lc__counter_first_done(lc__counter *c, const lc__block *b, int rc) {
  lc__counter_lock(c);
  block_written(c, b, rc);
  lc__counter_unlock(c);
}

void lc__counter_first_burn(lc__counter *c, int64_t last, uint64_t n) {
  int64_t first = last - (int64_t)(n - 1);
  lc__counter_lock(c);
  if (last > c->floor) c->floor = last; /* never again */
  c->used = true;
  remember(c, first, last);
  lc__ledger_taken(c, first, last, lowest_sent_floor(c));
  lc__ledger_gap(c, first, last, LC_GAP_BURNED);
  lc__counter_unlock(c);
}

int lc__counter_next(lc_t *h, lc__counter *c, uint64_t n, int64_t *first) {
  int rc;
  req r = {.n = n};
  pthread_cond_init(&r.cv, NULL);
  lc__counter_lock(c);
  for (bool queued = false; !r.done;) {
    if (r.taken) { /* in a batch, out of the queue: its leader answers it
                    * (done), whatever the counter's claim meanwhile (a
                    * release runs while a batch commits); woken early,
                    * it only waits again */
      lc__counter_wait(c, &r.cv);
      continue;
    }
    if (!c->claimed) {
      /* first use (floor and reservation, then the claim), or the counter
       * was released or refused while this call waited: claim again (a
       * refusal then fails it), out of the queue meanwhile */
      unqueue(c, &r, &queued);
      lc__counter_unlock(c);
      lc__counter_acquire(c);
      rc = lc__counter_load(h, c);
      if (!rc && !c->claimed) rc = lc__counter_claim(h, c);
      lc__counter_release(c);
      if (rc) {
        pthread_cond_destroy(&r.cv);
        return rc;
      }
      lc__counter_lock(c);
      continue;
    }
    if (c->pending) { /* alone, out of the queue (see next_pending) */
      unqueue(c, &r, &queued);
      lc__counter_unlock(c);
      rc = next_pending(h, c, n, first);
      if (rc != LC__MISS) {
        pthread_cond_destroy(&r.cv);
        return rc;
      }
      lc__counter_lock(c);
      continue;
    }
    if (!queued) { /* last in the ring */
      r.next = c->qtail ? c->qtail->next : &r;
      if (c->qtail) c->qtail->next = &r;
      c->qtail = &r;
      queued = true;
    }
    if (qhead(c) == &r && can_send(c))
      send_batch(h, c); /* unlocks and relocks c->mu */
    else
      lc__counter_wait(c, &r.cv);
  }
  lc__counter_unlock(c);
  pthread_cond_destroy(&r.cv);
  if (r.rc)
    lc__detail_set(r.detail);
  else
    *first = r.first;
  return r.rc;
}


/* Restores a lost key (seed) and raises one below floor; a pending
 * counter's key is never seeded, and raised only from at or above what
 * the log shows taken (c->proven). */
int lc__counter_restore(lc_t *h, lc__counter *c, int64_t *out) {
  for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    uint64_t v = 0;
    int rc = lc__cache_get(&h->cache, c->key, c->klen, &v);
    if (rc == LC__MISS) {
      rc = seed(h, c, out);
      if (rc <= 0) return rc;
      continue; /* seeded by someone else meanwhile */
    }
    if (rc) return rc;
    if (v >= (uint64_t)c->floor) {
      *out = v > (uint64_t)LC_VALUE_MAX ? LC_VALUE_MAX : (int64_t)v;
      return 0;
    }
    LC__STAT(h, backwards, 1);
    if (c->pending && v < (uint64_t)c->proven)
      return lc__backup_behind(lc__counter_name(c), (int64_t)v, c->proven);
    rc = lc__cache_incr(&h->cache, c->key, c->klen, (uint64_t)c->floor - v, &v);
    if (rc < 0) return rc;
  }
  return lc__fail(LC_EAGAIN, "memcached kept changing %s", c->key);
}

int lc__counter_skip(lc_t *h, lc__counter *c, int64_t target, int cause,
                     leveldb_writebatch_t *b) {
  lc__gap g[LC__GAPS + 1];
  int n = 0;
  lc__counter_lock(c);
  while (c->res_writing) lc__counter_wait(c, LC__CV(c));
  bool skip = target > c->floor, raise = target > c->reserved;
  c->res_writing = raise; /* a batch that finished its increment may
                             still be raising it after its write */
  if (skip) {
    lc__ledger_settle(c, c->floor);
    n = lc__ledger_take(&h->log, c, g);
    g[n] = (lc__gap){c->floor + 1, target, cause};
  }
  lc__counter_unlock(c);
  uint64_t term = atomic_load(&h->term);
  if (skip && cause == LC_GAP_FAILOVER && term) { /* it says its term */
    char why[32];
    snprintf(why, sizeof why, "term %llu", (unsigned long long)term);
    lc__ledger_batch(b, c, g, n);
    lc__ledger_batch_reason(b, c, &g[n], why);
  } else {
    lc__ledger_batch(b, c, g, n + skip);
  }
  if (raise) lc__log_batch_reservation(b, lc__counter_name(c), c->nlen, target);
  int rc = lc__log_sync(h, b, raise ? LC__LAT_RESERVATION : -1);
  lc__counter_lock(c);
  if (raise) release_reservation(c, rc ? 0 : target);
  if (rc) {
    lc__ledger_putback(c, g, n);
  } else if (skip) {
    c->floor = target;
    c->gap_low = target;
    c->used = true;
  }
  lc__counter_unlock(c);
  return rc;
}
