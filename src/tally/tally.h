/*
 * tally/tally.h - tallies, write-behind counts: what the tally files
 * (tally.c, tally_flush.c, tally_list.c, tally_rec.c, tally_evict.c) share, the per-tally
 * state and the helpers that read and write it, and the table the handle
 * keeps (lc__tallies).  Calls counter/ (the eviction gate)
 * and below.
 *
 * Locking: the handle's lc__tallies.mu guards the name table and the
 * dirty queue (node, dnext, dirty, due_us, seq).  Each tally has an owner at a
 * time (lc__tally_acquire .. release: a flag under its mu, not a held
 * mutex, so a batch flush may own hundreds): only the owner loads, seeds,
 * flushes and writes the mirror (loaded .. losses), and it writes it under
 * the tally's mu too, so a change's fast path may read it under mu alone.
 * out_* and una_* are read and written under mu (short sections); seen_*
 * and bidx belong to the owner.
 * Nobody waits for a tally while owning another: a batch flush takes its
 * tallies with try-acquire only.
 */
#ifndef LC_TALLY_H
#define LC_TALLY_H

#include "counter/counter.h" /* the gate, the pass sizes */

typedef struct lc__tally lc__tally;
typedef struct lc__tallies {
  pthread_mutex_t mu;                 /* the name table and the dirty queue */
  lc__names names;                    /* the tallies, by name */
  lc__tally *dirty_head, *dirty_tail; /* scheduled, in schedule order */
  uint64_t seq;                       /* enqueues so far */
  _Atomic unsigned window_s;
  /* tally_evict.c: the evictor thread's candidates (scan .. evict), and
   * the names it evicted with nothing pending (64-bit hashes, open
   * addressing, 0 empty; under mu) */
  lc__tally *cand[LC__EVICT_PASS_MAX];
  size_t ncand;
  uint64_t *gone;
  size_t ngone, capgone;
} lc__tallies;
void lc__tally_table_init(lc__tallies *t);
void lc__tally_table_close(lc__tallies *t);
/* lc_close, before lc__tally_table_close: records each tally's carry (its
 * acknowledged changes not applied) and any lost amount not yet written,
 * in one write, so that the next handle can measure their loss (P14). */
void lc__tally_table_carry(lc_t *h);


#define LC__TALLY_ATTEMPTS 8

struct lc__tally {
  lc__named node;    /* first: the name table's entry (table mu) */
  lc__tally *dnext;  /* dirty queue (table mu) */
  atomic_bool dirty; /* queued (written under table mu; read
                                 without it by a change's fast path) */
  int64_t due_us;    /* monotonic (table mu) */
  uint64_t seq;      /* queue order (table mu) */
  pthread_mutex_t mu;
  pthread_cond_t cv; /* owned became false */
  bool owned;        /* mu */
  bool loaded, has_record;
  int64_t total; /* mirror of the record in the log */
  uint64_t ap, am, losses;
  uint64_t out_p, out_m; /* accepted, not seen applied (range check) */
  int64_t una_p, una_m;  /* acknowledged, not applied (loss check) */
  bool seen_p, seen_m;   /* owner: this handle has seen the sum in
                                 memcached (so a vanished key with nothing
                                 acknowledged since lost nothing) */
  size_t bidx;           /* position in a batch flush (owner) */
  bool stale;            /* owner: a write of its record failed, and may
                                 have reached the log after all */
  uint64_t lost_p, lost_m; /* mirror: the amounts lost, as recorded
                                 (P14), of increments and of decrements */
  int64_t lost_new_p, lost_new_m; /* mu: measured, not yet in a record
                                 (the next write carries them); less what
                                 memcached brought back since (a sum from
                                 before a loss, applied: lc__tally_side_read),
                                 so negative at times, but never below
                                 -lost_p (-lost_m) */
  int64_t snap_p, snap_m; /* owner: una_* just before the sums were read
                                 (acknowledged, so in memcached by then) */
  uint64_t carry_p, carry_m; /* owner: the record's carries (tally.h's
                                 lc__trec), checked at load */
  atomic_bool touched;   /* tally_evict.c: looked up since the last pass */
  unsigned char idle_passes; /* tally_evict.c (table mu) */
  bool candidate;        /* tally_evict.c: in cand (table mu) */
  size_t nlen;
  char name[];
};

