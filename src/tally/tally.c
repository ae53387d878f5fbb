/*
 * tally.c - tallies: write-behind signed counts on memcached and the log.
 *
 * memcached holds, per tally, two sums that only grow: "lt+:NAME" (positive
 * deltas) and "lt-:NAME" (magnitudes of negative deltas).  The log holds
 * one record per tally, 't' NAME -> {version, total, applied+, applied-,
 * losses, lost+, lost-, carry+, carry-}, and an index entry 'T' be64(total ^ 2^63) NAME -> "" (negative
 * totals sort first).  A flush reads both sums and applies
 *   (P - applied+) - (M - applied-)
 * writing the record (with the new applied sums) and moving the index entry
 * in ONE LevelDB batch.  So a flusher that dies anywhere leaves the old or
 * the new record, and the next flush applies exactly the rest.
 *
 * Invariants, per tally (struct lc__tally; locking in tally.h):
 *  - load, seeds and flushes of one tally are serialized (its owner); the
 *    mirror (total, ap, am, losses) equals the record in the log (this
 *    handle owns the log, nothing else writes it).
 *  - a lost memcached sum is re-seeded with add (never set) at the applied
 *    value, so new changes count exactly; a sum below its applied value is
 *    a loss: nothing negative is applied, and the sum is set back up to
 *    the applied value (cas: only if it still holds what was read).  So
 *    the applied sums never go down, each is a value memcached held, and
 *    (the total moving by exactly what they move) no sum memcached brings
 *    back, however old, can make a flush apply a change twice.
 *  - out_p / out_m: what this handle accepted (reserved before its incr)
 *    and has not seen applied; the range check bounds total + out_p and
 *    total - out_m, so no flush can take the total out of int64.  A failed
 *    incr keeps its reservation (it may have been applied).
 *  - una_p / una_m: acknowledged increments not yet applied; a vanished
 *    key while una > 0 is a loss.
 *  - losses are measured (P14): what was acknowledged by a read (snap_*,
 *    taken before it) is in memcached by then, so a sum below applied +
 *    snap lost the difference, and a vanished or lowered sum lost all of
 *    una; the amounts go to lost_new_* and, with the next record write,
 *    to lost+ / lost-.  Each record also carries una (carry+, carry-:
 *    acknowledged, not applied), written too when memcached fails a flush
 *    and at lc_close, so the next handle measures a loss of them at load
 *    (a sum below applied + carry).  A sum read above applied + out
 *    (more than this handle accepted) was brought back from before a loss
 *    (an older memory file): it is applied, and the amount lost goes down
 *    by the excess (never below 0), so lost+ / lost- stay what was lost.
 * Scheduling: a change that finds its tally not queued adds "lt@:NAME"
 * (the window marker, expiring with the window) and queues the tally
 * (table mu) with due = now + window + 1.25 s, by which memcached has
 * expired the marker; a change that finds it queued sends nothing more, so
 * a hot tally costs one round trip per change and one add per window.  The
 * tally is queued whatever the add answered (an error is counted), so an
 * increment that completed after a flush took the tally off the queue is
 * always queued again, and one that completed before is read by that
 * flush.  Flushing is in tally_flush.c, listing in tally_list.c, the
 * record codec in tally_rec.c.
 */
#include "tally/tally.h"
#include "handle.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ATTEMPTS LC__TALLY_ATTEMPTS
#define MARGIN_US 1250000

void lc__tally_table_init(lc__tallies *t) {
  memset(t, 0, sizeof *t);
  lc__names_init(&t->names, offsetof(lc__tally, name));
  pthread_mutex_init(&t->mu, NULL);
  atomic_store(&t->window_s, 1);
}

void lc__tally_free(lc__tally *x) {
  pthread_mutex_destroy(&x->mu);
  pthread_cond_destroy(&x->cv);
  free(x);
}

static void tally_free(lc__named *e, void *arg) {
  (void)arg;
  lc__tally_free((lc__tally *)e);
}

void lc__tally_table_close(lc__tallies *t) {
  lc__names_each(&t->names, tally_free, NULL);
  lc__names_clear(&t->names);
  lc__tally_gone_free(t);
  pthread_mutex_destroy(&t->mu);
}

/* ---- keys and records ---- */

