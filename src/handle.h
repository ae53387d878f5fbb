/*
 * handle.h - struct lc, the handle: what one lc_open keeps, a part for
 * each layer, each part's type its folder's (lc__cache, lc__log,
 * lc__table, lc__tallies...).  A layer's files reach their own part
 * through the handle their entry points are given; the layout is data
 * only, no function here, so including it calls nothing above.  Each
 * part's comment names the file that owns it.
 */
#ifndef LC_HANDLE_H
#define LC_HANDLE_H

#include "counter/counter.h"
#include "tally/tally.h"

struct lc {
  bool remote; /* talks to a logcounterd: no log, no counters */
  bool admin;  /* remote, on an admin socket: every call goes there */
  bool admin_tls; /* remote over TLS with a user: the log's calls go to
                     the daemon's admin socket through "admin" (tls.c) */
  struct lc__admin_srv *admin_srv; /* core/admin_srv.c: its admin socket */
  lc_options opt;
  char *memcached;
  char *db_path;
  char *owner;
  char *server;
  char *repl_secret; /* opt.replication_secret's copy */
  lc__cache cache;
  /* remote.c: a remote handle on "A,B" has a pool to each daemon; calls
   * go to cache[active] and move to the other when it refuses as a
   * standby or cannot be reached */
  lc__cache alt;
  lc__tls *tls[2]; /* with tls_ca: the pools used instead of cache, alt */
  struct ssl_ctx_st *repl_tls[2]; /* local, replication over mutual TLS
                                     (repl/wire_tls.c): the primary's
                                     context, the standby's; else NULL */
  bool has_alt;
  _Atomic int active;
  lc__log log;
  lc__table counters;
  lc__tallies tallies;
  char log_id[LC__ID_LEN + 1]; /* claim.c: this log's identity */
  bool restored;               /* backup.c: the log is a restored backup */
  char restored_from[LC__ID_LEN + 1]; /* backup.c: the identity of the log
                                         it was copied from, or "" */
  char claim[LC__ID_LEN + 96]; /* "ID HOST PID": what a claim holds */
  struct {                     /* prefetch.c: the prefetcher (prefetch on) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* counters waiting for a segment: a ring of qcap, qlen from qhead
     * (NULL: taken off by unqueue) */
    lc__counter **q;
    size_t qcap, qhead, qlen;
    bool started, stop;
    pthread_t thread;
  } pf;
  struct {               /* recover.c: the thread that reopens a failed log */
    pthread_mutex_t mu;  /* started, stop, the thread's sleep */
    pthread_mutex_t run; /* one reopen at a time */
    pthread_cond_t cv;
    bool started, stop;
    pthread_t thread;
  } rec;
  /* the calls counted per thread, in stripes of their own cache line (a
   * thread keeps its stripe), summed by lc_get_stats: no shared atomic
   * per allocation */
  struct lc__stripe {
    atomic_uint_fast64_t allocations, ids;
    atomic_long inside; /* evict.c: calls under way (with eviction on) */
    char pad[64 - 2 * sizeof(atomic_uint_fast64_t) - sizeof(atomic_long)];
  } calls[LC__STRIPES];
  struct {                /* evict.c: idle eviction (opt.idle_evict_ms) */
    bool on;              /* set at lc_open: the calls pass the gate */
    atomic_bool stop;     /* a pass runs: calls wait at the gate */
    atomic_uint_fast64_t gen; /* bumped by each pass that freed counters
                                 (counter.c's per-thread cache) */
    pthread_mutex_t mu;   /* the gate's wait, the thread's sleep */
    pthread_cond_t cv;    /* the gate open again; the thread's quit */
    bool inited, started, quit;
    pthread_t thread;
    atomic_uint_fast64_t evictions, skips;
    size_t resume; /* the evictor thread's: where a follow-up pass starts */
    /* the tally layer's part of each pass (tally/tally_evict.c), set by
     * lc_open: scan with the gate open, evict with it closed */
    size_t (*tally_scan)(lc_t *h, bool count);
    size_t (*tally_evict)(lc_t *h);
    atomic_uint_fast64_t tally_evictions;
  } ev;
  uint64_t uid; /* unique per lc_open in this process (counter.c's cache) */
  struct {
    atomic_uint_fast64_t increments, restores, backwards,
        log_writes, log_syncs, errors, segments, segment_waits;
    atomic_uint_fast64_t tally_adds, tally_flushes, tally_schedules,
        tally_schedule_failures, tally_losses, tally_seeds,
        tally_lost_amount;
  } st;
  /* latency.c: floor-write latency, relaxed atomics (lc_get_latency) */
  lc__hist lat[LC__LAT_KINDS];
  struct {                  /* retain.c: the retention thread */
    pthread_mutex_t mu;     /* st, and the thread's sleep */
    pthread_cond_t cv;      /* on CLOCK_MONOTONIC */
    atomic_bool stop;       /* set by lc__retain_stop */
    bool started;
    pthread_t thread;
    lc_retention_status st;
  } ret;
  /* follow.c, promote.c: a standby (opt.standby_of) until promoted */
  _Atomic bool standby;
  struct lc__follow *follow; /* stopped at promotion, freed by lc_close */
  lc__repl *repl; /* repl/replicate.c: the stream to a standby, or NULL */
  pthread_mutex_t promote_mu; /* one promotion at a time */
  bool promoting;             /* the follower is stopped for good */
  /* repl/cluster.c: lc_set_lease_deadline's deadline (CLOCK_MONOTONIC,
   * us); 0: none.  Checked by lc__follow_primary_only (follow.c). */
  _Atomic int64_t lease_deadline_us;
  _Atomic uint64_t term; /* lc_set_term: a promotion's failover gaps say it */
};

#define LC__STAT(h, field, n) \
  atomic_fetch_add_explicit(&(h)->st.field, (n), memory_order_relaxed)

#endif
