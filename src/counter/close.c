/*
 * close.c - a counter leaving memory: at lc_close every counter of the
 * table (lc__counter_table_close), and in an eviction pass the idle ones
 * chosen (lc__counters_evict, for evict.c).  Each counter's exact
 * reservation is written (unless the record of its last value pins it:
 * pinned), with its prefetched segments' records cut to what went out,
 * in synced chunks of CLOSE_CHUNK counters, and memcached
 * is set back in pipelined rounds where it still holds what this handle
 * left there; the values given back that way are never lost, those it
 * could not set back are explained in the ledger.  Above the leaves, like
 * counter.c.
 *
 * lc_close overlaps the two: a chunk's counters are lowered as soon as
 * their records are synced, by LOWER_THREADS threads of its own (each
 * LOWER_CHUNK counters at a time, on a connection of its own), while it
 * writes the next chunks.  A counter is set back only after its own
 * records are in the log, which is all that each lowering relies on.
 * It closes the counters in name order (sort_by_name).  (Measured with
 * 200,000 counters in memory: writing took a third of the time, the
 * lowering rounds two thirds, one after the other; and most of the
 * writing was LevelDB's memtable inserts missing the cache.)
 */
#include "counter/counter.h"
#include "handle.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* lc__counter_table_close's passes over the counters. */
typedef struct closing {
  leveldb_writebatch_t *b;
  lc__log *log;
  lc__cache *cache;
  bool any;     /* b holds something to write */
  bool written; /* the first write succeeded: lower memcached */
  lc__table *evict; /* eviction: only the counters marked evicting, taken
                       out of this table when freed */
  int freed;
  bool lower_failed; /* memcached failed a lowering */
  size_t inbatch;    /* lc_close: counters in b since its last write */
  int rc;            /* lc_close: the first failed write's code */
} closing;

#define CLOSE_CHUNK 4096 /* lc_close writes b every this many counters */
#define LOWER_THREADS 4  /* lc_close: threads lowering written chunks */

/* lc_close: writes what b holds (synced), keeping the first failure. */
static void close_flush(closing *k) {
  if (k->any && k->rc == 0) k->rc = lc__log_write(k->log, k->b, true);
  leveldb_writebatch_clear(k->b);
  k->any = false;
  k->inbatch = 0;
}

/* Whether a restart already goes on at exactly stands + 1 without a
 * reservation record: stands is the last value handed out of a segment
 * (c->handed), whose record, keyed by it, is in the log or in b
 * (lc__seg_close rewrote it there: records are keyed by their last
 * value), and the log's reservation lies below it.  A restore starts
 * at the largest of the records, the ledger and the reservation; the
 * segments' open records above stands are gone with b, and its ledger
 * entries end at stands.  (Where the segment's record stayed open, out
 * of memory, the restore starts above it: never below stands.)  Most
 * counters of a handle with prefetch close this way; a reservation the
 * window kept ahead (prefetch off) is still set back to stands. */
static bool pinned(const lc__counter *c, int64_t stands) {
  return c->handed > 0 && stands == c->handed && c->reserved < stands;
}

/* First pass: each counter's rewritten segment records, exact reservation
 * and last ledger entries go into one batch; lc_close's in chunks (one
 * batch of millions of counters would sit whole in LevelDB's memtable and
 * write-ahead log, which the next open must replay: seconds per million).
 * Each counter's part is safe alone: a crash after some chunks leaves
 * those exact and the rest as at a crash (segments open, above). */
static void close_write(lc__named *e, void *arg) {
  lc__counter *c = (lc__counter *)e;
  closing *k = arg;
  if (k->evict && !c->evicting) return;
  int64_t stands = lc__seg_close(c, k->b);
  if (stands < 0)
    stands = c->floor;
  else
    k->any = true; /* segment records rewritten */
  if (c->used && stands != c->reserved && !pinned(c, stands)) {
    /* exact: a restart after a clean close skips nothing */
    lc__log_batch_reservation(k->b, lc__counter_name(c), c->nlen, stands);
    k->any = true;
  }
  c->reserved = stands;
  if (c->used) { /* nothing in flight: every hole is final */
    lc__gap g[LC__GAPS];
    lc__ledger_settle(c, c->floor);
    int n = lc__ledger_take(k->log, c, g);
    lc__ledger_batch(k->b, c, g, n);
    k->any = k->any || n > 0;
  }
  if (!k->evict && ++k->inbatch == CLOSE_CHUNK) close_flush(k);
}