size_t lc__tally_mc_key(char *buf, const char *prefix, const lc__tally *t) {
  size_t p = strlen(prefix);
  memcpy(buf, prefix, p);
  memcpy(buf + p, t->name, t->nlen);
  return p + t->nlen;
}

/* owner: writes the record (and moves the index entry) in one batch.  n
 * was made from a mirror read back after any failed write (the caller's
 * lc__tally_refresh before it used the mirror): a refresh here, after n
 * was made, would write the stale record over one that landed. */
static int rec_write(lc_t *h, lc__tally *t, const lc__trec *n) {
  int rc;
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  lc__tally_rec_put(b, t, n);
  bool sync = h->opt.durability == LC_DURABILITY_SYNC;
  rc = lc__log_write(&h->log, b, sync);
  leveldb_writebatch_destroy(b);
  LC__STAT(h, log_writes, 1);
  if (sync) LC__STAT(h, log_syncs, 1);
  if (!rc) lc__tally_rec_set(t, n);
  t->stale = rc != 0;
  return rc;
}

/* ---- the table ---- */

static int find_quiet(lc_t *h, const char *name, bool create,
                      lc__tally **out);

/* Finds the state of a tally; creates it when create, else *out may be
 * NULL.  Checks handle and name. */
static int find(lc_t *h, const char *name, bool create, lc__tally **out) {
  int rc = find_quiet(h, name, create, out);
  /* a use: idle eviction (tally_evict.c) waits for passes without one;
   * flushes and sweeps look tallies up with find_quiet */
  if (!rc && *out)
    atomic_store_explicit(&(*out)->touched, true, memory_order_relaxed);
  return rc;
}

static int find_quiet(lc_t *h, const char *name, bool create,
                      lc__tally **out) {
  if (h == NULL) return lc__fail(LC_EINVAL, "NULL handle");
  int rc = LC__LOCAL_ONLY(h);
  if (rc) return rc;
  rc = lc_check_name(name);
  if (rc)
    return lc__fail(
        rc, rc == LC_EINVAL ? "tally name is NULL" : "invalid tally name");
  size_t n = strlen(name);
  lc__tallies *tb = &h->tallies;
  pthread_mutex_lock(&tb->mu);
  lc__tally *t = (lc__tally *)lc__names_find(&tb->names, name, n);
  if (t == NULL && create && tb->names.count >= tb->names.max) {
    pthread_mutex_unlock(&tb->mu);
    return lc__fail(LC_ELIMIT,
                    "%s would be tally %llu of this handle "
                    "(max_tallies %llu)",
                    name, (unsigned long long)tb->names.count + 1,
                    (unsigned long long)tb->names.max);
  }
  if (t == NULL && create) {
    t = calloc(1, sizeof *t + n + 1);
    if (t) {
      memcpy(t->name, name, n + 1);
      t->nlen = n;
      t->node.nlen = n;
    }
    if (t == NULL || !lc__names_add(&tb->names, &t->node)) {
      pthread_mutex_unlock(&tb->mu);
      free(t);
      return lc__fail(LC_ENOMEM, "cannot allocate tally state");
    }
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
  }
  pthread_mutex_unlock(&tb->mu);
  *out = t;
  return 0;
}

int lc__tally_lookup(lc_t *h, const char *name, lc__tally **out) {
  return find_quiet(h, name, true, out);
}

void lc__tally_enqueue(lc_t *h, lc__tally *t, int64_t due) {
  lc__tallies *tb = &h->tallies;
  pthread_mutex_lock(&tb->mu);
  if (!atomic_load(&t->dirty)) {
    atomic_store(&t->dirty, true);
    t->due_us = due;
    t->seq = ++tb->seq;
    t->dnext = NULL;
    if (tb->dirty_tail)
      tb->dirty_tail->dnext = t;
    else
      tb->dirty_head = t;
    tb->dirty_tail = t;
  }
  pthread_mutex_unlock(&tb->mu);
}

void lc__tally_acquire(lc__tally *t) {
  pthread_mutex_lock(&t->mu);
  while (t->owned) pthread_cond_wait(&t->cv, &t->mu);
  t->owned = true;
  pthread_mutex_unlock(&t->mu);
}

