/*
 * counter/counter.h - the counters, in layers within the folder (each
 * file calls only those below it; internal.h has the map): first.c,
 * records.c, next.c, counter_ops.c, prefetch.c and counter.c above, the
 * leaves segment.c, seg_fast.c, ledger.c and claim.c below, evict.c
 * beside them.  Calls repl/ and below.
 *
 * Locking: mu (the mutex of the counter's lock stripe, shared with other
 * counters: lc__counter_lock; never two counters' at once) guards the
 * request queue, the in-flight count and the
 * accepted blocks, floor and reserved, the exclusive flag (busy) and every
 * segment field.  An exclusive operation (restore, advance, a raise, a
 * segment fetch: lc__counter_acquire; a batched first use:
 * lc__counter_try_first, which never waits) runs with nothing in flight and
 * nothing sent meanwhile, and may then use floor, reserved and loaded
 * without mu.
 */
#ifndef LC_COUNTER_H
#define LC_COUNTER_H

#include "repl/repl.h"

/* ---- the folder's face to core/ and tally/: the table, closing,
 * eviction, the prefetcher, the test seams ---- */
typedef struct lc__counter lc__counter;
typedef struct lc__table {
  pthread_mutex_t mu;
  lc__names names; /* the counters, by name */
} lc__table;
void lc__counter_table_init(lc__table *t);
/* evict.c, with no call inside: closes each of v[0..n) that nothing uses
 * (untouched since the scan, nothing under way) as lc__counter_table_close does,
 * takes it out of the table and frees it; returns how many, or a negative
 * code (the write failed: none was). */
int lc__counters_evict(lc_t *h, lc__counter **v, size_t n);
/* Writes each counter's exact reservation (one synced batch), with the
 * records of its prefetched segments cut to what went out, lowers
 * memcached to match where it still holds what this handle left there,
 * and frees. */
int lc__counter_table_close(lc__table *t, lc__log *log, lc__cache *cache);
/* prefetch.c: the prefetcher thread of a handle with prefetch on. */
int lc__prefetcher_start(lc_t *h);
void lc__prefetcher_stop(lc_t *h);
/* Test seam, only in the library that tests and chaos link (built with
 * LC_TEST_SEAMS): called between a block's increment and its log write
 * (after the leader role was handed on); NULL unless set. */
#ifdef LC_TEST_SEAMS
extern void (*lc__test_before_commit)(const char *name);
#define LC__SEAM_BEFORE_COMMIT(name) \
  (lc__test_before_commit ? lc__test_before_commit(name) : (void)0)
#else
#define LC__SEAM_BEFORE_COMMIT(name) ((void)0)
#endif
/* Test seam (evict.c): called between two chunks of an eviction walk, no
 * lock held, with the candidates found so far; NULL unless set. */
#ifdef LC_TEST_SEAMS
extern void (*lc__test_walk_chunk)(lc_t *h, size_t candidates);
#define LC__SEAM_WALK_CHUNK(h, n) \
  (lc__test_walk_chunk ? lc__test_walk_chunk(h, n) : (void)0)
#else
#define LC__SEAM_WALK_CHUNK(h, n) ((void)0)
#endif
/* evict.c: the gate every call that uses a counter's state passes while
 * eviction is on (h->ev.on): lc__evict_gate_enter waits while a pass runs, and
 * a pass runs only once no call is inside.  Nested calls of one thread
 * on one handle pass once. */
/* A pass looks at a name this many times in a row before it may go, and
 * takes at most PASS_MAX counters (and as many tallies, tally_evict.c). */
#define LC__EVICT_IDLE_PASSES 5
#define LC__EVICT_PASS_MAX 512
void lc__evict_gate_enter(lc_t *h);
void lc__evict_gate_leave(lc_t *h);
int lc__evict_start(lc_t *h);
void lc__evict_stop(lc_t *h);
#define LC__GATE_IN(h) ((h)->ev.on ? lc__evict_gate_enter(h) : (void)0)
#define LC__GATE_OUT(h) ((h)->ev.on ? lc__evict_gate_leave(h) : (void)0)
/* claim.c: h->claim from h->log_id, the host name and the pid. */
void lc__claim_text(lc_t *h);