#define NOT_LOWERED 3 /* lower_all: c needs no lowering */
#define LOWER_CHUNK 512 /* lowerings pipelined at once */

static bool wants_lower(const closing *k, const lc__counter *c) {
  return (!k->evict || c->evicting) && k->written && c->used &&
         c->reserved < c->floor;
}

/* Second pass, first half: segments left memcached at floor, ahead of what
 * went out; each key is set back to reserved where it still holds floor
 * (gets, then cas), so that a restart goes on at the next value.  res[i]:
 * 0 lowered, LC__MISS, LC__EXISTS (it moved on), negative, or NOT_LOWERED.
 * LOWER_CHUNK at a time in two pipelined rounds (cache_pipe.c), or one
 * counter at a time (lc__cache_lower) where that is not spoken.  Each
 * pass (an eviction, each lowering thread of lc_close) stops trying after
 * memcached failed once: each try could wait the timeout (twice it for a
 * round), calls wait for an eviction pass, and a million counters in
 * 2,000 rounds would hold lc_close (a daemon's stop) for many minutes
 * with memcached hung.  Those not tried are not set back: their unused
 * rest is a gap, never reissued (close_lower), as after a failed try. */
static void lower_all(closing *k, lc__counter **v, size_t n, int *res) {
  lc__op *ops = malloc(sizeof *ops * LOWER_CHUNK);
  size_t idx[LOWER_CHUNK];
  for (size_t from = 0; from < n; from += LOWER_CHUNK) {
    size_t to = n - from < LOWER_CHUNK ? n : from + LOWER_CHUNK, m = 0;
    for (size_t i = from; i < to; i++) {
      lc__counter *c = v[i];
      res[i] = NOT_LOWERED;
      if (!wants_lower(k, c)) continue;
      if (k->lower_failed) {
        res[i] = LC_EMEMCACHED;
        continue;
      }
      idx[m] = i;
      if (ops)
        ops[m] = (lc__op){.kind = LC__OP_GETS, .master = c->key,
                          .mlen = c->klen, .key = c->key, .klen = c->klen};
      m++;
    }
    int rc = m && ops ? lc__cache_pipe(k->cache, ops, m) : LC__MISS;
    size_t cas = 0;
    for (size_t j = 0; j < m; j++) {
      lc__counter *c = v[idx[j]];
      int *r = &res[idx[j]];
      uint64_t x;
      if (rc == LC__MISS) /* one at a time */
        *r = k->lower_failed
                 ? LC_EMEMCACHED
                 : lc__cache_lower(k->cache, c->key, c->klen,
                                   (uint64_t)c->floor, (uint64_t)c->reserved);
      else if (rc < 0 || ops[j].rc < 0)
        *r = rc < 0 ? rc : ops[j].rc;
      else if (ops[j].rc == LC__MISS)
        *r = LC__MISS;
      else if (!lc__cache_parse_u64(ops[j].text, strlen(ops[j].text), &x) ||
               x != (uint64_t)c->floor)
        *r = LC__EXISTS;
      else { /* still at floor: set it back (ops before cas are done) */
        lc__op *o = &ops[cas];
        uint64_t unique = ops[j].cas;
        *o = (lc__op){.kind = LC__OP_CAS, .master = c->key, .mlen = c->klen,
                      .key = c->key, .klen = c->klen, .cas = unique};
        o->vlen = (size_t)snprintf(o->text, sizeof o->text, "%lld",
                                   (long long)c->reserved);
        o->val = o->text;
        idx[cas++] = idx[j];
      }
      if (*r < 0) k->lower_failed = true;
    }
    rc = cas ? lc__cache_pipe(k->cache, ops, cas) : 0;
    for (size_t j = 0; j < cas; j++) {
      res[idx[j]] = rc < 0 ? rc : rc == LC__MISS ? LC__EXISTS : ops[j].rc;
      if (res[idx[j]] < 0) k->lower_failed = true;
    }
  }
  free(ops);
}

/* Second pass, second half: where memcached could not be set back, a
 * gap, in the ledger, and the reservation at floor (a restart then never
 * reissues it).  Then the counter is freed. */
