/*
 * tally.c - the tally cases: write-behind counts.
 *
 *   tally-add    throughput: lc_tally_add(h, "views", +1) from N threads
 *                on one shared lc_t with its own fresh log, at the same
 *                thread counts as next; ratio to memcached-incr.
 *   tally-flush  not a timed run: BENCH_TALLIES tallies t0..tK-1 are made
 *                dirty (one lc_tally_add each, from a few threads, untimed),
 *                then ONE lc_tally_flush(h, 0, LC_TALLY_FORCE, &n) is timed:
 *                tallies/s, reported like a prune (a latest-restore.csv row
 *                and a threads=1 row in latest.csv).  Then the durable
 *                writes per tally per window: one tally that already has
 *                its record gets BENCH_TALLY_CHANGES changes in one window,
 *                then a forced flush; the log_writes delta of lc_get_stats
 *                over the changes and the flush must be 1.
 *
 * memcached is flushed (flush_all) before tally-flush, as restore does, so
 * that sums left by an earlier run against the same memcached cannot leak
 * into the counts.
 */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logcounter.h"

#define FILL_THREADS 8

typedef struct tally_priv {
  lc_t *h;
} tally_priv;

static lc_t *open_fresh(const bench_cfg *cfg, const char *name, char *path,
                        size_t size) {
  if (bench_fresh_dir(cfg, name, path, size)) return NULL;
  return bench_open(cfg, path, LC_DURABILITY_DEFAULT);
}

/* ---- tally-add ---- */

static int64_t tally_add_op(void *shared, void *state, char *err, size_t n) {
  (void)state;
  int rc = lc_tally_add(shared, "views", 1);
  if (rc) {
    snprintf(err, n, "lc_tally_add: %s: %s (%s)", lc_err_name(rc),
             lc_strerror(rc), lc_last_detail());
    return -1;
  }
  return 1;
}

int tally_cases_open(const bench_cfg *cfg, case_set *cs) {
  if (!bench_case_selected(cfg, "tally-add")) return 0;
  tally_priv *p = calloc(1, sizeof *p);
  if (p == NULL) return -1;
  cs->tally_priv = p;
  char path[4096];
  if ((p->h = open_fresh(cfg, "tally-add", path, sizeof path)) == NULL)
    return -1;
  workload *w = &cs->w[cs->n++];
  *w = (workload){"tally-add", "views",      1, p->h, NULL,
                  NULL,        tally_add_op, 0, 0,    0, 0};
  return 0;
}

void tally_cases_close(case_set *cs) {
  tally_priv *p = cs->tally_priv;
  if (p == NULL) return;
  lc_stats st;
  if (p->h && lc_get_stats(p->h, &st) == 0 && st.tally_adds)
    printf("library stats, %-12s: %llu adds, %llu windows scheduled (%llu "
           "failed), %llu log writes\n",
           "tally-add", (unsigned long long)st.tally_adds,
           (unsigned long long)st.tally_schedules,
           (unsigned long long)st.tally_schedule_failures,
           (unsigned long long)st.log_writes);
  int rc = lc_close(p->h);
  if (rc)
    fprintf(stderr, "bench: lc_close: %s (%s)\n", lc_strerror(rc),
            lc_last_detail());
  free(p);
  cs->tally_priv = NULL;
}

/* ---- tally-flush ---- */

typedef struct filler {
  pthread_t tid;
  lc_t *h;
  uint64_t from, to; /* tallies t<from> .. t<to - 1> */
  int rc;
} filler;

static void *fill(void *arg) {
  filler *f = arg;
  char name[32];
  for (uint64_t i = f->from; i < f->to && f->rc == 0; i++) {
    snprintf(name, sizeof name, "t%llu", (unsigned long long)i);
    f->rc = lc_tally_add(f->h, name, 1);
    if (f->rc)
      fprintf(stderr, "bench: lc_tally_add %s: %s (%s)\n", name,
              lc_strerror(f->rc), lc_last_detail());
  }
  return NULL;
}

/* Makes t0..t<k-1> dirty with one change each, from a few threads. */
static int make_dirty(lc_t *h, uint64_t k) {
  filler f[FILL_THREADS];
  int started = 0, rc = 0;
  for (int i = 0; i < FILL_THREADS; i++) {
    f[i] = (filler){0, h, k * (uint64_t)i / FILL_THREADS,
                    k * (uint64_t)(i + 1) / FILL_THREADS, 0};
    if (pthread_create(&f[i].tid, NULL, fill, &f[i]) != 0) {
      rc = -1;
      break;
    }
    started++;
  }
  for (int i = 0; i < started; i++) {
    pthread_join(f[i].tid, NULL);
    if (f[i].rc) rc = -1;
  }
  return rc;
}