/* ---- inside the folder ---- */
/* ledger.c: the last value of the counter's ledger entries (0 if none). */
int lc__ledger_max(lc__log *l, const char *name, size_t nlen, int64_t *out);

typedef struct lc__req lc__req;

/* A range of values taken from memcached for this handle's memory:
 * first..lc__seg_end (size values: a segment is one block, at most
 * LC_BLOCK_MAX), of which the first `used` went out (counted, not a next
 * value: the end may be LC_VALUE_MAX).  time_us: when its record was
 * written (kept when the record is rewritten).  24 bytes: the sizes in 32
 * bits, so that a counter holding one segment keeps its side structure
 * (lc__segs) in a 48-byte malloc chunk. */
typedef struct lc__seg {
  int64_t first, time_us;
  uint32_t size, used;
} lc__seg;
_Static_assert(LC_BLOCK_MAX <= UINT32_MAX, "lc__seg.size holds a block");
static inline int64_t lc__seg_end(const lc__seg *s) {
  return s->first + ((int64_t)s->size - 1); /* size >= 1; no overflow at
                                               LC_VALUE_MAX */
}

#define LC__INFLIGHT 2 /* increments of one counter in flight at once */
#define LC__ACCEPTED \
  8 /* accepted ranges kept for the overlap check
                               (with two in flight, rarely more than three
                               are disjoint; beyond 8, lost_below) */

/* A block handed out: first..last. */
typedef struct lc__span {
  int64_t first, last;
} lc__span;

/* A gap known to this handle, waiting to ride along with the counter's
 * next log write (ledger.c). */
typedef struct lc__gap {
  int64_t first, last;
  int cause; /* LC_GAP_* */
} lc__gap;
#define LC__GAPS \
  8 /* pending gaps kept (beyond: the oldest is
                               dropped, and shows as unexplained) */

#define LC__SEGS 3 /* held at once: current, prefetched, one more */
#define LC__SEG_CLOSES \
  8 /* finished segments whose records wait to be
                               rewritten with what went out */

/* The parts of a counter's state that most counters never fill, kept
 * apart so that a counter in memory costs little; their counts stay in
 * the counter (naccepted, nahead, ngaps, nburned, nclose), under its
 * mu. */
typedef struct lc__rare {
  lc__span accepted[LC__ACCEPTED]; /* counter.c: the overlap check */
  lc__span ahead[LC__ACCEPTED];    /* ledger.c: taken above gap_low + 1 */
  lc__gap gaps[LC__GAPS];          /* ledger.c: pending gaps */
  lc__span burned[LC__GAPS];       /* ledger.c: burned by an earlier run */
  lc__seg closes[LC__SEG_CLOSES];  /* segment.c: finished segments */
} lc__rare;

/* segment.c: a counter's segment state, kept apart (c->segs) from the
 * first fetch on, and freed when the counter holds no segment and none
 * is being fetched (lc__counter_unlock), so that a counter that never
 * takes a segment, or holds none any more, does not carry it.  Under the
 * counter's mu.  With one segment, 40 bytes: a 48-byte malloc chunk. */
typedef struct lc__segs {
  /* auto sizing, at the last fetch: the monotonic clock in ms and the low
   * 32 bits of handed (what went out since: their difference, modulo
   * 2^32; an auto segment is at most LC_PREFETCH_AUTO_MAX, and at most
   * three are held, so far less goes out between two fetches) */
  uint32_t sized_ms, sized_handed;
  uint32_t seg_size; /* the next segment's size (auto: adapts, at most
                        LC_PREFETCH_AUTO_MAX) */
  unsigned char cap; /* room in seg: one at first (most counters never
                        hold two), LC__SEGS once a second comes */
  lc__seg seg[];     /* held segments (c->nseg), in value order */
} lc__segs;

/* A counter's state.  Its mutex and condition variables are not in it:
 * they are one of LC__LOCK_STRIPES shared stripes (seg_fast.c; LC__CV,
 * LC__SEG_CV), so two counters may share them: code holds one counter's
 * lock at a time, and every wait is a loop on its own counter's
 * predicate (the stripe's cvs are broadcast).  Hot fields first. */
