/*
 * lcd.h - the parts of logcounterd (the LogCounter service) and how they
 * meet.
 *
 *   logcounterd.c  settings, options, signals, startup and the orderly
 *                  shutdown (drain, lc_close, pidfile)
 *   lcd_loops.c    the event-loop threads, handing them connections and
 *                  commands (drain, close)
 *   lcd_conn.c     connections: framing and parsing requests (lcd_proto.c),
 *                  timeouts, closing
 *   lcd_jobs.c     incr/get jobs and the replies, in request order
 *   lcd_pool.c     running jobs: on the loop thread when the library
 *                  answers quickly, else on the worker threads
 *   lcd_listen.c   the TCP and unix-socket listeners, --max-connections
 *   lcd_tls.c      TLS on the TCP listeners and /metrics: the SSL_CTX, its
 *                  SIGHUP reload
 *   lcd_stats.c    the "stats" and "stats settings" replies
 *   lcd_flush.c    the tally flusher thread (--flush-interval)
 *   lcd_notify.c   READY=1 / STOPPING=1 to systemd (sd_notify)
 *   lcd_proto.c    the request parser (pure functions; lcd_proto.h)
 *   lcd_metrics.c  --metrics-listen: Prometheus text at /metrics, on its
 *                  own thread (lcd_prom.c writes it; lcd_metrics.h)
 *   lcd_relay.c    "admin" over TLS: the connection becomes a relay to
 *                  --admin-socket
 *   lcd_gate.c     what a connection may do: the --auth-file handshake and
 *                  the --rights-file checks, called from lcd_conn.c and
 *                  lcd_mget.c (lcd_auth.h)
 *   lcd_auth.c     the users and password digests, SIGHUP reloads, the
 *                  failure delays per peer address; lcd_rights.c the
 *                  rights and the names each user used; lcd_auth_parse.c
 *                  their pure parsers (fuzzed)
 *
 * The daemon uses liblogcounter's public API only (include/logcounter.h).
 *
 * Threads, as in memcached: --threads event loops (default: the CPUs).
 * Loop 0 runs on the main thread and also owns the listeners and the
 * signals; it gives each new connection to the next loop in turn, and
 * that loop alone touches the connection from then on (no locks).  Jobs
 * parsed in one loop iteration are handled together at its end (the
 * last-priority submit event): those the library serves quickly
 * (lc_next_quick: a counter in use, not sync; tally changes; gets) run
 * right there, the jobs of one counter sharing one lc_next_n split in
 * order, and are answered at once, with no thread hand-off; the library
 * merges again the calls that loops make at once for one counter.  Slow
 * jobs (first use of a name, sync durability, --no-coalesce) and work
 * beyond LCD_INLINE_CALLS calls per iteration go to --workers worker
 * threads through one queue (one lock, one wake-up per batch); a worker
 * also takes every queued job of the same counter; a finished job goes
 * back to its loop's done list and wakes that loop with event_active
 * (thread-safe after evthread_use_pthreads).  A call on a loop that stalls
 * (memcached slow or down) sends that loop's work to the workers for a
 * second.
 *
 * Ordering: a connection keeps its jobs in request order (c->jobs) and
 * writes a job's replies only once every job before it is answered, so
 * replies go out in request order.  Up to LCD_CONN_JOBS jobs of one
 * connection are in flight at once, but never two of the same counter or
 * tally (a later request of it waits, unparsed, until the earlier job is
 * answered), so each connection's incr answers of a counter strictly
 * increase; a get waits until nothing else is in flight and holds the next
 * request back until it is answered; a request answered on the spot
 * (stats, version, an error) waits until no job is in flight.  A run of
 * pipelined "incr NAME n" lines for the same counter that is already
 * buffered becomes one job (one lc_next_n for the total, split in order).
 *
 * Back-pressure (lcd_conn.c): a connection is read only while fewer than
 * LCD_INPUT_MAX bytes of it are buffered (reading is switched off, not
 * spun on: the rest waits in the kernel's socket buffer and the client's
 * writes block); parsing stops while more than LCD_OUTPUT_MAX bytes of
 * replies wait to be written; a client whose replies make no progress for
 * --reply-timeout seconds is closed and logged.  So one connection never
 * holds more than about LCD_INPUT_MAX + LCD_OUTPUT_MAX bytes and
 * LCD_CONN_JOBS jobs, and never delays another.
 * --no-coalesce (settings.coalesce = 0) turns off every merge (the
 * pipelined run of one counter, the pipelined run of first uses (MANY
 * jobs), the worker's same-counter take, its batch of first uses
 * (run_each), and the library's, with lc_options.batch_max = 1): every
 * request costs its own memcached incr.
 *
 * Tallies: "incr/decr tally:NAME D" is a job; like incr, a buffered run
 * of changes of one tally becomes one job and a worker takes every queued
 * job of the same tally, and the changes share ONE lc_tally_add_total of
 * their sum (one by one if the sum is 0 or out of range, or the shared one
 * is refused); each is answered with the total after it in queue order
 * (--no-coalesce: one call per change).  get/gets answer tally keys with
 * lc_tally_get (durable + pending); "stats tally NAME" is a get job too.
 * A separate flusher thread (lcd_flush.c) applies pending changes every
 * --flush-interval seconds, sweeps now and then, and is stopped before
 * the final flush and lc_close at shutdown.
 *
 * Lifetime: a connection's struct lives until its socket is closed AND no
 * job of it is in flight; a job's results are dropped if its connection
 * died meanwhile (the ids it got are logged, never reissued: a gap).
 */