static void close_lower(lc__counter *c, closing *k, int lowered) {
  if (k->evict && (!c->evicting || !k->written)) {
    c->evicting = false; /* stays, as it is */
    return;
  }
  if (lowered != NOT_LOWERED && lowered != 0 && lowered != LC__MISS) {
    lc__gap g = {c->reserved + 1, c->floor, LC_GAP_SEGMENT};
    if (k->evict) {
      /* not evicted: the gap rides along with its next write, and the
       * floor stays where memcached is */
      lc__counter_lock(c);
      lc__ledger_gap(c, g.first, g.last, g.cause);
      lc__counter_unlock(c);
      c->evicting = false;
      return;
    }
    lc__ledger_batch(k->b, c, &g, 1);
    lc__log_batch_reservation(k->b, lc__counter_name(c), c->nlen, c->floor);
    k->any = true;
    if (++k->inbatch == CLOSE_CHUNK) close_flush(k); /* lc_close only */
  }
  if (k->evict) {
    pthread_mutex_lock(&k->evict->mu);
    lc__names_remove(&k->evict->names, &c->node);
    pthread_mutex_unlock(&k->evict->mu);
  }
  k->freed++;
  lc__counter_free(c);
}

/* The second pass over v[0..n): the lowerings, then each counter closed
 * (one at a time when out of memory). */
static void lower_and_close(closing *k, lc__counter **v, size_t n) {
  int *res = malloc(sizeof *res * (n ? n : 1));
  for (size_t i = 0; i < n; i++) {
    if (res == NULL) {
      int one;
      lower_all(k, &v[i], 1, &one);
      close_lower(v[i], k, one);
    } else {
      if (i == 0) lower_all(k, v, n, res);
      close_lower(v[i], k, res[i]);
    }
  }
  free(res);
}

/* mu held: nothing uses c, nor has since the pass's scan (evict.c). */
static bool evictable(lc__counter *c) {
  return !atomic_load_explicit(&c->touched, memory_order_relaxed) &&
         !c->busy && c->excl_waiting == 0 && c->qtail == NULL &&
         c->inflight == 0 && c->committing == 0 && !c->res_writing &&
         !c->fetching && !c->queued && !c->pending && !c->recheck;
}

int lc__counters_evict(lc_t *h, lc__counter **v, size_t n) {
  closing k = {.cache = &h->cache, .log = &h->log, .evict = &h->counters};
  size_t marked = 0;
  for (size_t i = 0; i < n; i++) {
    lc__counter_lock(v[i]);
    v[i]->evicting = evictable(v[i]);
    marked += v[i]->evicting;
    lc__counter_unlock(v[i]);
  }
  if (marked == 0) return 0;
  int rc = 0;
  k.b = leveldb_writebatch_create();
  for (size_t i = 0; i < n; i++) close_write(&v[i]->node, &k);
  if (k.any) rc = lc__log_write(k.log, k.b, true);
  k.written = rc == 0;
  lower_and_close(&k, v, n);
  leveldb_writebatch_destroy(k.b);
  return rc ? rc : k.freed;
}

typedef struct gather {
  lc__counter **v;
  size_t n;
  closing *k; /* v is NULL (out of memory): each closed at once */
} gather;

static void gather_one(lc__named *e, void *arg) {
  gather *g = arg;
  lc__counter *c = (lc__counter *)e;
  if (g->v)
    g->v[g->n++] = c;
  else
    lower_and_close(g->k, &c, 1);
}

/* v[0 .. n) by name (bytewise, as the log's keys sort), so that the
 * close's records go into LevelDB's memtable in key order: each insert
 * then walks the skip list along the path the last one left in the
 * cache.  (In the hash table's order each insert missed the cache on
 * most of its path, which was the largest cost of a close.)  Left as it
 * is without memory. */
typedef struct byname {
  uint64_t k; /* the name's first 8 bytes, big-endian, zero-padded */
  lc__counter *c;
} byname;

static int byname_cmp(const void *a, const void *b) {
  const byname *x = a, *y = b;
  if (x->k != y->k) return x->k < y->k ? -1 : 1;
  size_t n = x->c->nlen < y->c->nlen ? x->c->nlen : y->c->nlen;
  int r = memcmp(lc__counter_name(x->c), lc__counter_name(y->c), n);
  return r ? r : (x->c->nlen > y->c->nlen) - (x->c->nlen < y->c->nlen);
}

static void sort_by_name(lc__counter **v, size_t n) {
  byname *s = malloc(sizeof *s * (n ? n : 1));
  if (s == NULL) return;
  for (size_t i = 0; i < n; i++) {
    uint64_t k = 0;
    for (size_t j = 0; j < 8; j++)
      k = k << 8 |
          (j < v[i]->nlen ? (unsigned char)lc__counter_name(v[i])[j] : 0);
    s[i] = (byname){k, v[i]};
  }
  qsort(s, n, sizeof *s, byname_cmp);
  for (size_t i = 0; i < n; i++) v[i] = s[i].c;
  free(s);
}