struct lc__counter {
  union { /* first: the handle's name table entry; nlen is its; the
           * name is in key (lc__counter_name) */
    lc__named node;
    struct {
      struct lc__named *node_next_;
      uint32_t nlen;    /* lc__named's nlen */
      uint32_t node_hash_; /* lc__named's hash */
    };
  };
  /* seg_fast.c: seg[0]'s lock-free window, open while mu is free: the
   * next id, and the bound of what a take may reach (next + n <= limit) */
  _Atomic int64_t fast_next, fast_limit;
  lc__req *qtail; /* waiting lc_next_n calls: a ring, the last one (its
                     next is the first), NULL when none waits */
  int64_t floor, reserved;
  int64_t sent_floor[LC__INFLIGHT]; /* floor when each was sent */
  int64_t handed; /* the last value handed out of a segment */
  /* ledger.c, under mu: every value <= gap_low is in a block or segment
   * this handle took, in a record of the log, or in a ledger entry
   * (written or pending); ahead: taken above gap_low + 1, in order. */
  int64_t gap_low;
  int64_t restart_to; /* holes up to here: LC_GAP_RESTART */
  /* Values accepted above the lowest sent_floor (below it no answer can
   * overlap them): disjoint ranges in order (rare->accepted), merged when
   * adjacent; when full the lowest is dropped and lost_below remembers it
   * (an answer reaching down to it is then not accepted). */
  int64_t lost_below;
  int64_t proven;      /* pending: the highest value the log shows taken
                          (records, ledger; not the reservation, which
                          runs ahead): memcached below it went back */
  char *refused_by;    /* the claim that refused it, or NULL */
  /* rare.c: the arrays which most counters never fill: allocated
   * whenever a count is nonzero, freed at the next trim once all are 0 */
  struct lc__rare *rare;
  lc__segs *segs; /* segment.c: NULL while no segment is held or fetched */
  int excl_waiting;    /* exclusive operations waiting (LC__CV) */
  int committing;      /* answered, their records not written */
  _Atomic unsigned char refusal; /* claim.c: 0, LC__REFUSED or
                                    LC__RELEASED */
  unsigned char inflight; /* increments sent, not answered yet */
  unsigned char slots;    /* which sent_floor entries are in use */
  unsigned char nseg;     /* segments held: segs->seg */
  /* the counts of rare's arrays (each at most LC__ACCEPTED/LC__GAPS/
   * LC__SEG_CLOSES) */
  unsigned char naccepted, nahead, ngaps;
  unsigned char nburned; /* rare->burned: ranges an earlier run of this log
                  burned and could not write (its note in memcached,
                  claim.c), above gap_low, in order: a hole over them is
                  burned */
  unsigned char nclose; /* finished, records to rewrite: rare->closes */
  unsigned char idle_passes; /* evict.c */
  unsigned char klen;        /* strlen(key) (LC_NAME_MAX + 3 < 256) */
  bool busy;        /* an exclusive operation is at work */
  bool res_writing; /* a reservation write is under way: the
                       next waits (LC__CV), so the log's value
                       only ever grows */
  bool loaded;
  bool claimed;        /* claim.c: this log holds the claim */
  bool noting, note_again; /* claim.c, under mu: a burned note is being
                              set; set it again when done */
  bool used;           /* allocated or advanced by this handle */
  bool pending;        /* backup.c: a restored log's counter, not yet
                          reconciled: never seeded from the log (set at
                          load, cleared by a leader, under mu) */
  bool fetching;       /* a segment fetch is queued or running */
  bool queued;         /* on the prefetcher's queue (pf.mu) */
  bool recheck; /* a write failed: it may have reached the log after all,
                   so the pending gaps are checked against it first */
  bool evicting; /* lc__counters_evict: chosen by this pass */
  _Atomic bool unknown; /* claim.c: a write of the refusal, release or
                           adopt failed, and may have landed: refusal,
                           pending and the reservation are reread from
                           the log before the next use (lc__counter_load) */
  /* evict.c: set by every call that finds the counter (when eviction is
   * on); cleared, and the passes that found it clear counted, by each
   * eviction pass */
  _Atomic bool touched;
  char key[]; /* "lc:" NAME */
};