#ifndef LCD_H
#define LCD_H

#include "logcounter.h"
#include "lcd_auth.h"
#include "lcd_proto.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

struct event_base;
struct event;
struct evconnlistener;
struct bufferevent;
struct evbuffer;

#define LCD_PROG "logcounterd"
/* The memcached version whose text protocol is spoken (first in the
 * "version" reply). */
#define LCD_PROTOCOL_VERSION "1.6.0"
#define LCD_RUN_MAX 64 /* pipelined incr lines merged into a job */
#define LCD_MERGE_SCAN \
  1024                              /* queue entries a worker looks through for
                                   jobs of the same counter */
#define LCD_GARBAGE_MAX 16          /* error replies in a row before closing */
#define LCD_INPUT_MAX (64 * 1024)   /* stop reading above this */
#define LCD_CONN_JOBS 16            /* jobs of one connection in flight */
#define LCD_CONN_SPARE 2            /* finished jobs a connection keeps */
#define LCD_OUTPUT_MAX (256 * 1024) /* stop parsing above this */
/* Event priorities: everything runs at the default (1) except the submit
 * event, which runs after all I/O of a loop iteration. */
#define LCD_PRIORITIES 3
#define LCD_PRIO_LAST 2
#define LCD_THREADS_MAX 64
/* Library calls a loop makes itself per iteration (lcd_pool.c). */
#define LCD_INLINE_CALLS 4
/* Most counters' INCR chains a worker serves with one lc_next_each (a
 * burst of new names: lcd_pool.c's run_each). */
#define LCD_EACH_MAX 256
/* A library call on the loop thread longer than this sends the loop's
 * jobs to the workers for LCD_BACKOFF_US (lcd_pool.c). */
#define LCD_STALL_US 20000
#define LCD_BACKOFF_US 1000000
#define LCD_LISTEN_MAX 8 /* TCP addresses in --listen */

/* Every setting, with its default in lcd_settings_init. */
/* --max-counters' default: with --idle-evict bounding what stays, room
 * for a million counters in use at once (about 1.3 GB at most). */
#define LCD_COUNTERS_DEFAULT 1000000ULL

