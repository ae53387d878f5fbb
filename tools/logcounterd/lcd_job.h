/*
 * lcd_job.h - jobs: one unit of work (an incr run, a get, a tally
 * change, a burst of first uses), owned by its connection and reused;
 * how a request becomes one and how its replies are written, in request
 * order (lcd_jobs.c, lcd_mget.c for get lines of many keys,
 * lcd_meta_reply.c for ma/mg).  Every function here runs on the
 * connection's loop thread; the pool (lcd_pool.h) hands a job to a
 * worker and back.
 */
#ifndef LCD_JOB_H
#define LCD_JOB_H

#include "lcd_proto.h"
#include "logcounter.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct evbuffer;
typedef struct lcd_conn lcd_conn;

#define LCD_RUN_MAX 64 /* pipelined incr lines merged into a job */

/* MANY: incr of several counters' first uses, pipelined one after another
 * (lcd_jobs.c), served by one lc_next_each. */
typedef enum {
  LCD_JOB_INCR,
  LCD_JOB_GET,
  LCD_JOB_TALLY,
  LCD_JOB_MANY
} lcd_job_kind;

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
  /* INCR, TALLY: the hash of the name (nhash[0]); MANY: of each
   * request's; filt: one bit of each of them (lcd_jobs.c, so that
   * lcd_may_start passes over most jobs without comparing names) */
  uint32_t nhash[LCD_RUN_MAX];
  uint64_t filt[4];
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

/* A singly linked list of jobs (by next) with its tail and length. */
typedef struct lcd_jlist {
  lcd_job *head, *tail;
  size_t n;
} lcd_jlist;

/* A tally change refused because of what the client sent (nothing was
 * applied): CLIENT_ERROR, not SERVER_ERROR. */
static inline int lcd_client_caused(int rc) {
  return rc == LC_ETALLYRANGE || rc == LC_EDELTA || rc == LC_ENAME;
}

/* The names a job holds, for lcd_may_start (pure; test_proto.c): the
 * hash of a name of n bytes (FNV-1a); request i of j (INCR, TALLY: 0) is
 * of the name of hash h (its nhash, and its bit in filt: the top 8); and
 * whether j holds the name of len bytes and hash h (its request 0, or
 * with many any of its nreq), comparing names only on an equal hash. */
static inline uint32_t lcd_job_name_hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

static inline void lcd_job_name(lcd_job *j, int i, uint32_t h) {
  j->nhash[i] = h;
  j->filt[h >> 30] |= (uint64_t)1 << ((h >> 24) & 63);
}

static inline int lcd_job_holds(const lcd_job *j, int many, const char *name,
                                size_t len, uint32_t h) {
  if (!((j->filt[h >> 30] >> ((h >> 24) & 63)) & 1)) return 0;
  for (int i = 0; i < (many ? j->nreq : 1); i++) {
    const char *k = j->names + (many ? j->name_off[i] : 0);
    if (j->nhash[i] == h && strncmp(k, name, len) == 0 && k[len] == '\0')
      return 1;
  }
  return 0;
}

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
/* A get line of several pieces starts: its VALUE lines are held (0, or
 * -1 out of memory). */
int lcd_mget_hold(lcd_conn *c);
/* Where a get job's VALUE lines go: the held answer, or the output. */
struct evbuffer *lcd_mget_out(lcd_conn *c);
/* The line's END: the held answer goes out, then END. */
void lcd_mget_end(lcd_conn *c);
/* The line is refused (its error follows): the held answer is dropped.
 * Also at close. */
void lcd_mget_drop(lcd_conn *c);

/* lcd_meta_reply.c: a finished ma or mg job's reply (value: the last id,
 * the tally's total after the change, or the counter's value; hit 0: mg's
 * miss). */
void lcd_put_meta(lcd_conn *c, const lcd_job *j, int hit, int64_t value);
/* "stats tally NAME": a get job answered with STAT lines. */
void lcd_start_stats_tally(lcd_conn *c, struct evbuffer *in, lcd_proto_req *req,
                           size_t line_len);

#endif /* LCD_JOB_H */