/* The counter's name (nlen bytes, then a NUL): its key past the prefix,
 * where the name table finds it too (lc__counter_table_init). */
#define LC__COUNTER_NAME_AT \
  (offsetof(lc__counter, key) + sizeof LC__MC_PREFIX - 1)
static inline const char *lc__counter_name(const lc__counter *c) {
  return c->key + sizeof LC__MC_PREFIX - 1;
}

/* The counter's lock stripe (seg_fast.c): a mutex and two condition
 * variables shared by the counters that hash to it. */
#define LC__LOCK_STRIPES 1024
typedef struct lc__lock_stripe {
  pthread_mutex_t mu;
  pthread_cond_t cv;     /* exclusive operations waiting; res_writing */
  pthread_cond_t seg_cv; /* a fetch finished */
} lc__lock_stripe;
lc__lock_stripe *lc__counter_stripe(const lc__counter *c);
void lc__counter_stripes_init(void); /* once, before the first counter */
#define LC__CV(c) (&lc__counter_stripe(c)->cv)
#define LC__SEG_CV(c) (&lc__counter_stripe(c)->seg_cv)
/* What a counter with a name of up to 8 bytes costs with nothing held:
 * its state and key (lc__counter_new allocates up to key, not the padded
 * sizeof) in at most this many bytes, one 192-byte malloc chunk
 * (test_memory checks it). */
#define LC__COUNTER_STATE_MAX 184

/* A block accepted from memcached, on its way to the log. */
typedef struct lc__block {
  int64_t last;
  uint64_t n;
  int64_t reservation; /* a new reservation to write with it, or 0 */
  bool sync;
  lc__gap gaps[LC__GAPS]; /* ledger entries riding along */
  int ngaps;
  bool reconciles; /* a pending counter's first block: with its mark */
  int64_t time_us; /* a segment's: its record's time (first.c) */
} lc__block;

/* rare.c, mu held (or the counter exclusive): c->rare, allocated on first
 * need; NULL when out of memory, and the caller then takes the path it
 * takes when its array is full, which is always safe (an answer not
 * accepted, a record left open, a gap left unexplained). */
lc__rare *lc__counter_rare(lc__counter *c);
/* Frees c->rare once naccepted, nahead, ngaps and nclose are all 0: call
 * it where a count may have dropped to 0, holding no pointer into it. */
void lc__counter_rare_trim(lc__counter *c);

/* next.c */
/* lc_next_n inside the gate (the calls of first.c). */
int lc__next_n(lc_t *h, const char *name, uint64_t n, int64_t *first);
/* Counts a call's result in the handle's stats; returns rc. */
int lc__next_count_call(lc_t *h, int rc, uint64_t n);

/* counter.c */
/* lc_next_n without prefetch: c's callers queue, and their leader sends
 * one increment for the batch and writes its record (see counter.c). */
int lc__counter_next(lc_t *h, lc__counter *c, uint64_t n, int64_t *first);
/* first.c's batch: takes the leader role of c only if c is a first use
 * in this handle (not loaded, not claimed) and nobody else works on it
 * (with prefetch, marks it fetching too); lc__counter_end_first gives
 * both back.  lc__counter_first_block plans the block last-n+1..last
 * accepted from memcached (floor, reservation, ledger) and adds its
 * record to wb; lc__counter_first_done settles it after wb's write (rc:
 * the write's result; on failure the block is burned). */
bool lc__counter_try_first(lc_t *h, lc__counter *c);
void lc__counter_end_first(lc_t *h, lc__counter *c);
void lc__counter_first_block(lc_t *h, lc__counter *c, int64_t last, uint64_t n,
                             lc__block *b, leveldb_writebatch_t *wb);
void lc__counter_first_done(lc__counter *c, const lc__block *b, int rc);
/* A block memcached handed to a first use that then failed before its
 * write (a later pipelined round of first.c failed): burned as if its
 * write had failed (floor passes it, the ledger says burned). */