typedef struct lcd_settings {
  const char *listen;         /* TCP ADDR:PORT[,ADDR:PORT...] (at most
                               LCD_LISTEN_MAX), each TLS when --tls-cert is
                               given unless written notls:ADDR:PORT;
                               "none": no TCP listener
                               (default 127.0.0.1:11311) */
  const char *socket_path;    /* a unix socket too; NULL: none */
  int socket_mode;            /* its permissions (default 0660) */
  const char *admin_socket;   /* lc_options.admin_socket; NULL: none */
  int admin_mode;             /* its permissions (default 0600) */
  const char *memcached;      /* libmemcached config (default $LOGCOUNTER_
                               MEMCACHED, else --SERVER=127.0.0.1:11211) */
  const char *db;             /* the log directory (required: --db or
                               $LOGCOUNTER_DB) */
  lc_durability_t durability; /* default LC_DURABILITY_DEFAULT */
  uint64_t prefetch;          /* lc_options.prefetch (default
                               $LOGCOUNTER_PREFETCH, else 0: off) */
  int timeout_ms;             /* memcached timeout (default 1000) */
  int threads;                /* event-loop threads (default: the CPUs the
                               process may use, at most LCD_THREADS_MAX) */
  int workers;                /* worker threads for slow calls (default 4) */
  int max_connections;        /* open client connections (default 1024) */
  int idle_timeout;           /* seconds; close idle clients; 0: never
                               (default 0, as memcached) */
  int line_timeout;           /* seconds a request may stay unfinished
                               (default 10) */
  int drain_timeout;          /* seconds SIGTERM waits for replies to be
                               read before closing anyway (default 10) */
  int reply_timeout;          /* seconds a client may leave its replies
                               unread (no progress) before it is closed
                               (default 10) */
  int backlog;                /* listen backlog (default 1024) */
  int verbose;                /* 0: start/stop/errors, 1: connections,
                               2: every failed request (default 0) */
  const char *pidfile;        /* NULL: none */
  int coalesce;               /* merge concurrent incr of one counter into
                               one memcached increment; 0 (--no-coalesce):
                               one increment per request, for comparison
                               (default 1) */
  uint64_t max_counters;      /* lc_options.max_counters (default
                               LCD_COUNTERS_DEFAULT: with idle eviction the
                               counters in use at once, ~1.3 KB each) */
  int64_t idle_evict_us;      /* lc_options.idle_evict_ms; 0: never
                               (default 600 s) */
  uint64_t max_tallies;       /* lc_options.max_tallies (the same) */
  int flush_interval;         /* seconds between tally flushes; 0: none
                               while running, only at shutdown (default 1) */
  int sweep_interval;         /* seconds between sweeps of every tally in the
                               log (recovers what a crash left pending);
                               one also runs at startup; 0: only then
                               (default 60) */
  uint64_t retain_records;    /* retention (lc_options.retain_*): keep this
                               many newest records per counter; 0: no such
                               limit (default 0) */
  int64_t retain_age_us;      /* delete records older than this; 0: no age
                               limit (default 0: retention off unless
                               retain_records is set) */
  int64_t retain_interval_ms; /* between retention runs (default 60000) */
  const char *replication_listen; /* lc_options.replication_listen */
  const char *standby_of;         /* lc_options.standby_of */
  char repl_secret[256];          /* --replication-secret-file's line */
  int standby_mode;               /* LC_STANDBY_REQUIRED (default) */
  int64_t standby_timeout_ms;     /* default 2000 */
  const char *metrics_listen;     /* [notls:]HOST:PORT (PORT: 127.0.0.1) of
                                     the Prometheus /metrics; NULL: none */
  const char *auth_file;   /* --auth-file: user:password lines; NULL: no
                              authentication (lcd_auth.c) */
  const char *rights_file; /* --rights-file (lcd_rights.c); NULL: none */
  int insecure_listen;     /* --insecure-listen: a non-loopback TCP address
                              without --auth-file (default 0: refused) */
  const char *tls_cert;   /* PEM certificate chain; NULL: no TLS */
  const char *tls_key;    /* its PEM private key (with tls_cert) */
  const char *tls_ca;     /* CA file for client certificates; NULL: none */
  int tls_verify;         /* LCD_TLS_VERIFY_* (lcd_tls.h; default none) */
} lcd_settings;

/* MANY: incr of several counters' first uses, pipelined one after another
 * (lcd_jobs.c), served by one lc_next_each. */
typedef enum {
  LCD_JOB_INCR,
  LCD_JOB_GET,
  LCD_JOB_TALLY,
  LCD_JOB_MANY
} lcd_job_kind;