bool lc__tally_try_acquire(lc__tally *t) {
  pthread_mutex_lock(&t->mu);
  bool ok = !t->owned;
  t->owned = true;
  pthread_mutex_unlock(&t->mu);
  return ok;
}

void lc__tally_release(lc__tally *t) {
  pthread_mutex_lock(&t->mu);
  t->owned = false;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

/* ---- per tally, owned ---- */

/* One side's sum in memcached: 0 and *v, or LC__MISS. */
static int side_get(lc_t *h, lc__tally *t, bool plus, uint64_t *v) {
  char key[LC__MC_KEY_MAX + 2];
  size_t klen =
      lc__tally_mc_key(key, plus ? LC__TALLY_MC_PLUS : LC__TALLY_MC_MINUS, t);
  return lc__cache_get(&h->cache, key, klen, v);
}

int lc__tally_load(lc_t *h, lc__tally *t) {
  if (t->loaded) return 0;
  int rc = lc__tally_rec_read(h, t);
  uint64_t p = 0, m = 0;
  int rp = rc ? rc : side_get(h, t, true, &p);
  if (rp < 0) return rp;
  int rm = side_get(h, t, false, &m);
  if (rm < 0) return rm;
  pthread_mutex_lock(&t->mu);
  t->out_p = rp == 0 && p > t->ap ? p - t->ap : 0;
  t->out_m = rm == 0 && m > t->am ? m - t->am : 0;
  t->una_p = (int64_t)t->out_p;
  t->una_m = (int64_t)t->out_m;
  /* The record's carries were acknowledged, and in memcached, when it was
   * written: a sum below applied + carry lost the difference (measured
   * across a restart; the next record write records it). */
  uint64_t lp = t->carry_p > t->out_p ? t->carry_p - t->out_p : 0;
  uint64_t lm = t->carry_m > t->out_m ? t->carry_m - t->out_m : 0;
  t->lost_new_p += (int64_t)lp;
  t->lost_new_m += (int64_t)lm;
  t->loaded = true;
  pthread_mutex_unlock(&t->mu);
  if (lp + lm) LC__STAT(h, tally_lost_amount, lp + lm);
  t->seen_p = rp == 0;
  t->seen_m = rm == 0;
  /* evicted by this handle with nothing pending (tally_evict.c): its sums
   * were seen, and a missing one lost nothing since */
  if (lc__tally_evict_forget(h, t)) t->seen_p = t->seen_m = true;
  return 0;
}

int lc__tally_side_read(lc_t *h, lc__tally *t, bool plus, int pre,
                        uint64_t prev, uint64_t *applied_new, uint64_t *d,
                        bool *lost) {
  uint64_t applied = plus ? t->ap : t->am, v = 0;
  int64_t *una = plus ? &t->una_p : &t->una_m;
  int64_t *snap = plus ? &t->snap_p : &t->snap_m;
  uint64_t *out = plus ? &t->out_p : &t->out_m;
  char key[LC__MC_KEY_MAX + 2];
  size_t klen =
      lc__tally_mc_key(key, plus ? LC__TALLY_MC_PLUS : LC__TALLY_MC_MINUS, t);
  for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    int rc = pre;
    bool fresh = true; /* v as memcached holds it (not seeded, not set) */
    if (pre < 0 || attempt > 0) {
      pthread_mutex_lock(&t->mu); /* before the read: all landed by then */
      *snap = *una; /* this side only: the other's value may be older */
      pthread_mutex_unlock(&t->mu);
      rc = lc__cache_get(&h->cache, key, klen, &v);
    } else {
      v = prev;
    }
    if (rc < 0) return rc;
    if (rc == LC__MISS) {
      fresh = false;
      /* Lost: changes this handle acknowledged, or, when it never saw
       * the key, whatever an earlier process left pending (unknowable:
       * counted as a loss once anything was ever applied). */
      bool *seen = plus ? &t->seen_p : &t->seen_m;
      if (!*seen && applied > 0) *lost = true;
      pthread_mutex_lock(&t->mu);
      uint64_t amount = 0;
      if (*una > 0) { /* acknowledged changes vanished with the key */
        *lost = true;
        amount = (uint64_t)*una;
        *(plus ? &t->lost_new_p : &t->lost_new_m) += (int64_t)amount;
        *out = *out > (uint64_t)*una ? *out - (uint64_t)*una : 0;
        *una = 0;
      }
      pthread_mutex_unlock(&t->mu);
      if (amount) LC__STAT(h, tally_lost_amount, amount);
      rc = lc__cache_add(&h->cache, key, klen, applied);
      if (rc < 0) return rc;
      if (rc == LC__EXISTS) continue;
      LC__STAT(h, tally_seeds, 1);
      v = applied;
    }
    if (plus)
      t->seen_p = true;
    else
      t->seen_m = true;
    if (v < applied) {
      /* Went backwards (a warm restart from an older memory file, a stray
       * set): what was pending is lost.  The baseline stays: the sum is
       * set back up to it, if it still holds v (cas), so that changes
       * count from there.  Lowering the baseline to v instead would let
       * a later rewind to a sum read before this one (above v, below
       * applied) apply again what was applied already. */
      *lost = true;
      fresh = false;
      pthread_mutex_lock(&t->mu);
      uint64_t amount = (uint64_t)(*una > 0 ? *una : 0);
      *(plus ? &t->lost_new_p : &t->lost_new_m) += (int64_t)amount;
      *out = *out > amount ? *out - amount : 0;
      *una = 0;
      pthread_mutex_unlock(&t->mu);
      if (amount) LC__STAT(h, tally_lost_amount, amount);
      rc = lc__cache_lower(&h->cache, key, klen, v, applied);
      if (rc < 0) return rc;
      if (rc != 0) continue; /* changed or vanished meanwhile: again */
      LC__STAT(h, tally_seeds, 1);
      v = applied;
    }
    if (fresh) {
      /* Rewound to a sum between the applied one and what this handle had
       * acknowledged by the read: the difference is lost (and no longer
       * pending).  What is there is applied (it is what memcached holds,
       * the baseline only grows). */
      pthread_mutex_lock(&t->mu);
      uint64_t amount = 0;
      if (*snap > 0 && v - applied < (uint64_t)*snap) {
        amount = (uint64_t)*snap - (v - applied);
        *lost = true;
        *(plus ? &t->lost_new_p : &t->lost_new_m) += (int64_t)amount;
        *una -= (int64_t)amount;
        *out = *out > amount ? *out - amount : 0;
      }
      *snap = 0;
      /* Above everything this handle accepted and has not seen applied
       * (out: each change is reserved there before its incr, and a loss
       * takes what it measures off it): a sum from before a loss, brought
       * back (a warm restart from an older memory file, a rewind), holding
       * changes measured as lost.  What is there is applied, so they were
       * not lost: the amount lost goes down by the excess (never below
       * 0), and the excess joins out and una as if this handle had
       * accepted it, so that the flush applying it takes it off them
       * exactly, and a later read neither gives it back again nor, if the
       * sum then vanishes, misses its loss. */
      if (v - applied > *out) {
        uint64_t back = v - applied - *out;
        int64_t *ln = plus ? &t->lost_new_p : &t->lost_new_m;
        uint64_t rec = plus ? t->lost_p : t->lost_m;
        __int128 left = (__int128)rec + *ln; /* >= 0 */
        *ln -= (int64_t)((__int128)back < left ? (__int128)back : left);
        *out += back;
        __int128 u = (__int128)*una + back;
        *una = u > INT64_MAX ? INT64_MAX : (int64_t)u;
      }
      pthread_mutex_unlock(&t->mu);
      if (amount) LC__STAT(h, tally_lost_amount, amount);
    }
    *applied_new = v;
    *d = v - applied;
    return 0;
  }
  return lc__fail(LC_EAGAIN, "memcached kept losing or moving %.*s", (int)klen,
                  key);
}

