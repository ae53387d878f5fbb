/*
 * pg.c - the PostgreSQL peer cases, with libpq, one connection per thread:
 *
 *   pg-nextval        default  SELECT nextval('bench_ids'): one id per call
 *   pg-nextval-block  default  SELECT nextval('bench_ids_B')
 *                              FROM generate_series(1, B), B = 100 and
 *                              1000: B ids per call, one round trip
 *
 * "default" is PostgreSQL's default durability (fsync on, synchronous_commit
 * on; each statement is its own transaction).  A sequence logs 32 values
 * ahead in the WAL, and a transaction that wrote such a record flushes the
 * WAL at its commit, before the answer is sent.  The statements are
 * prepared once per connection (PQprepare), so a call is one Bind/Execute/
 * Sync round trip.  Each line has its own sequence, made afresh before the
 * run; each connection checks that the ids it gets strictly increase.  The
 * server's own settings (SHOW fsync, synchronous_commit, ...) go into the
 * peer notes.
 */
#include "peers.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pg_shared {
  const char *conninfo;
  char sql[128];
  uint64_t block;
} pg_shared;

typedef struct pg_priv {
  pg_shared line[3]; /* nextval, block 100, block 1000 */
} pg_priv;

typedef struct pg_thread {
  PGconn *c;
  long long last;
} pg_thread;

/* One line of a libpq message (they end with a newline). */
static void pg_err(char *err, size_t n, const char *what, const char *msg) {
  snprintf(err, n, "%s: %.*s", what, (int)strcspn(msg, "\n"), msg);
}

/* Notices ("sequence ... does not exist, skipping") are not news here. */
static void quiet(void *arg, const char *message) {
  (void)arg, (void)message;
}

static PGconn *pg_connect(const char *conninfo, char *err, size_t n) {
  PGconn *c = PQconnectdb(conninfo);
  if (c == NULL || PQstatus(c) != CONNECTION_OK) {
    pg_err(err, n, "cannot connect to PostgreSQL",
           c ? PQerrorMessage(c) : "out of memory");
    PQfinish(c);
    return NULL;
  }
  PQsetNoticeProcessor(c, quiet, NULL);
  return c;
}

static int pg_thread_open(void *shared, void **state, char *err, size_t n) {
  pg_shared *s = shared;
  pg_thread *t = calloc(1, sizeof *t);
  if (t == NULL) return snprintf(err, n, "out of memory"), -1;
  if ((t->c = pg_connect(s->conninfo, err, n)) == NULL) {
    free(t);
    return -1;
  }
  PGresult *r = PQprepare(t->c, "next", s->sql, 0, NULL);
  if (PQresultStatus(r) != PGRES_COMMAND_OK) {
    pg_err(err, n, "PQprepare", PQerrorMessage(t->c));
    PQclear(r);
    PQfinish(t->c);
    free(t);
    return -1;
  }
  PQclear(r);
  *state = t;
  return 0;
}

static void pg_thread_close(void *state) {
  pg_thread *t = state;
  PQfinish(t->c);
  free(t);
}

static int64_t pg_op(void *shared, void *state, char *err, size_t n) {
  pg_shared *s = shared;
  pg_thread *t = state;
  PGresult *r = PQexecPrepared(t->c, "next", 0, NULL, NULL, NULL, 0);
  int64_t got = (int64_t)s->block;
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    pg_err(err, n, "nextval", PQerrorMessage(t->c));
    got = -1;
  } else if ((uint64_t)PQntuples(r) != s->block) {
    snprintf(err, n, "nextval: %d rows, want %llu", PQntuples(r),
             (unsigned long long)s->block);
    got = -1;
  }
  for (int i = 0; got > 0 && i < PQntuples(r); i++) {
    long long v = strtoll(PQgetvalue(r, i, 0), NULL, 10);
    if (v <= t->last) {
      snprintf(err, n, "nextval went backwards: %lld after %lld", v, t->last);
      got = -1;
    }
    t->last = v;
  }
  PQclear(r);
  return got;
}

/* Runs sql (no result wanted); -1 with the message in err. */
static int exec(PGconn *c, const char *sql, char *err, size_t n) {
  PGresult *r = PQexec(c, sql);
  int ok = PQresultStatus(r) == PGRES_COMMAND_OK ||
           PQresultStatus(r) == PGRES_TUPLES_OK;
  if (!ok) pg_err(err, n, sql, PQerrorMessage(c));
  PQclear(r);
  return ok ? 0 : -1;
}

