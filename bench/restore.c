/*
 * restore.c - the restore and prune cases, on logs of 10,000, 1,000,000
 * and 10,000,000 records (those up to BENCH_RECORDS_MAX, plus that maximum
 * itself).
 *
 * For each size: build the log fast with unsynced LevelDB write batches in
 * the library's record format (one record per value 1..N); time the first
 * lc_next after memcached_flush, on a fresh handle ("cold": the handle also
 * loads the counter and writes its synced reservation) and on a handle
 * that has already allocated ("warm": the reverse seek, the add and the
 * append alone); prune the oldest 90% (below = the 90th percentile value)
 * and time it, with the directory's size before and after; then time both
 * restores again on the pruned log.  Each restore is checked: the stats
 * must show exactly one restore and the value must be above every earlier
 * one.  Timed restores are repeated; the median is reported.
 */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/format.h"

#define NAME "bench-restore"
#define BATCH 10000

/* Writes records 1..n; then, when settle is given, compacts the whole log
 * (timed into *settle) so that it looks like a log that has lived a while
 * rather than one with fresh level-0 files still being compacted. */
static int build_log(const char *path, uint64_t n, double *settle) {
  leveldb_t *db = db_open(path, 0);
  if (db == NULL) return -1;
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  char key[LC_NAME_MAX + 10], *err = NULL;
  unsigned char val[LC__RECORD_LEN];
  size_t plen = lc__key_record_prefix(key, NAME, strlen(NAME));
  int64_t t = lc__clock_now_us() - (int64_t)n * 1000; /* a record per ms */
  leveldb_writebatch_put(b, LC__FORMAT_KEY, strlen(LC__FORMAT_KEY),
                         LC__FORMAT_VALUE, strlen(LC__FORMAT_VALUE));
  for (uint64_t v = 1; v <= n && err == NULL; v++) {
    lc__key_be64_put((unsigned char *)key + plen, v);
    lc__key_record_encode(val, 1, t + (int64_t)v * 1000);
    leveldb_writebatch_put(b, key, plen + 8, (const char *)val, sizeof val);
    if (v % BATCH == 0 || v == n) {
      leveldb_write(db, wo, b, &err);
      leveldb_writebatch_clear(b);
    }
  }
  if (err) fprintf(stderr, "bench: building %s: %s\n", path, err);
  leveldb_free(err);
  if (settle && err == NULL) {
    uint64_t t0 = now_ns();
    leveldb_compact_range(db, NULL, 0, NULL, 0);
    *settle = (double)(now_ns() - t0) / 1e9;
  }
  leveldb_writebatch_destroy(b);
  leveldb_writeoptions_destroy(wo);
  leveldb_close(db);
  return err ? -1 : 0;
}

/* One lc_next after memcached lost everything; false unless it restored
 * and went up. */
static bool timed_restore(lc_t *h, memcached_st *mc, int64_t *last,
                          double *secs) {
  lc_stats before, after;
  lc_get_stats(h, &before);
  memcached_return_t mrc = memcached_flush(mc, 0);
  if (mrc != MEMCACHED_SUCCESS) {
    fprintf(stderr, "bench: flush_all: %s\n", memcached_last_error_message(mc));
    return false;
  }
  int64_t v = 0;
  uint64_t t0 = now_ns();
  int rc = lc_next(h, NAME, &v);
  *secs = (double)(now_ns() - t0) / 1e9;
  lc_get_stats(h, &after);
  if (rc) {
    fprintf(stderr, "bench: restore: %s (%s)\n", lc_strerror(rc),
            lc_last_detail());
    return false;
  }
  bool ok = after.restores == before.restores + 1 && v > *last;
  if (!ok)
    fprintf(stderr, "bench: restore gave %lld after %lld, %llu restores\n",
            (long long)v, (long long)*last,
            (unsigned long long)(after.restores - before.restores));
  *last = v;
  return ok;
}