/* ---- the public calls ---- */

int lc_tally_set_window(lc_t *h, unsigned seconds) {
  lc__detail_clear();
  if (h == NULL || seconds < 1 || seconds > 2592000)
    return lc__fail(LC_EINVAL, "window %u s: use 1 .. 2592000", seconds);
  atomic_store(&h->tallies.window_s, seconds);
  return 0;
}

/* Sends the first change of a window to the marker and the queue. */
static void schedule(lc_t *h, lc__tally *t) {
  lc__tallies *tb = &h->tallies;
  /* seq_cst: a flush clears dirty before it reads the sums, so seeing it
   * set after our increment means that flush reads our increment */
  if (atomic_load(&t->dirty)) return;
  unsigned w = atomic_load(&tb->window_s);
  char key[LC__MC_KEY_MAX + 2];
  int64_t due = lc__clock_mono_us() + (int64_t)w * 1000000 + MARGIN_US;
  size_t klen = lc__tally_mc_key(key, LC__TALLY_MC_MARK, t);
  int rc =
      lc__cache_add_text(&h->cache, key, klen, key, klen, "1", 1, (time_t)w);
  if (rc == 0)
    LC__STAT(h, tally_schedules, 1);
  else if (rc < 0)
    LC__STAT(h, tally_schedule_failures, 1);
  /* LC__EXISTS: a concurrent first change (or a late marker): queueing
   * twice is harmless, missing the queue is not. */
  lc__tally_enqueue(h, t, due);
}