typedef struct lcd_conn lcd_conn;
typedef struct lcd_server lcd_server;
typedef struct lcd_loop lcd_loop;

/* One unit of work for the pool; owned by its connection and reused. */
typedef struct lcd_job {
  struct lcd_job *next;  /* queue / done-list link */
  struct lcd_job *cnext; /* the connection's jobs, in request order */
  lcd_conn *conn;
  lcd_job_kind kind;
  int done; /* back from the pool, not yet answered */
  int lead; /* first of a chain: made the library call */
  /* Names, each NUL-terminated, one after another. */
  char names[LCD_PROTO_LINE_MAX + 2];
  uint16_t name_off[LCD_PROTO_MAX_KEYS];
  /* INCR: nreq requests of count[i] ids each (total in all).  MANY: nreq
   * requests, of counter names + name_off[i], count[i] ids each,
   * answered from values[i] (the block's first id) or failed with trc[i]
   * (detail: for the code in rc, the first failure's). */
  int nreq;
  uint64_t count[LCD_RUN_MAX];
  unsigned char noreply[LCD_RUN_MAX];
  uint64_t total;
  /* GET: nkeys names; gets answers a cas column; last: END follows them
   * (a get line of more keys is answered by several jobs, lcd_mget.c);
   * stats_tally: one tally name, answered as "stats tally NAME". */
  size_t nkeys;
  int gets;
  int last;
  int stats_tally;
  /* TALLY: names holds the tally's name (without "tally:"); nreq changes
   * tdelta[i] (a pipelined run), each answered with tafter[i] or failed
   * with trc[i]; merged: changes that shared another's lc_tally_add.
   * detail belongs to changes tdet_lo..tdet_hi-1 (one library call's
   * failure, the one in rc); other failed changes are answered without. */
  int64_t tdelta[LCD_RUN_MAX];
  int64_t tafter[LCD_RUN_MAX];
  int trc[LCD_RUN_MAX];
  int merged;
  int tdet_lo, tdet_hi, tdet_call;
  /* Results, written by the worker. */
  int rc;        /* 0 or the first LC_E* code (TALLY: the first
                               that the server caused, else the first) */
  int64_t first; /* INCR: first id of the whole block */
  int64_t values[LCD_PROTO_MAX_KEYS];    /* GET: value (tally: total +
                                           pending), TALLY: the total
                                           after the change in values[0] */
  unsigned char hit[LCD_PROTO_MAX_KEYS]; /* GET: answer a VALUE line */
  int64_t tally_total, tally_pending;    /* stats_tally */
  uint64_t tally_losses;              /* losses, and the amounts lost */
  uint64_t tally_lost_p, tally_lost_m; /* (lc_tally_lost) */
  char detail[256]; /* lc_last_detail() of a failure */
  /* ma, mg: the meta reply's style (meta.opaque points into opaque) */
  lcd_proto_meta meta;
  char opaque[LCD_PROTO_OPAQUE_MAX + 1];
} lcd_job;

/* A loop's figures for "stats", all uint64_t: "stats" sums every loop's.
 * Each is changed by its own loop thread only, and atomic so that another
 * loop may read it while it changes (uncontended: no cost to speak of). */
typedef _Atomic uint64_t lcd_stat;
typedef struct lcd_counters {
  lcd_stat rejected_connections;
  lcd_stat cmd_incr, incr_ids, incr_merged, incr_errors;
  lcd_stat cmd_get, get_hits, get_misses;
  lcd_stat cmd_set;  /* storage commands (all refused) */
  lcd_stat cmd_meta; /* ma, mg, mn */
  lcd_stat client_errors, server_errors;
  lcd_stat closed_idle, closed_garbage, closed_binary, closed_long;
  lcd_stat closed_unread; /* replies unread for --reply-timeout */
  lcd_stat read_paused;   /* times a connection's reading was paused */
  lcd_stat output_paused; /* times parsing paused for unread replies */
  lcd_stat write_waits;   /* times replies waited for EV_WRITE */
  lcd_stat cmd_tally_incr, cmd_tally_decr, tally_errors, get_tally;
  lcd_stat tally_merged;
  lcd_stat incr_calls;    /* lc_next_n calls for incr requests */
  lcd_stat jobs_inline;   /* jobs run on a loop thread */
  lcd_stat jobs_pooled;   /* jobs handed to the workers */
  lcd_stat loop_backoffs; /* times a slow call sent work to the pool */
  lcd_stat auth_cmds;     /* authentication handshakes ("set" before auth) */
  lcd_stat admin_relays;  /* connections turned admin relays (lcd_relay.c) */
  lcd_stat auth_errors;   /* failed handshakes and unauthenticated commands */
  lcd_stat tls_handshake_errors; /* TLS connections closed before or in
                                    the handshake */
} lcd_counters;