static double nearest_rank(const double *sorted, int n, double q) {
  int i = (int)ceil(q * n) - 1;
  return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* Times cfg->restore_repeats restores, cold or warm, and adds the rows. */
static bool restores(const bench_cfg *cfg, results *res, const char *path,
                     memcached_st *mc, bool cold, uint64_t records,
                     uint64_t pruned, int64_t *last, double incr_per_s) {
  double t[BENCH_MAX_RUNS] = {0};
  int n = 0;
  bool ok = true;
  lc_t *h = NULL;
  while (n < cfg->restore_repeats && ok) {
    if (h == NULL) {
      if ((h = bench_open(cfg, path, LC_DURABILITY_DEFAULT)) == NULL)
        return false;
      int64_t v; /* warm: the handle has allocated before the loss */
      if (!cold) {
        ok = lc_next(h, NAME, &v) == 0;
        if (ok) *last = v;
      }
    }
    ok = ok && timed_restore(h, mc, last, &t[n++]);
    if (cold) {
      lc_close(h);
      h = NULL;
    }
  }
  lc_close(h);
  double med = median(t, n); /* sorts t */
  uint64_t bytes = du_bytes(path);
  char mode[24];
  snprintf(mode, sizeof mode, "%s%s", cold ? "cold" : "warm",
           pruned ? "-pruned" : "");
  restore_row *r = results_add_restore(res);
  *r = (restore_row){"restore", "", records - pruned, pruned, med, -1, bytes,
                     bytes,     ok};
  snprintf(r->mode, sizeof r->mode, "%s", mode);
  point *p = results_add_point(res);
  *p = (point){"restore",
               "",
               1,
               records,
               med > 0 ? 1 / med : 0,
               med * 1e6,
               nearest_rank(t, n, 0.99) * 1e6,
               nearest_rank(t, n, 0.999) * 1e6,
               -1,
               ok ? 0 : 1,
               0, 0, 0, false, false, false};
  snprintf(p->mode, sizeof p->mode, "%s", mode);
  if (incr_per_s > 0) p->ratio = p->ids_per_s / incr_per_s;
  return ok;
}

static bool prune(const bench_cfg *cfg, results *res, const char *path,
                  uint64_t records, uint64_t *deleted) {
  uint64_t before = du_bytes(path);
  lc_t *h = bench_open(cfg, path, LC_DURABILITY_DEFAULT);
  if (h == NULL) return false;
  lc_prune_opts o = {.below = (int64_t)(records / 10 * 9) + 1};
  lc_prune_result pr = {0};
  uint64_t t0 = now_ns();
  int rc = lc_prune(h, NAME, &o, &pr);
  double secs = (double)(now_ns() - t0) / 1e9;
  if (rc)
    fprintf(stderr, "bench: prune: %s (%s)\n", lc_strerror(rc),
            lc_last_detail());
  lc_close(h);
  uint64_t after = du_bytes(path);
  bool ok = rc == 0 && pr.deleted > 0 && secs > 0;
  double rate = secs > 0 ? (double)pr.deleted / secs : 0;
  restore_row *r = results_add_restore(res);
  *r = (restore_row){"prune", "below-90pct", records, pr.deleted, secs,
                     rate,    before,        after,   ok};
  point *p = results_add_point(res);
  *p = (point){"prune",    "below-90pct", 1,          records, rate,
               secs * 1e6, secs * 1e6,    secs * 1e6, -1,      ok ? 0 : 1,
               0,          0,             0,          false,   false, false};
  *deleted = pr.deleted;
  return ok;
}

static bool one_size(const bench_cfg *cfg, results *res, memcached_st *mc,
                     uint64_t n, double incr_per_s) {
  char path[4096];
  snprintf(path, sizeof path, "%s/restore-%llu", cfg->dir,
           (unsigned long long)n);
  if (rm_rf(path) != 0 || mkdir_p(cfg->dir) != 0) return false;
  fprintf(stderr, "bench: building a log of %llu records\n",
          (unsigned long long)n);
  uint64_t t0 = now_ns();
  double settle = 0;
  int rc = build_log(path, n, &settle);
  double secs = (double)(now_ns() - t0) / 1e9 - settle;
  uint64_t bytes = du_bytes(path);
  restore_row *r = results_add_restore(res);
  *r = (restore_row){"build", "write-batch", n,
                     0,       secs,          secs > 0 ? (double)n / secs : 0,
                     0,       bytes,         rc == 0};
  if (rc) return false;
  r = results_add_restore(res);
  *r =
      (restore_row){"build", "compact-all", n,
                    0,       settle,        settle > 0 ? (double)n / settle : 0,
                    bytes,   bytes,         true};
  int64_t last = 0;
  uint64_t deleted = 0;
  bool ok = restores(cfg, res, path, mc, true, n, 0, &last, incr_per_s);
  ok &= restores(cfg, res, path, mc, false, n, 0, &last, incr_per_s);
  ok &= prune(cfg, res, path, n, &deleted);
  ok &= restores(cfg, res, path, mc, true, n, deleted, &last, incr_per_s);
  ok &= restores(cfg, res, path, mc, false, n, deleted, &last, incr_per_s);
  rm_rf(path);
  return ok;
}

int restore_run(const bench_cfg *cfg, results *res, double incr_per_s) {
  static const uint64_t sizes[] = {10000, 1000000, 10000000};
  memcached_st *mc = mc_open(cfg->memcached);
  if (mc == NULL) return -1;
  bool ok = true;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    if (sizes[i] < cfg->records_max)
      ok &= one_size(cfg, res, mc, sizes[i], incr_per_s);
  ok &= one_size(cfg, res, mc, cfg->records_max, incr_per_s);
  memcached_free(mc);
  return ok ? 0 : -1;
}