/* mu held, mirror loaded: accepts delta (reserving it in out_*) if the
 * total plus everything pending plus delta stays in int64, and the
 * memcached sum cannot wrap. */
static int reserve(lc__tally *t, bool plus, uint64_t d, int64_t delta) {
  __int128 bound = plus ? (__int128)t->total + t->out_p + d
                        : (__int128)t->total - t->out_m - d;
  __int128 sum =
      plus ? (__int128)t->ap + t->out_p + d : (__int128)t->am + t->out_m + d;
  if (bound > INT64_MAX || bound < INT64_MIN || sum > UINT64_MAX)
    return lc__fail(LC_ETALLYRANGE,
                    "tally %s: total %lld, pending up to "
                    "%s%llu, delta %lld",
                    t->name, (long long)t->total, plus ? "+" : "-",
                    (unsigned long long)(plus ? t->out_p : t->out_m),
                    (long long)delta);
  if (plus)
    t->out_p += d;
  else
    t->out_m += d;
  return 0;
}

/* The change; *tp and *sum (the side's memcached sum after it) for
 * lc_tally_add_total. */
static int tally_add(lc_t *h, const char *name, int64_t delta, lc__tally **tp,
                     uint64_t *sum) {
  if (delta == 0) /* before any state is made for name */
    return lc__fail(LC_EDELTA, "delta 0 for tally %s", name ? name : "(null)");
  lc__tally *t;
  int rc = lc__follow_primary_only(h);
  if (!rc) rc = find(h, name, true, &t);
  if (rc) return rc;
  if ((rc = lc__log_ok(&h->log)) != 0) return rc; /* nothing acknowledged */
  *tp = t;
  bool plus = delta > 0;
  uint64_t d = plus ? (uint64_t)delta : (uint64_t)0 - (uint64_t)delta;

  /* fast path: a loaded tally needs only its mu for the range check */
  pthread_mutex_lock(&t->mu);
  bool ready = t->loaded && t->has_record;
  if (ready) rc = reserve(t, plus, d, delta);
  pthread_mutex_unlock(&t->mu);
  if (!ready) {
    lc__tally_acquire(t);
    rc = lc__tally_load(h, t);
    if (!rc) rc = lc__tally_refresh(h, t); /* a failed write that landed */
    if (!rc && !t->has_record) { /* first change ever: make it findable */
      lc__trec z = lc__tally_rec_make(t, 0, 0, 0, 0);
      rc = rec_write(h, t, &z);
    }
    if (!rc) {
      pthread_mutex_lock(&t->mu);
      rc = reserve(t, plus, d, delta);
      pthread_mutex_unlock(&t->mu);
    }
    lc__tally_release(t);
  }
  if (rc) return rc;

  char key[LC__MC_KEY_MAX + 2];
  size_t klen =
      lc__tally_mc_key(key, plus ? LC__TALLY_MC_PLUS : LC__TALLY_MC_MINUS, t);
  for (int attempt = 0;; attempt++) {
    if (attempt == MAX_ATTEMPTS)
      return lc__fail(LC_EAGAIN, "memcached kept losing %.*s", (int)klen, key);
    uint64_t v;
    rc = lc__cache_incr(&h->cache, key, klen, d, &v);
    if (rc < 0) return rc; /* the reservation stays: it may have counted */
    if (rc == 0) {
      *sum = v;
      break;
    }
    /* vanished: seed at the applied sum (counting a loss), then again */
    lc__tally_acquire(t);
    uint64_t applied, dd;
    bool lost = false;
    /* the applied sums as the log holds them (a failed flush that landed
     * applied more than the mirror says): the seed, the loss and the
     * record below start from there */
    rc = lc__tally_refresh(h, t);
    if (!rc) rc = lc__tally_side_read(h, t, plus, -1, 0, &applied, &dd, &lost);
    /* the other sum vanished with it, most likely: seed it now, so that
     * one loss is counted once */
    if (!rc) rc = lc__tally_side_read(h, t, !plus, -1, 0, &applied, &dd, &lost);
    if (!rc && lost) {
      LC__STAT(h, tally_losses, 1);
      lc__trec n = lc__tally_rec_make(t, t->total, t->ap, t->am,
                                      t->losses + 1);
      rc = rec_write(h, t, &n);
    }
    lc__tally_release(t);
    if (rc) return rc;
  }
  pthread_mutex_lock(&t->mu);
  if (plus)
    t->una_p += (int64_t)d;
  else
    t->una_m += (int64_t)d;
  pthread_mutex_unlock(&t->mu);
  schedule(h, t);
  return 0;
}