/* The tally flusher (lcd_flush.c); its figures are read under mu. */
typedef struct lcd_flusher {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int started, stop;
  pthread_t thread;
  uint64_t runs, sweeps, errors, flushed;
  int failing; /* the last run failed (logged once a streak) */
} lcd_flusher;

/* A singly linked list of jobs (by next) with its tail and length. */
typedef struct lcd_jlist {
  lcd_job *head, *tail;
  size_t n;
} lcd_jlist;

/* The worker threads' queue (lcd_pool.c), shared by every loop. */
typedef struct lcd_workers {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  lcd_job *head, *tail; /* waiting jobs, FIFO */
  size_t queued;
  int idle; /* workers waiting on cv */
  int stop;
  /* lc_next_each calls (run_each, MANY jobs), and the counters' requests
   * they served */
  _Atomic uint64_t each_calls, each_chains;
  pthread_t *threads;
  int nthreads;
} lcd_workers;

/* A connection handed from the listener to a loop (lcd_loops.c). */
typedef struct lcd_newconn {
  struct lcd_newconn *next;
  int fd;
  int tls; /* accepted on a TLS listener */
  char peer[64];
} lcd_newconn;

/* A listener (lcd_listen.c, loop 0) and how its connections speak. */
typedef struct lcd_listener {
  lcd_server *srv;
  struct evconnlistener *ev;
  int tls; /* TLS (lcd_tls.c), else plain text */
} lcd_listener;

/* One event-loop thread and everything it owns (lcd_loops.c).  Loop 0 runs
 * on the main thread and also owns the listeners, the signals and the
 * shutdown; loops 1..n-1 run on their own threads.  Only the fields under
 * cmd_mu and done_mu are touched by other threads. */
struct lcd_loop {
  lcd_server *srv;
  const lcd_settings *set; /* srv->set, srv->lc: for short access */
  lc_t *lc;
  int index;
  struct event_base *base;
  pthread_t thread; /* loops 1..: started */
  int running;      /* loops 1..: the thread was started */
  lcd_conn *conns;  /* every live connection struct */
  int nopen;        /* connections with an open socket */
  int nlive;        /* connection structs not yet freed */
  int draining;     /* stop reading, answer, close, then stop */
  int stopped;      /* drained: its loop has been told to end */
  lcd_counters st;
  _Atomic uint64_t stall_max_us; /* longest call run on this loop */
  int64_t inline_off_until;      /* monotonic us: no inline runs before */
  time_t last_error_log;         /* rate limit for SERVER_ERROR log lines */
  struct event *tick;            /* once a second: lcd_conn_sweep */
  /* jobs parsed in this iteration, run or queued by submit_ev (last
   * priority) */
  lcd_jlist pend;
  struct event *submit_ev;
  /* finished jobs from the workers, for this loop */
  pthread_mutex_t done_mu;
  lcd_job *done;
  int done_pending; /* event_active already called */
  struct event *done_ev;
  /* commands from loop 0: new connections, drain, close */
  pthread_mutex_t cmd_mu;
  lcd_newconn *inbox;
  int cmd_drain, cmd_close;
  struct event *cmd_ev;
};