typedef struct lc__trec {
  int64_t total;
  uint64_t ap, am, losses;
  uint64_t lost_p, lost_m; /* amounts lost (record version 2) */
  uint64_t carry_p, carry_m; /* acknowledged, not applied, when written:
                                memcached must hold at least ap + carry_p
                                (am + carry_m) unless it lost changes */
} lc__trec;

void lc__tally_acquire(lc__tally *t);
bool lc__tally_try_acquire(lc__tally *t); /* false: owned by another */
void lc__tally_release(lc__tally *t);
size_t lc__tally_mc_key(char *buf, const char *prefix, const lc__tally *t);
/* Finds or creates the state of a tally; checks handle and name.  Not a
 * use (the calls' own lookups are: idle eviction, tally_evict.c). */
int lc__tally_lookup(lc_t *h, const char *name, lc__tally **out);
void lc__tally_enqueue(lc_t *h, lc__tally *t, int64_t due);
/* owner: reads the record and the pending sums on first use. */
int lc__tally_load(lc_t *h, lc__tally *t);
int lc__tally_rec_read(lc_t *h, lc__tally *t);
/* owner, before the mirror is used for a write (the sums' baseline, a
 * seed, the record to write): if t is stale, its mirror from the log as
 * it is now (a failed write that reached the log after all counts as
 * applied).  Not after: a record made from the stale mirror would undo
 * the landed one. */
int lc__tally_refresh(lc_t *h, lc__tally *t);
/* owner: adds the record n (and the index move) to b. */
void lc__tally_rec_put(leveldb_writebatch_t *b, const lc__tally *t,
                       const lc__trec *n);
/* owner: the mirror after the write of n succeeded. */
void lc__tally_rec_set(lc__tally *t, const lc__trec *n);
/* owner: the record to write with total, ap, am, losses: the lost amounts
 * (recorded plus measured) and the carries from una_*. */
lc__trec lc__tally_rec_make(lc__tally *t, int64_t total, uint64_t ap,
                            uint64_t am, uint64_t losses);
/* owner: snap_p, snap_m = una_p, una_m (before the sums are read). */
void lc__tally_snap(lc__tally *t);
/* tally_flush.c, owner: adds t's record with its current carries and
 * measured losses to *b (made on first use) if they differ from the
 * log's; true if so, *out the record (lc__tally_rec_set after the write). */
bool lc__tally_carry_put(lc__tally *t, leveldb_writebatch_t **b,
                         lc__trec *out);
void lc__tally_free(lc__tally *t);

/*
 * tally_evict.c: idle tallies leave memory (counter/evict.c's passes call
 * these through h->ev's hooks, installed by lc_open).  scan: with the
 * gate open, counts idle passes and picks up to LC__EVICT_PASS_MAX
 * candidates, returns how many; evict: with the gate closed (no call
 * holds a tally), drops those still idle and flushed, returns how many.
 * forget: at load, true if t's name left memory with nothing pending
 * (its sums were then seen: a sum missing now lost nothing); forgets it.
 * gone_free: at lc_close.
 */
size_t lc__tally_evict_scan(lc_t *h, bool count);
size_t lc__tally_evict_run(lc_t *h);
bool lc__tally_evict_forget(lc_t *h, const lc__tally *t);
void lc__tally_gone_free(lc__tallies *tb);

/*
 * owner: one side's sum for a flush.  pre: 0 (prev holds the value
 * already read), LC__MISS (read: missing) or -1 (read it now).  A vanished
 * key is re-seeded at the applied sum, a sum below it is set back up to it
 * (the baseline never goes down); *applied_new is the baseline to record,
 * *d what to apply, *lost set when pending changes were lost.
 */
int lc__tally_side_read(lc_t *h, lc__tally *t, bool plus, int pre,
                        uint64_t prev, uint64_t *applied_new, uint64_t *d,
                        bool *lost);

#endif