static bool flush_case(const bench_cfg *cfg, results *res) {
  char path[4096];
  lc_t *h = open_fresh(cfg, "tally-flush", path, sizeof path);
  if (h == NULL) return false;
  uint64_t k = cfg->tallies;
  fprintf(stderr, "bench: making %llu tallies dirty\n", (unsigned long long)k);
  bool ok = make_dirty(h, k) == 0;
  uint64_t before = du_bytes(path), n = 0;
  double secs = 0;
  if (ok) {
    uint64_t t0 = now_ns();
    int rc = lc_tally_flush(h, 0, LC_TALLY_FORCE, &n);
    secs = (double)(now_ns() - t0) / 1e9;
    if (rc)
      fprintf(stderr, "bench: lc_tally_flush: %s (%s)\n", lc_strerror(rc),
              lc_last_detail());
    ok = rc == 0 && n == k && secs > 0;
    if (rc == 0 && n != k)
      fprintf(stderr, "bench: lc_tally_flush wrote %llu of %llu tallies\n",
              (unsigned long long)n, (unsigned long long)k);
  }
  int rc = lc_close(h);
  if (rc)
    fprintf(stderr, "bench: lc_close: %s (%s)\n", lc_strerror(rc),
            lc_last_detail());
  uint64_t after = du_bytes(path);
  rm_rf(path);
  double rate = secs > 0 ? (double)n / secs : 0;
  restore_row *r = results_add_restore(res);
  *r = (restore_row){"tally-flush", "force", k,     0, secs,
                     rate,          before,  after, ok};
  point *p = results_add_point(res);
  *p = (point){"tally-flush", "force",    1,          k,  rate,
               secs * 1e6,    secs * 1e6, secs * 1e6, -1, ok ? 0 : 1,
               0,             0,          0,          false, false, false};
  return ok;
}

/* The log writes of cfg->tally_changes changes of one tally in one window
 * and a forced flush, into res->tally_writes. */
static bool writes_case(const bench_cfg *cfg, results *res) {
  char path[4096];
  lc_t *h = open_fresh(cfg, "tally-writes", path, sizeof path);
  if (h == NULL) return false;
  const char *name = "bench-window";
  uint64_t n = 0;
  /* a long window: every change below falls in the same one */
  int rc = lc_tally_set_window(h, 3600);
  /* the first change ever writes the tally's (empty) record: not counted */
  if (!rc) rc = lc_tally_add(h, name, 1);
  if (!rc) rc = lc_tally_flush(h, 0, LC_TALLY_FORCE, &n);
  lc_stats st0, st1;
  if (!rc) rc = lc_get_stats(h, &st0);
  for (uint64_t i = 0; !rc && i < cfg->tally_changes; i++)
    rc = lc_tally_add(h, name, 1);
  if (!rc) rc = lc_tally_flush(h, 0, LC_TALLY_FORCE, &n);
  if (!rc) rc = lc_get_stats(h, &st1);
  int64_t total = 0, pending = -1;
  if (!rc) rc = lc_tally_get(h, name, &total, &pending, NULL);
  if (rc)
    fprintf(stderr, "bench: tally writes: %s (%s)\n", lc_strerror(rc),
            lc_last_detail());
  int crc = lc_close(h);
  if (crc)
    fprintf(stderr, "bench: lc_close: %s (%s)\n", lc_strerror(crc),
            lc_last_detail());
  rm_rf(path);
  if (rc) return false;
  res->tally_changes = cfg->tally_changes;
  res->tally_writes = (int64_t)(st1.log_writes - st0.log_writes);
  res->tally_flushed = n;
  bool ok = total == (int64_t)cfg->tally_changes + 1 && pending == 0;
  if (!ok)
    fprintf(stderr,
            "bench: tally writes: total %lld pending %lld after %llu "
            "changes\n",
            (long long)total, (long long)pending,
            (unsigned long long)cfg->tally_changes + 1);
  return ok;
}

int tally_run(const bench_cfg *cfg, results *res) {
  memcached_st *mc = mc_open(cfg->memcached);
  if (mc == NULL) return -1;
  memcached_return_t mrc = memcached_flush(mc, 0);
  if (mrc != MEMCACHED_SUCCESS)
    fprintf(stderr, "bench: flush_all: %s\n", memcached_last_error_message(mc));
  memcached_free(mc);
  if (mrc != MEMCACHED_SUCCESS) return -1;
  bool ok = flush_case(cfg, res);
  ok &= writes_case(cfg, res);
  return ok ? 0 : -1;
}