/* What the loops share. */
struct lcd_server {
  const lcd_settings *set;
  lc_t *lc;
  lcd_listener tcp[LCD_LISTEN_MAX]; /* on loop 0; ntcp of them */
  int ntcp;
  lcd_listener local;              /* --socket (plain), on loop 0 */
  struct lcd_tls *tls;             /* lcd_tls.c; NULL: no TLS */
  lcd_loop *loops; /* set->threads of them; loops[0] is main */
  int nloops;
  unsigned next_loop; /* round robin for new connections (loop 0) */
  _Atomic int nopen;  /* open connections, every loop */
  _Atomic uint64_t total_connections;
  _Atomic int loops_running; /* loops 1.. not yet stopped */
  int draining;              /* SIGTERM/SIGINT seen (loop 0) */
  time_t started;            /* monotonic seconds */
  time_t started_wall;
  lcd_workers pool;
  lcd_flusher flusher;
  lc_log_status log_seen; /* lcd_stats.c: the log's state at the last tick */
  struct lcd_metrics *metrics; /* lcd_metrics.c; NULL: none */
};

/* logcounterd.c */
void lcd_log(const lcd_settings *set, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
time_t lcd_now(void); /* monotonic seconds */

/* A client connection; lcd_conn.c and lcd_jobs.c, loop thread only. */
struct lcd_conn {
  lcd_conn *prev, *next;     /* the server's list */
  lcd_loop *loop;            /* the loop that owns it */
  struct bufferevent *bev;   /* NULL once the socket is closed */
  lcd_job *jobs, *jobs_tail; /* unanswered jobs, request order (cnext) */
  int njobs;                 /* how many */
  int inflight;              /* of them, not yet back from the pool */
  lcd_job *spare;            /* answered jobs kept for reuse (cnext) */
  int nspare;
  int tls;            /* bev is an OpenSSL bufferevent (lcd_tls.c) */
  int tls_up;         /* its handshake completed */
  int tls_failed;     /* a TLS error: close without close_notify */
  int reading;        /* EV_READ is on */
  int closing;        /* close once the replies are written */
  int eof;            /* the peer closed its side */
  int draining;       /* SIGTERM: read nothing more */
  int out_blocked;    /* parsing paused until the output drains */
  size_t blocked_len; /* output left at the last progress check */
  int lingering;      /* replies sent and write side shut: reading
                                 and discarding until the peer closes */
  uint64_t swallow;   /* bytes of a refused data block to discard */
  int mget;           /* inside a get line of more keys than one job
                                 takes: its next piece follows (lcd_mget.c) */
  int mget_gets;      /* that line is a gets */
  int skip_line;      /* discard input up to the next line end (after an
                                 error inside a long get line) */
  int errors_in_row;
  time_t last_active;   /* last read or answer */
  time_t partial_since; /* an unfinished request is waiting; 0: none */
  time_t closing_since; /* waiting to write the last replies */
  time_t blocked_since; /* paused, or the output last shrank */
  const char *why;      /* why it is being closed */
  uint64_t id;
  char peer[64];
  /* lcd_gate.c: authentication and rights */
  int authed;                   /* the handshake succeeded */
  int auth_hold;                /* a failure's delay runs: no reading or
                                   parsing until auth_timer fires */
  struct event *auth_timer;
  const char *auth_why;         /* the failure's reply */
  char user[LCD_AUTH_USER_MAX + 1];
  const lcd_rights_user *rights; /* cached lookup of user, for rights_gen */
  unsigned rights_gen;
  time_t unauth_since;           /* first sweep that saw it unauthenticated */
  char named[LCD_PROTO_KEY_MAX]; /* the last key lcd_rights_new_name allowed */
  size_t named_len;              /* 0: none */
  /* lcd_relay.c: after "admin", a relay to --admin-socket */
  struct bufferevent *relay; /* the admin socket's end; NULL: none */
  int relay_eof;             /* it closed, or failed */
  int relay_shut;            /* the client's EOF was passed on */
  int binary; /* lcd_binary_conn.c: speaks the binary protocol */
};

/* A tally change refused because of what the client sent (nothing was
 * applied): CLIENT_ERROR, not SERVER_ERROR. */
static inline int lcd_client_caused(int rc) {
  return rc == LC_ETALLYRANGE || rc == LC_EDELTA || rc == LC_ENAME;
}

/* lcd_conn.c */
/* Takes over an accepted, non-blocking socket (on l's thread). */
void lcd_conn_new(lcd_loop *l, int fd, const char *peer, int tls);
/* Parses and answers buffered requests until a job is in flight, the
 * input holds no complete request, or the connection is closing.  May
 * free c. */
void lcd_conn_process(lcd_conn *c);
void lcd_conn_free(lcd_conn *c);
/* Marks c to be closed once its replies are written. */
void lcd_close_later(lcd_conn *c, const char *why);
/* Once a second: idle, unfinished-line and flush timeouts. */
void lcd_conn_sweep(lcd_loop *l);
/* SIGTERM: stop reading, answer what was read, then close. */
void lcd_conn_drain_all(lcd_loop *l);
/* Closes every socket now (a second signal, or the drain timeout). */
void lcd_conn_close_all(lcd_loop *l);

/* lcd_gate.c: authentication and rights.  lcd_gate_request, from
 * handle_line after parsing: 0 to go on with req (*kind may have become
 * LCD_PROTO_BAD: a refused right), 1 if it handled the line (the
 * handshake, or a failure), -1 if the handshake's data is not all
 * buffered yet. */
int lcd_gate_request(lcd_conn *c, struct evbuffer *in, size_t line_len,
                     lcd_proto_req *req, lcd_proto_cmd *kind);
/* 1 if lcd_gate_request would let req through as it is (lcd_jobs.c
 * asks before it takes a buffered line into a job). */
int lcd_gate_allows(lcd_conn *c, const lcd_proto_req *req,
                    lcd_proto_cmd kind);
/* A line too long to frame: 1 if it was an unauthenticated failure. */
int lcd_gate_long(lcd_conn *c, struct evbuffer *in);
/* NULL if c may read every key of req, else why. */
const char *lcd_gate_keys(lcd_conn *c, const lcd_proto_req *req);
/* From the sweep: 1 if c, unauthenticated, is past --line-timeout (the
 * caller closes it). */
int lcd_gate_late(lcd_conn *c, time_t now);
void lcd_gate_free(lcd_conn *c);
/* NULL if c may run the admin commands over TCP (TLS, authenticated, the
 * admin right), else why not. */
const char *lcd_gate_admin(lcd_conn *c);

/* lcd_relay.c: "admin" (after every job before it): c becomes a relay to
 * --admin-socket, or gets the CLIENT_ERROR why not */
void lcd_relay_start(lcd_conn *c);
/* Moves bytes both ways (from lcd_conn_process while c->relay is set);
 * may end the relay and mark c closing. */
void lcd_relay_pump(lcd_conn *c);
void lcd_relay_free(lcd_conn *c);

/* lcd_listen.c: 0, or an exit status after printing why */
int lcd_listen(lcd_server *s);
/* Closes the listeners and removes the socket file. */
void lcd_stop_listening(lcd_server *s);

/* lcd_jobs.c */
void lcd_put(lcd_conn *c, const char *s, size_t n);
void lcd_puts(lcd_conn *c, const char *s);
/* "ERROR" (why NULL) or "CLIENT_ERROR why", unless noreply; too many in a
 * row close the connection. */
void lcd_client_error(lcd_conn *c, const char *why, int noreply);
/* incr / get: the request line (line_len bytes at the head of in) becomes
 * a job; the line is consumed. */
void lcd_start_incr(lcd_conn *c, struct evbuffer *in, lcd_proto_req *req,
                    size_t line_len);
void lcd_start_get(lcd_conn *c, struct evbuffer *in, lcd_proto_req *req,
                   size_t line_len);
/* The loop thread gets a finished job back; the replies of every job
 * whose turn has come are written, and parsing goes on.  May free the
 * connection. */
void lcd_conn_job_done(lcd_job *j);
/* 1 if a request needing a job of this kind for name (len bytes; ignored
 * for GET) may start now (see Ordering above). */
int lcd_may_start(const lcd_conn *c, lcd_job_kind kind, const char *name,
                  size_t len);
/* Frees the connection's jobs (none may be in flight). */
void lcd_conn_free_jobs(lcd_conn *c);

void lcd_start_tally(lcd_conn *c, struct evbuffer *in, lcd_proto_req *req,
                     size_t line_len);
/* "<kind> <ERRNAME> <message>[: <detail>]" for rc. */
void lcd_put_error(lcd_conn *c, const char *kind, int rc, const char *detail);

/* lcd_mget.c: the rest of a get line of many keys.  Called while c->mget
 * or c->skip_line is set, before framing a new request: 1 if it consumed
 * input or started a job (call again), 0 if it must wait (more input, or
 * the job before it). */
int lcd_mget_step(lcd_conn *c, struct evbuffer *in);
/* A long line at the head of in that starts a get/gets: consumes the verb
 * and enters c->mget; 0 if the line is not a get. */
int lcd_mget_begin(lcd_conn *c, struct evbuffer *in, const char *p,
                   size_t len);

/* lcd_meta_reply.c: a finished ma or mg job's reply (value: the last id,
 * the tally's total after the change, or the counter's value; hit 0: mg's
 * miss). */
void lcd_put_meta(lcd_conn *c, const lcd_job *j, int hit, int64_t value);
/* "stats tally NAME": a get job answered with STAT lines. */
void lcd_start_stats_tally(lcd_conn *c, struct evbuffer *in, lcd_proto_req *req,
                           size_t line_len);

/* lcd_flush.c */
/* Starts the flusher thread (which sweeps first); 0 or -1. */
int lcd_flusher_start(lcd_server *s);
/* Stops and joins it (a run in progress finishes first). */
void lcd_flusher_stop(lcd_server *s);
/* The final flush at shutdown (every tally, with a sweep); 0 or an LC_E
 * code, logged. */
int lcd_flush_final(lcd_server *s);
/* A snapshot of the flusher's figures. */
void lcd_flusher_figures(lcd_server *s, uint64_t *runs, uint64_t *sweeps,
                         uint64_t *errors, uint64_t *flushed);

/* lcd_stats.c */
void lcd_put_stats(lcd_server *s, struct evbuffer *o, int settings);
/* Loop 0, every second: logs the log's failures, reopens and loss; the
 * state now. */
lc_log_state_t lcd_log_watch(lcd_server *s);
/* "off", "auto" or the segment size (written into buf). */
const char *lcd_prefetch_text(uint64_t prefetch, char buf[24]);

/* lcd_pool.c */
/* Starts the workers; 0 or -1. */
int lcd_pool_start(lcd_server *s);
/* Sets up l's submit and done events; 0 or -1. */
int lcd_pool_attach(lcd_loop *l);
/* Queues j (l's thread); it runs at the end of the loop iteration. */
void lcd_pool_submit(lcd_loop *l, lcd_job *j);
/* After the loops have stopped: lets the workers finish every job, joins
 * them, and hands the finished jobs back to lcd_conn_job_done. */
void lcd_pool_stop(lcd_server *s);
size_t lcd_pool_queued(lcd_server *s);

/* lcd_loops.c */
/* Sets up loop 0 (the caller's thread) and loops 1..n-1 (not started);
 * 0 or -1. */
int lcd_loops_init(lcd_server *s);
/* Starts the threads of loops 1..n-1; 0 or -1. */
int lcd_loops_start(lcd_server *s);
/* Loop 0: gives an accepted socket to the next loop in turn. */
void lcd_loops_accept(lcd_server *s, int fd, const char *peer, int tls);
/* Loop 0: every loop stops reading, answers, closes, then stops. */
void lcd_loops_drain(lcd_server *s);
/* Loop 0: every loop closes its sockets now and stops. */
void lcd_loops_close(lcd_server *s);
/* Called when a connection struct is freed: a draining loop with none
 * left stops (loop 0 once the others have stopped too). */
void lcd_loop_check_drained(lcd_loop *l);
/* Joins the loop threads (after loop 0 returned) and frees the loops. */
void lcd_loops_join(lcd_server *s);
void lcd_loops_free(lcd_server *s);
/* Sums of every loop's figures, and the longest stall of any. */
void lcd_loops_sum(lcd_server *s, lcd_counters *out, uint64_t *stall_max,
                   int *nopen);

#endif /* LCD_H */