/* lc_close's lowering threads: v[0 .. ready) have their records synced
 * and may be set back; each thread takes LOWER_CHUNK of them at a time
 * from next, with its own copy of the closing state (lower_failed). */
typedef struct lowering {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* ready moved, or done */
  lc__counter **v;
  int *res;
  size_t ready, next;
  bool done; /* nothing more becomes ready */
  closing k; /* each thread's copy: written, no batch */
} lowering;

static void *lower_thread(void *arg) {
  lowering *l = arg;
  closing k = l->k;
  pthread_mutex_lock(&l->mu);
  for (;;) {
    while (l->next == l->ready && !l->done) pthread_cond_wait(&l->cv, &l->mu);
    if (l->next == l->ready) break;
    size_t from = l->next;
    size_t to = l->ready - from < LOWER_CHUNK ? l->ready : from + LOWER_CHUNK;
    l->next = to;
    pthread_mutex_unlock(&l->mu);
    lower_all(&k, l->v + from, to - from, l->res + from);
    pthread_mutex_lock(&l->mu);
  }
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

static void lower_ready(lowering *l, size_t ready, bool done) {
  pthread_mutex_lock(&l->mu);
  l->ready = ready;
  l->done = done;
  pthread_cond_broadcast(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

/* lc_close with every counter in v[0 .. n) and res for each: the records
 * in synced chunks, each chunk handed to the lowering threads once it is
 * written; then the gaps of those memcached did not take back, and the
 * counters freed.  False (nothing done) if no thread could start. */
static bool close_parallel(closing *k, lc__counter **v, int *res, size_t n) {
  lowering l = {.v = v, .res = res, .k = *k};
  l.k.b = NULL;
  l.k.written = true;
  pthread_mutex_init(&l.mu, NULL);
  pthread_cond_init(&l.cv, NULL);
  pthread_t th[LOWER_THREADS];
  int started = 0;
  sigset_t all, old; /* the application's threads take the signals */
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  while (started < LOWER_THREADS &&
         pthread_create(&th[started], NULL, lower_thread, &l) == 0)
    started++;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (started == 0) {
    pthread_cond_destroy(&l.cv);
    pthread_mutex_destroy(&l.mu);
    return false;
  }
  for (size_t i = 0; i < n; i++) res[i] = NOT_LOWERED;
  size_t ready = 0;
  for (size_t i = 0; i < n; i++) {
    close_write(&v[i]->node, k); /* writes every CLOSE_CHUNK counters */
    if (k->inbatch == 0 && k->rc == 0) lower_ready(&l, ready = i + 1, false);
  }
  close_flush(k);
  /* only what was written is lowered: after a failed write, nothing more
   * is (close_flush writes nothing after the first failure) */
  lower_ready(&l, k->rc == 0 ? n : ready, true);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  pthread_cond_destroy(&l.cv);
  pthread_mutex_destroy(&l.mu);
  k->written = true; /* close_lower: the gaps of what was not set back */
  for (size_t i = 0; i < n; i++) close_lower(v[i], k, res[i]);
  return true;
}

int lc__counter_table_close(lc__table *t, lc__log *log, lc__cache *cache) {
  closing k = {.cache = cache, .log = log};
  int rc = 0;
  gather g = {.v = malloc(sizeof *g.v * (t->names.count + 1)), .k = &k};
  int *res = malloc(sizeof *res * (t->names.count + 1));
  if (log->db && g.v && res) {
    k.b = leveldb_writebatch_create();
    lc__names_each(&t->names, gather_one, &g);
    sort_by_name(g.v, g.n);
    if (!close_parallel(&k, g.v, res, g.n)) {
      for (size_t i = 0; i < g.n; i++) close_write(&g.v[i]->node, &k);
      close_flush(&k);
      k.written = k.rc == 0;
      lower_and_close(&k, g.v, g.n);
    }
  } else {
    if (log->db) { /* out of memory: one at a time, as before */
      k.b = leveldb_writebatch_create();
      lc__names_each(&t->names, close_write, &k);
      close_flush(&k);
      k.written = k.rc == 0;
    }
    lc__names_each(&t->names, gather_one, &g);
    if (g.v) lower_and_close(&k, g.v, g.n);
  }
  free(res);
  free(g.v);
  if (k.b) { /* the gaps of those memcached did not take back */
    close_flush(&k);
    rc = k.rc;
    leveldb_writebatch_destroy(k.b);
  }
  lc__names_clear(&t->names);
  pthread_mutex_destroy(&t->mu);
  return rc;
}