void lc__counter_first_burn(lc__counter *c, int64_t last, uint64_t n);
/* A new counter's state, not in any table (NULL when out of memory), and
 * its end (lc_current reads a counter it does not keep with one). */
lc__counter *lc__counter_new(const char *name, size_t n);
void lc__counter_free(lc__counter *c);
int lc__counter_lookup(lc_t *h, const char *name, lc__counter **out);
/* The counter if this handle has it (*out NULL otherwise); no state made. */
int lc__counter_find(lc_t *h, const char *name, lc__counter **out);
void lc__counter_acquire(lc__counter *c);
/* lc__counter_acquire, then also waits until every block answered has
 * its log write done: the log then shows no hole that a write under way
 * would fill (for a snapshot of the counter's records). */
void lc__counter_settle(lc__counter *c);
void lc__counter_release(lc__counter *c);
/* Leader only, loaded: claims c (lc__claim), seeding a counter this log
 * has never used in memcached first. */
int lc__counter_claim(lc_t *h, lc__counter *c);
/* Leader only, nothing in flight: writes b (synced; the caller's pieces,
 * maybe none) with, when target > floor, the values floor+1..target
 * skipped on purpose (an entry of cause, with the holes below floor), and
 * the reservation when target passes it; floor then stands at target. */
int lc__counter_skip(lc_t *h, lc__counter *c, int64_t target, int cause,
                     leveldb_writebatch_t *b);
/* counter_ops.c, for promote.c: the counter raised past the old primary
 * (op_failover). */
int lc__counter_failover(lc_t *h, const char *name, int64_t above,
                         int64_t *to);
/* Leader only: restores a lost key (seeds it) or raises one below
 * floor; *out: where memcached then stands.  A pending counter's key is
 * never seeded, and raised only from at or above c->proven. */
int lc__counter_restore(lc_t *h, lc__counter *c, int64_t *out);
/* Leader only: floor and reserved from the log on first use. */
int lc__counter_load(lc_t *h, lc__counter *c);
/* Leader only: a block of n values wholly above floor from memcached
 * (restoring or raising the key as needed); *last is its last value.
 * floor is not moved. */
int lc__counter_increment(lc_t *h, lc__counter *c, uint64_t n, int64_t *last);

/* claim.c: leader only (refused_by is the leader's alone; claimed is set
 * under mu, since lc_next_n's callers read it there) */
#define LC__REFUSED 1
#define LC__RELEASED 2
/* Reads a refusal or release recorded in the log for c (at load). */
int lc__claim_load(lc_t *h, lc__counter *c);
/* first.c's batch sends the claims itself: the claim's key for c (buf
 * of LC_NAME_MAX + 8 bytes; returns its length), whether a claim's text
 * is this log's, and c marked claimed. */
size_t lc__claim_key(char *buf, const lc__counter *c);
bool lc__claim_ours(const lc_t *h, const char *held);
void lc__claim_mark(lc__counter *c);
/* Claims c in memcached (see claim.c); 0, LC_EOWNED or another code.
 * takeover (lc_adopt): a claim held by the log this restored log was
 * copied from is replaced by this log's instead of refusing. */
int lc__claim(lc_t *h, lc__counter *c, bool takeover);
/* lc__counter_load of a loaded counter marked unknown: its refusal or
 * release, pending state and reservation reread from the log (the floor
 * and reservation only ever raised), unknown cleared; 0 or LC_ELOG. */
int lc__claim_reread(lc_t *h, lc__counter *c);
/* After a failed write of an ownership record (what: "release",
 * "refusal", "adopt"): c marked unknown, and rc returned with a detail
 * saying the outcome is unknown and a retry is safe. */
int lc__claim_unknown(lc__counter *c, int rc, const char *what);
/* Leader or caller after a failed write burned some of c's values, no
 * lock held: sets c's burned note in memcached ("lb:" NAME: this log's
 * ID and c's pending burned gaps), which lc__claim reads when a later
 * run of this log claims c again, so that a hole over them is burned
 * even when this run never writes their entry (killed, or closed with
 * the log still failed).  Best effort (memcached may lose it: then the
 * hole is restart or unlogged, as without it); the thread's failure
 * detail is kept. */