int lc_tally_add(lc_t *h, const char *name, int64_t delta) {
  lc__detail_clear();
  if (h && LC__ADMIN_WAY(h)) {
    int64_t after;
    return lc__admin_op(h, "tally-add", name, &delta, &after, 1);
  }
  lc__tally *t;
  uint64_t sum;
  if (h) LC__GATE_IN(h); /* t stays until the gate is left */
  int rc = tally_add(h, name, delta, &t, &sum);
  if (h) LC__GATE_OUT(h);
  if (rc && h) LC__STAT(h, errors, 1);
  if (!rc) LC__STAT(h, tally_adds, 1);
  return rc;
}

int lc_tally_add_total(lc_t *h, const char *name, int64_t delta,
                       int64_t *after) {
  lc__detail_clear();
  if (h && LC__ADMIN_WAY(h)) return lc__admin_op(h, "tally-add", name, &delta, after, 1);
  lc__tally *t;
  uint64_t sum, other = 0;
  if (h) LC__GATE_IN(h); /* t stays until the gate is left */
  int rc = tally_add(h, name, delta, &t, &sum);
  if (rc) {
    if (h) LC__GATE_OUT(h);
    if (h) LC__STAT(h, errors, 1);
    return rc;
  }
  LC__STAT(h, tally_adds, 1);
  bool plus = delta > 0;
  /* the change is made: from here on nothing may fail the call */
  int ro = side_get(h, t, !plus, &other);
  lc__detail_clear();
  pthread_mutex_lock(&t->mu);
  /* total - ap + am is the same before and after any flush (a flush adds
   * to total exactly what it adds to ap and takes what it adds to am), so
   * the mirror may be newer than the sums read */
  uint64_t p = plus ? sum : other, m = plus ? other : sum;
  if (ro != 0) { /* not readable: count nothing pending on that side */
    if (plus)
      m = t->am;
    else
      p = t->ap;
  }
  __int128 v =
      (__int128)t->total + ((__int128)p - t->ap) - ((__int128)m - t->am);
  pthread_mutex_unlock(&t->mu);
  LC__GATE_OUT(h);
  *after = v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v;
  return 0;
}

/* The durable total and what memcached holds beyond what t has applied:
 * the sums are read after t's record, and only grow. */
static int report(lc_t *h, lc__tally *t, int64_t *total, int64_t *pending,
                  uint64_t *losses) {
  uint64_t p = 0, m = 0;
  int rp = side_get(h, t, true, &p);
  int rm = rp < 0 ? rp : side_get(h, t, false, &m);
  if (rp < 0 || rm < 0) return rp < 0 ? rp : rm;
  uint64_t dp = rp == 0 && p > t->ap ? p - t->ap : 0;
  uint64_t dm = rm == 0 && m > t->am ? m - t->am : 0;
  __int128 pend = (__int128)dp - dm;
  if (total) *total = t->total;
  if (pending)
    *pending = pend > INT64_MAX   ? INT64_MAX
               : pend < INT64_MIN ? INT64_MIN
                                  : (int64_t)pend;
  if (losses) *losses = t->losses;
  return 0;
}

