/*
 * memory.c - what a counter costs at rest, for the numbers behind idle
 * eviction (lc_options.idle_evict_ms): RSS and log size with many names,
 * the cost of a counter's first call after eviction, and restart time.
 * Built by `make bench-memory` as $BUILD/bench-memory; not part of the
 * suite.  Needs a memcached (LOGCOUNTER_MEMCACHED, as the CLI reads it;
 * BENCH_TIMEOUT_MS sets the library's timeout).
 *
 *   bench-memory plant DIR N
 *       A log in DIR (made by lc_open) with N names "m<i>", each with one
 *       record (value 1) and a reservation of 1, written straight into
 *       LevelDB in batches (a first use per name would take hours at 10M).
 *       Prints the log's size and the time taken.
 *   bench-memory run DIR N THREADS EVICT_MS
 *       Opens DIR (the restart time; the log may hold more names than
 *       N), then THREADS threads use names m0..m(N-1) once each, 100
 *       at a time through lc_next_each (first uses: loaded from the log,
 *       claimed, seeded; one synced write per 100), and RSS is printed; then,
 *       with EVICT_MS > 0, it waits until all are evicted, prints RSS
 *       again, and times one call on each of the first 10,000 (the
 *       reload after eviction: the log's reads, the claim, an increment,
 *       the record).  Last, lc_close's time (wall and this process's
 *       CPU, every thread's).
 *
 * Prefetch is auto unless LOGCOUNTER_PREFETCH says otherwise (off|auto|N).
 * RSS is RssAnon from /proc/self/status (LevelDB maps its tables: those
 * pages are page cache, RssFile, and not counted); LevelDB's share of it
 * (memtables and block cache: lc_get_log_memory) is printed beside it, so that the counters' own bytes can be told apart.
 * Output lines are "key value".
 */
#include "log/log.h" /* the records a plant writes, as the library does */
#include "common.h"

#include <leveldb/c.h>
#include <malloc.h>
#include <sys/resource.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static double now_s(void) { return (double)common_mono_ns() / 1e9; }

/* Resident anonymous memory (the heap: counters, LevelDB's caches) in
 * KiB; RssFile (LevelDB's tables, mapped) is page cache, not counted. */
static long rss_kb(void) {
  long kb = 0;
  char line[256];
  FILE *f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "RssAnon: %ld", &kb) == 1) break;
  if (f) fclose(f);
  return kb;
}

/* The allocator's view (every arena): bytes in use, free inside the
 * arenas, and mmapped, in KiB; with RssAnon it tells the counters' own
 * bytes from fragmentation. */
static void heap_line(const char *when) {
  struct mallinfo2 m = mallinfo2();
  printf("heap_kb_%s in_use %zu free %zu mmapped %zu\n", when,
         m.uordblks / 1024, m.fordblks / 1024, m.hblkhd / 1024);
}

static long long dir_bytes(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "du -sb '%s' 2>/dev/null", dir);
  long long n = -1;
  FILE *p = popen(cmd, "r");
  if (p) {
    if (fscanf(p, "%lld", &n) != 1) n = -1;
    pclose(p);
  }
  return n;
}

static void options(lc_options *o, const char *dir, int64_t evict_ms) {
  lc_options_init(o);
  o->db_path = dir;
  o->memcached = getenv("LOGCOUNTER_MEMCACHED");
  o->prefetch = LC_PREFETCH_AUTO; /* or LOGCOUNTER_PREFETCH, as the CLI */
  const char *pf = getenv("LOGCOUNTER_PREFETCH");
  if (pf && lc_prefetch_parse(pf, &o->prefetch) != 0)
    o->prefetch = LC_PREFETCH_AUTO;
  o->idle_evict_ms = evict_ms;
  o->max_counters = 100000000;
  /* BENCH_TIMEOUT_MS: memcached's timeout (a loaded shared machine) */
  const char *t = getenv("BENCH_TIMEOUT_MS");
  if (t) o->timeout_ms = atoi(t);
}

static int die(const char *what, int rc) {
  fprintf(stderr, "bench-memory: %s: %s (%s)\n", what, lc_err_name(rc),
          lc_last_detail());
  return 1;
}

static int plant(const char *dir, long n) {
  lc_options o;
  lc_t *h;
  options(&o, dir, 0);
  int rc = lc_open(&o, &h);
  if (rc) return die("lc_open", rc);
  lc_close(h);
  double t0 = now_s();
  char *err = NULL;
  leveldb_options_t *lo = leveldb_options_create();
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  leveldb_t *db = leveldb_open(lo, dir, &err);
  if (err) {
    fprintf(stderr, "bench-memory: leveldb_open: %s\n", err);
    return 1;
  }
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  char name[32];
  int64_t now = lc__clock_now_us();
  for (long i = 0; i < n && !err; i++) {
    int len = snprintf(name, sizeof name, "m%ld", i);
    lc__log_batch_record(b, name, (size_t)len, 1, LC_RECORD_BLOCK, 1, now);
    lc__log_batch_reservation(b, name, (size_t)len, 1);
    if (i % 10000 == 9999 || i == n - 1) {
      leveldb_write(db, wo, b, &err);
      leveldb_writebatch_clear(b);
    }
  }
  leveldb_writebatch_destroy(b);
  leveldb_close(db);
  leveldb_writeoptions_destroy(wo);
  leveldb_options_destroy(lo);
  if (err) {
    fprintf(stderr, "bench-memory: leveldb_write: %s\n", err);
    return 1;
  }
  printf("planted_names %ld\nplant_seconds %.1f\nlog_bytes %lld\n", n,
         now_s() - t0, dir_bytes(dir));
  return 0;
}