void lc__claim_note_burned(lc_t *h, lc__counter *c);
/* first.c reads the note in its round of claim gets: the note's key
 * (buf of LC_NAME_MAX + 8 bytes; its length), and its text (cut: it may
 * have been cut short) read into c's known burned ranges if it is this
 * log's, floor raised past them (c->mu not held; leader). */
size_t lc__claim_note_key(char *buf, const lc__counter *c);
void lc__claim_note_read(lc_t *h, lc__counter *c, const char *text, bool cut);
/* LC_EOWNED with the reason c is refused. */
int lc__claim_refused(const lc_t *h, const lc__counter *c);
/* Records the release of c at final (synced, with the reservation) and
 * drops its claim in memcached. */
int lc__claim_release(lc_t *h, lc__counter *c, int64_t final);
/* The final value a release recorded (c released). */
int64_t lc__claim_final(const lc__counter *c);
/* Deletes c's claim in memcached if it is this log's. */
int lc__claim_drop(lc_t *h, lc__counter *c);
/* adopt: the refusal or release of c deleted from the log, added to b
 * (to be written with the values up to `reservation` skipped,
 * lc__counter_skip; with reconcile, a pending counter is reconciled by
 * that write); once b is written, c's state forgets them too (and is no
 * longer pending when reconciled). */
void lc__claim_forget_batch(leveldb_writebatch_t *b, const lc__counter *c,
                            int64_t reservation, bool reconcile);
void lc__claim_forgotten(lc__counter *c, bool reconciled);

/* ledger.c (all with mu held, or as the only thread) */
/* first..last were taken by this handle (a block accepted, a segment
 * fetched); holes at or below low (no increment in flight can fill them
 * any more) become pending gaps. */
void lc__ledger_taken(lc__counter *c, int64_t first, int64_t last, int64_t low);
/* Every hole up to upto is final (nothing in flight): pending gaps. */
void lc__ledger_settle(lc__counter *c, int64_t upto);
/* A gap known as such (a burned block, a segment's unused rest). */
void lc__ledger_gap(lc__counter *c, int64_t first, int64_t last, int cause);
/* Moves the pending gaps to out (returns how many), first taking out of
 * them what the log holds if a write failed since (c->recheck); and puts
 * them back after a failed write (setting c->recheck). */
int lc__ledger_take(lc__log *l, lc__counter *c, lc__gap out[LC__GAPS]);
void lc__ledger_putback(lc__counter *c, const lc__gap *g, int n);
/* first..last was burned by an earlier run of this log that could not
 * write its entry (claim.c read its note): a hole over it is burned, not
 * restart or unlogged.  What of it lies at or below gap_low (among the
 * records) becomes pending burned gaps, less what the log holds
 * (records, entries: recheck). */
void lc__ledger_known_burned(lc__counter *c, int64_t first, int64_t last);
/* The pending burned gaps (for that note), up to LC__GAPS; how many. */
int lc__ledger_burned_pending(const lc__counter *c, lc__span out[LC__GAPS]);
/* At load: holes between the counter's last records that no entry
 * explains (pending gaps a crash lost) become pending gaps of cause. */
int lc__ledger_load_tail(lc__log *l, lc__counter *c, int cause);
/* Adds the entries of g[0..n) to b. */
/* One entry g with a reason (at most LC_REASON_MAX bytes), into b. */
void lc__ledger_batch_reason(leveldb_writebatch_t *b, const lc__counter *c,
                             const lc__gap *g, const char *reason);
void lc__ledger_batch(leveldb_writebatch_t *b, const lc__counter *c,
                      const lc__gap *g, int n);
/* lc_void, told whether this handle holds value in a segment, unissued
 * (lc__seg_holds): then, if its record is a segment still open, the void
 * is refused (LC_ENOTISSUED). */
int lc__ledger_void(lc_t *h, const char *name, int64_t value,
                    const char *reason, bool held);

/* prefetch.c: lc_next_n for a handle with prefetch on.  wait false
 * (lc_try_next_n): LC_EWOULDBLOCK, nothing taken, where the call would
 * fetch a segment or wait for the fetch under way. */