/* A tally's state for one read of a name this handle does not keep (no
 * state stays, so reading many names costs no memory); NULL without
 * memory.  passing_free ends it. */
static lc__tally *passing(const char *name) {
  size_t n = strlen(name);
  lc__tally *t = calloc(1, sizeof *t + n + 1);
  if (t == NULL) return NULL;
  pthread_mutex_init(&t->mu, NULL);
  memcpy(t->name, name, n + 1);
  t->nlen = n;
  return t;
}

static void passing_free(lc__tally *t) {
  pthread_mutex_destroy(&t->mu);
  free(t);
}

static int tally_lost(lc_t *h, const char *name, uint64_t *plus,
                      uint64_t *minus);
static int tally_get(lc_t *h, const char *name, int64_t *total,
                     int64_t *pending, uint64_t *losses);

int lc_tally_lost(lc_t *h, const char *name, uint64_t *plus,
                  uint64_t *minus) {
  lc__detail_clear();
  if (h && LC__ADMIN_WAY(h)) {
    int64_t v[2] = {0, 0};
    int rc = lc__admin_op(h, "tally-lost", name, NULL, v, 2);
    if (!rc && plus) *plus = (uint64_t)v[0];
    if (!rc && minus) *minus = (uint64_t)v[1];
    return rc;
  }
  if (h) LC__GATE_IN(h); /* t stays until the gate is left */
  int rc = tally_lost(h, name, plus, minus);
  if (h) LC__GATE_OUT(h);
  return rc;
}

static int tally_lost(lc_t *h, const char *name, uint64_t *plus,
                      uint64_t *minus) {
  lc__tally *t;
  int rc = find(h, name, false, &t);
  if (rc) return rc;
  if (t == NULL) { /* not used by this handle: the record alone */
    if ((t = passing(name)) == NULL)
      return lc__fail(LC_ENOMEM, "cannot allocate tally state");
    rc = lc__tally_rec_read(h, t);
    if (!rc && plus) *plus = t->lost_p;
    if (!rc && minus) *minus = t->lost_m;
    passing_free(t);
    return rc;
  }
  lc__tally_acquire(t);
  rc = lc__tally_load(h, t);
  pthread_mutex_lock(&t->mu);
  if (!rc && plus) *plus = t->lost_p + (uint64_t)t->lost_new_p;
  if (!rc && minus) *minus = t->lost_m + (uint64_t)t->lost_new_m;
  pthread_mutex_unlock(&t->mu);
  lc__tally_release(t);
  return rc;
}

int lc_tally_get(lc_t *h, const char *name, int64_t *total, int64_t *pending,
                 uint64_t *losses) {
  lc__detail_clear();
  if (h && LC__ADMIN_WAY(h)) {
    int64_t v[3];
    int rc = lc__admin_op(h, "tally-get", name, NULL, v, 3);
    if (rc) return rc;
    if (total) *total = v[0];
    if (pending) *pending = v[1];
    if (losses) *losses = (uint64_t)v[2];
    return 0;
  }
  if (h) LC__GATE_IN(h); /* t stays until the gate is left */
  int rc = tally_get(h, name, total, pending, losses);
  if (h) LC__GATE_OUT(h);
  return rc;
}

static int tally_get(lc_t *h, const char *name, int64_t *total,
                     int64_t *pending, uint64_t *losses) {
  lc__tally *t;
  int rc = find(h, name, false, &t);
  if (rc) return rc;
  if (t == NULL) {
    /* Not used by this handle: read it without keeping any state, so that
     * reading many names (a daemon's "get tally:...") costs no memory. */
    if ((t = passing(name)) == NULL)
      return lc__fail(LC_ENOMEM, "cannot allocate tally state");
    rc = lc__tally_rec_read(h, t);
    if (!rc) rc = report(h, t, total, pending, losses);
    passing_free(t);
    return rc;
  }
  lc__tally_acquire(t);
  rc = lc__tally_load(h, t);
  if (!rc) rc = report(h, t, total, pending, losses);
  lc__tally_release(t);
  return rc;
}