/* This process's CPU time (user + system, every thread), in seconds. */
static double cpu_s(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

typedef struct part {
  pthread_t t;
  lc_t *h;
  long n, from, step;
  int rc;
  char why[256];
} part;

/* Uses names m<from>, m<from+step>, ... once each, BATCH at a time
 * through lc_next_each (first uses sharing their round trips and synced
 * write, as a burst of new names would). */
#define BATCH 100
static void *use(void *arg) {
  part *p = arg;
  char names[BATCH][32];
  lc_each v[BATCH];
  for (long i = p->from; i < p->n && !p->rc;) {
    size_t k = 0;
    for (; k < BATCH && i < p->n; k++, i += p->step) {
      snprintf(names[k], sizeof names[k], "m%ld", i);
      v[k] = (lc_each){.name = names[k], .n = 1};
    }
    p->rc = lc_next_each(p->h, v, k);
  }
  if (p->rc) snprintf(p->why, sizeof p->why, "lc_next_each: %s", lc_last_detail());
  return NULL;
}

static int run(const char *dir, long n, int threads, int64_t evict_ms) {
  lc_options o;
  lc_t *h;
  options(&o, dir, evict_ms);
  o.pool_size = threads + 2;
  long rss0 = rss_kb();
  double t0 = now_s();
  int rc = lc_open(&o, &h);
  if (rc) return die("lc_open", rc);
  printf("open_seconds %.3f\nrss_kb_before_open %ld\nrss_kb_open %ld\n",
         now_s() - t0, rss0, rss_kb());
  heap_line("open");
  char name[32];
  int64_t v;
  part *p = calloc((size_t)threads, sizeof *p);
  t0 = now_s();
  for (int i = 0; i < threads; i++) {
    p[i] = (part){.h = h, .n = n, .from = i, .step = threads};
    pthread_create(&p[i].t, NULL, use, &p[i]);
  }
  for (int i = 0; i < threads; i++) {
    pthread_join(p[i].t, NULL);
    if (p[i].rc) return die(p[i].why, p[i].rc);
  }
  free(p);
  double first = now_s() - t0;
  lc_stats st;
  lc_get_stats(h, &st);
  printf("first_use_per_s %.0f\nrss_kb_all_used %ld\ncounters %llu\n"
         "log_syncs %llu\nincrements %llu\nrestores %llu\n",
         (double)n / first, rss_kb(), (unsigned long long)st.counters,
         (unsigned long long)st.log_syncs, (unsigned long long)st.increments,
         (unsigned long long)st.restores);
  uint64_t lv = 0;
  if ((rc = lc_get_log_memory(h, &lv)) != 0) return die("lc_get_log_memory", rc);
  printf("leveldb_kb_all_used %llu\n", (unsigned long long)(lv / 1024));
  heap_line("all_used");
  if (evict_ms > 0) {
    t0 = now_s();
    do {
      sleep(1);
      lc_get_stats(h, &st);
    } while (st.counters > 0 && now_s() - t0 < 3600);
    printf("evicted %llu\nevict_wait_seconds %.1f\nrss_kb_all_evicted %ld\n",
           (unsigned long long)st.evictions, now_s() - t0, rss_kb());
    long k = n < 10000 ? n : 10000;
    t0 = now_s();
    for (long i = 0; i < k; i++) {
      snprintf(name, sizeof name, "m%ld", i);
      if ((rc = lc_next(h, name, &v)) != 0) return die(name, rc);
    }
    printf("reload_us_per_call %.1f\n", (now_s() - t0) * 1e6 / (double)k);
  }
  t0 = now_s();
  double cpu0 = cpu_s();
  rc = lc_close(h);
  printf("close_seconds %.3f\nclose_cpu_seconds %.3f\nlog_bytes %lld\n",
         now_s() - t0, cpu_s() - cpu0, dir_bytes(dir));
  return rc ? die("lc_close", rc) : 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 4 && strcmp(argv[1], "plant") == 0)
    return plant(argv[2], atol(argv[3]));
  if (argc == 6 && strcmp(argv[1], "run") == 0)
    return run(argv[2], atol(argv[3]), atoi(argv[4]), atoll(argv[5]));
  fprintf(stderr,
          "usage: bench-memory plant DIR N | run DIR N THREADS EVICT_MS\n");
  return 2;
}