int lc__prefetch_next(lc_t *h, lc__counter *c, uint64_t n, bool wait,
                      int64_t *first);

/* segment.c (a leaf: it calls nothing of counter.c's) */
/* Leader, mu not held: if the next held value is <= below, gives up every
 * held segment (advance), writing what went out of each; 0 or the write's
 * error. */
int lc__seg_drop(lc_t *h, lc__counter *c, int64_t below);
/* mu held: takes n values from the held segments when they hold n
 * contiguous values from the next one on; false otherwise. */
bool lc__seg_take(lc__counter *c, uint64_t n, int64_t *first);
/* mu held, lc__seg_take having failed: when the held segments are not
 * contiguous (memcached jumped between two fetches), finishes those
 * before the first break, whose rest could not serve the call (their
 * unused rest becomes a segment gap), and returns true: the call then
 * takes from the segments after the break rather than fetch a new one
 * and give them all up.  False when there is no break. */
bool lc__seg_skip_break(lc__counter *c);
/* mu held: true when the next segment is due (none held, or only one and
 * that one half used). */
bool lc__seg_low(const lc__counter *c);
/* A fetch's pieces, for its leader (c->fetching set; prefetch.c, and
 * first.c's batch): the size of the next segment (at least need unless
 * the counter is near its end: then what is left, maybe 0); for the
 * segment b (b->last, b->n, b->time_us) taken from memcached, its record
 * and the pending gaps added to wb (floor moves past it); after wb's
 * write (rc), the segment installed and, when first is not NULL, n ids
 * taken from it (*first); or, when rc failed, burned. */
uint64_t lc__seg_size(lc_t *h, lc__counter *c, uint64_t need);
void lc__seg_block(lc_t *h, lc__counter *c, lc__block *b,
                   leveldb_writebatch_t *wb);
void lc__seg_install(lc_t *h, lc__counter *c, const lc__block *b, int rc,
                     uint64_t n, int64_t *first);
/* The finished segments whose records wait to be rewritten: taken out
 * (returns how many), their rewrites added to a batch, and put back in
 * front when that batch was not written. */
int lc__seg_closes_take(lc__counter *c, lc__seg out[LC__SEG_CLOSES]);
void lc__seg_closes_batch(leveldb_writebatch_t *b, const lc__counter *c,
                          const lc__seg *v, int n);
void lc__seg_closes_putback(lc__counter *c, const lc__seg *v, int n);
/* Whether value lies in a segment of c, held or finished, and did not go
 * out (lc_void refuses it). */
bool lc__seg_holds(lc__counter *c, int64_t value);
/* lc_advance to target+1 succeeded: the counter stands at least there. */
void lc__seg_advanced(lc__counter *c, int64_t target);
/* At close (no other thread left): adds to b the rewritten records of
 * every segment, and returns the value the counter stands at (the last
 * value handed out, or above it where values cannot be given back), or -1
 * if this handle took no segment of it. */
int64_t lc__seg_close(lc__counter *c, leveldb_writebatch_t *b);
/* The last value handed out when segments are in use, else 0 (mu). */
int64_t lc__seg_current(lc__counter *c);
/* mu held: the oldest held segment is finished (segment.c). */
void lc__seg_finish_oldest(lc__counter *c);
/* seg_fast.c: the counter's mutex with its lock-free window kept exact:
 * lock (the window closed), wait on cv (closed again after), unlock (the
 * window opened on seg[0]).  Every holder of c->mu uses these. */
void lc__counter_lock(lc__counter *c);
void lc__counter_wait(lc__counter *c, pthread_cond_t *cv);
void lc__counter_unlock(lc__counter *c);
/* n ids from the open window without the mutex: true and *first, or
 * false (closed, too few left, or past the point to fetch the next
 * segment); lc__prefetch_next tries it before the locked way. */
bool lc__seg_fast(lc__counter *c, uint64_t n, int64_t *first);
#define LC__FAST_CLOSED INT64_MAX /* fast_next of a closed window */
void lc__seg_init(lc__counter *c);
void lc__seg_destroy(lc__counter *c);

#endif