/* The first column of the first row of sql into buf ("?" on failure). */
static void scalar(PGconn *c, const char *sql, char *buf, size_t size) {
  PGresult *r = PQexec(c, sql);
  snprintf(buf, size, "%s",
           PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0
               ? PQgetvalue(r, 0, 0)
               : "?");
  PQclear(r);
}

/* Fresh sequences for the lines and the server's settings in the notes;
 * -1 (why in err) when the server cannot be used. */
static int prepare(const char *conninfo, results *res, char *err, size_t n) {
  PGconn *c = pg_connect(conninfo, err, n);
  if (c == NULL) return -1;
  static const char *seqs[3] = {"bench_ids", "bench_ids_100", "bench_ids_1000"};
  char sql[160];
  int rc = 0;
  for (int i = 0; rc == 0 && i < 3; i++) {
    snprintf(sql, sizeof sql, "DROP SEQUENCE IF EXISTS %s; CREATE SEQUENCE %s",
             seqs[i], seqs[i]);
    rc = exec(c, sql, err, n);
  }
  if (rc == 0) {
    char ver[32], fsync[16], commit[16], method[24], fpw[16], note[200];
    scalar(c, "SHOW server_version", ver, sizeof ver);
    scalar(c, "SHOW fsync", fsync, sizeof fsync);
    scalar(c, "SHOW synchronous_commit", commit, sizeof commit);
    scalar(c, "SHOW wal_sync_method", method, sizeof method);
    scalar(c, "SHOW full_page_writes", fpw, sizeof fpw);
    snprintf(note, sizeof note,
             "PostgreSQL %.*s: fsync %s, synchronous_commit "
             "%s, wal_sync_method %s, full_page_writes %s",
             (int)strcspn(ver, " "), ver, fsync, commit, method, fpw);
    peer_note(res, note);
  }
  PQfinish(c);
  return rc;
}

static int add(case_set *cs, const char *kase, pg_shared *s) {
  if (cs->n >= BENCH_LINES_MAX)
    return fprintf(stderr, "bench: too many case lines\n"), -1;
  cs->w[cs->n++] = (workload){kase,  "default",           s->block,
                              s,     pg_thread_open,      pg_thread_close,
                              pg_op, BENCH_PEER_WIDE_MAX, BENCH_PEER_SHARE,
                              0,     0};
  return 0;
}

int pg_cases_open(const bench_cfg *cfg, case_set *cs, results *res,
                  void **priv) {
  bool one = bench_case_selected(cfg, "pg-nextval");
  bool block = bench_case_selected(cfg, "pg-nextval-block");
  if (!one && !block) return 0;
  const char *why = NULL;
  char err[256];
  if (cfg->pg == NULL)
    why = cfg->cases ? "not started (bench/run.sh --peers starts it)" : "";
  else if (strncmp(cfg->pg, "none:", 5) == 0)
    why = cfg->pg + 5 + (cfg->pg[5] == ' ');
  else if (prepare(cfg->pg, res, err, sizeof err) != 0)
    why = err;
  if (why) {
    if (*why && one) peer_skip(res, "pg-nextval", "default", 1, why);
    if (*why && block) {
      peer_skip(res, "pg-nextval-block", "default", 100, why);
      peer_skip(res, "pg-nextval-block", "default", 1000, why);
    }
    return 0;
  }
  pg_priv *p = calloc(1, sizeof *p);
  if (p == NULL) return -1;
  *priv = p;
  p->line[0] = (pg_shared){cfg->pg, "SELECT nextval('bench_ids')", 1};
  p->line[1] = (pg_shared){cfg->pg,
                           "SELECT nextval('bench_ids_100') FROM "
                           "generate_series(1, 100)",
                           100};
  p->line[2] = (pg_shared){cfg->pg,
                           "SELECT nextval('bench_ids_1000') FROM "
                           "generate_series(1, 1000)",
                           1000};
  int rc = 0;
  if (one) rc |= add(cs, "pg-nextval", &p->line[0]);
  if (block)
    rc |= add(cs, "pg-nextval-block", &p->line[1]) |
          add(cs, "pg-nextval-block", &p->line[2]);
  return rc;
}

void pg_cases_close(void *priv) {
  free(priv);
}
