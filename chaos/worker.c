/*
 * worker.c - "chaos worker": the embedded owner.  One process, THREADS
 * client threads sharing one lc_t (counters e0..e2 and tallies t0, t1),
 * a flusher thread for the tallies, the pause seam, and an
 * acknowledgement record per value received (appended only after the call
 * returned it).  A failed call (LC_ELOG while a disk fault has the log
 * failed, until the library has reopened it) is not acknowledged; the
 * thread goes on.  The flusher also adds the handle's log failures and
 * recoveries (lc_get_log_status) to the control block.  The driver
 * SIGKILLs and restarts it; SIGTERM ends it cleanly: a final sweep and
 * flush of the tallies, their totals written to FINAL, lc_close.
 *
 * With --baseline seed the counters are served by the original, UNSAFE
 * LogCounter algorithm instead (adapted from bench/cases.c seed_op): incr;
 * on any failure the log's largest value + 1 stored with a plain set; the
 * record written afterwards, unsynced, its failure ignored.
 *
 *   chaos worker DIR MEMCACHED CTL OUT FINAL INCARNATION THREADS
 *                TIMEOUT_MS SEED MODE(default|sync|prefetch) BASELINE(0|1)
 * Exit status: 0 clean, 3 the log could not be opened.
 */
#include "chaos.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h" /* the seam; record key and value formats */

static atomic_int stopping; /* set by SIGTERM, read by every thread */
static ch_ctl *ctl;
static lc_t *h;
static int out_fd;
static unsigned incarnation;
static uint64_t seed;
static const char *mc_config;
static int timeout_ms;
static bool baseline;
static leveldb_t *sdb; /* baseline: the seed algorithm's log */
static leveldb_writeoptions_t *swo;
static leveldb_readoptions_t *sro;

static void on_term(int sig) {
  (void)sig;
  stopping = 1;
}

/* The seam: the next allocation that passes waits here until released. */
static void pause_hook(const char *name) {
  (void)name;
  int one = 1;
  if (!atomic_compare_exchange_strong(&ctl->pause_req, &one, 0)) return;
  atomic_store(&ctl->paused, 1);
  atomic_fetch_add(&ctl->pauses, 1);
  for (int i = 0; i < 5000 && !atomic_load(&ctl->pause_release); i++)
    ch_sleep_ms(1);
  atomic_store(&ctl->pause_release, 0);
  atomic_store(&ctl->paused, 0);
}

/* ---- the seed algorithm (UNSAFE, for the baseline) ---- */

static memcached_st *seed_mc(void) {
  memcached_st *mc = memcached(mc_config, strlen(mc_config));
  if (mc == NULL) return NULL;
  memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT,
                         (uint64_t)timeout_ms);
  memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_POLL_TIMEOUT,
                         (uint64_t)timeout_ms);
  memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_SND_TIMEOUT,
                         (uint64_t)timeout_ms * 1000);
  memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_RCV_TIMEOUT,
                         (uint64_t)timeout_ms * 1000);
  return mc;
}

static uint64_t seed_db_max(const char *prefix, size_t plen) {
  leveldb_iterator_t *it = leveldb_create_iterator(sdb, sro);
  char key[64];
  memcpy(key, prefix, plen);
  memset(key + plen, 0xff, 9);
  leveldb_iter_seek(it, key, plen + 9);
  if (leveldb_iter_valid(it))
    leveldb_iter_prev(it);
  else
    leveldb_iter_seek_to_last(it);
  uint64_t v = 0;
  size_t klen;
  if (leveldb_iter_valid(it)) {
    const char *k = leveldb_iter_key(it, &klen);
    if (klen == plen + 8 && memcmp(k, prefix, plen) == 0)
      v = lc__key_be64_get((const unsigned char *)k + plen);
  }
  leveldb_iter_destroy(it);
  return v;
}

/* One id by the seed algorithm; always "succeeds", as the original did. */
static int64_t seed_next(memcached_st *mc, int obj) {
  char key[16], prefix[32];
  const char *name = ch_counter_name(obj);
  int klen = snprintf(key, sizeof key, "sd:%s", name);
  size_t plen = lc__key_record_prefix(prefix, name, strlen(name));
  uint64_t v = 0;
  if (memcached_increment(mc, key, (size_t)klen, 1, &v) != MEMCACHED_SUCCESS) {
    v = seed_db_max(prefix, plen) + 1;
    char buf[24];
    int len = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    memcached_set(mc, key, (size_t)klen, buf, (size_t)len, 0, 0);
  }
  pause_hook(name); /* the seam, at the same place as in counter.c */
  char rkey[64];
  unsigned char val[LC__RECORD_LEN];
  memcpy(rkey, prefix, plen);
  lc__key_be64_put((unsigned char *)rkey + plen, v);
  lc__key_record_encode(val, 1, lc__clock_now_us());
  char *err = NULL;
  leveldb_put(sdb, swo, rkey, plen + 8, (const char *)val, sizeof val, &err);
  leveldb_free(err);
  return (int64_t)v;
}

/* ---- client threads ---- */

static void *client(void *arg) {
  unsigned t = (unsigned)(uintptr_t)arg;
  uint64_t rng = seed ^ ((uint64_t)incarnation << 32) ^ (t * 0x9e3779b9u);
  memcached_st *mc = baseline ? seed_mc() : NULL;
  if (baseline && mc == NULL) return NULL;
  uint32_t me = incarnation * 256 + t;
  while (!stopping) {
    ch_rec r = {.client = me};
    if (ch_rand(&rng) % 100 < 15) { /* a tally change */
      int obj = (int)(ch_rand(&rng) % CH_EMB_TALLIES);
      int64_t delta = (int64_t)ch_rand_between(&rng, 1, 100);
      r.kind = REC_TALLY_TRY, r.obj = (uint8_t)obj, r.value = delta;
      r.t_ns = ch_now_ns();
      ch_rec_write(out_fd, &r);
      atomic_fetch_add(&ctl->tally_calls, 1);
      if (lc_tally_add(h, ch_tally_name(obj), delta) == 0) {
        r.kind = REC_TALLY_ACK;
        r.t_ns = ch_now_ns();
        ch_rec_write(out_fd, &r);
      } else {
        atomic_fetch_add(&ctl->tally_failed, 1);
        ch_sleep_ms(1); /* a fault: no need to spin */
      }
      continue;
    }
    int obj = (int)(ch_rand(&rng) % CH_EMB_COUNTERS);
    uint64_t n = baseline ? 1 : ch_block_size(&rng);
    atomic_fetch_add(&ctl->calls, 1);
    atomic_fetch_add(&ctl->ids_attempted, n);
    int64_t first = 0;
    int rc = 0;
    r.t0_ns = ch_now_ns();
    if (baseline)
      first = seed_next(mc, obj);
    else
      rc = lc_next_n(h, ch_counter_name(obj), n, &first);
    if (rc) {
      atomic_fetch_add(&ctl->calls_failed, 1);
      if (rc == LC_ELOG) atomic_fetch_add(&ctl->calls_elog, 1);
      r.kind = REC_FAIL, r.obj = (uint8_t)obj;
      r.value = rc == LC_ELOG ? CH_FAIL_ELOG : CH_FAIL_OTHER;
      r.t_ns = ch_now_ns();
      ch_rec_write(out_fd, &r);
      ch_sleep_ms(1);
      continue;
    }
    r.kind = REC_ID, r.obj = (uint8_t)obj, r.n = (uint32_t)n;
    r.value = first + (int64_t)n - 1;
    r.t_ns = ch_now_ns();
    ch_rec_write(out_fd, &r);
    atomic_fetch_add(&ctl->ids_acked, n);
  }
  if (mc) memcached_free(mc);
  return NULL;
}

/* The prune fault: each counter's records below a point up to 5000 under
 * where it stands are deleted (the newest record and the reservation must
 * survive: the nemesis flushes memcached next).  The point is published
 * before the prune starts, so the checker never expects those records. */
static void prune(uint64_t *rng) {
  for (int c = 0; c < CH_EMB_COUNTERS && !baseline; c++) {
    int64_t cur = 0;
    if (lc_current(h, ch_counter_name(c), &cur) != 0) continue;
    int64_t below = cur - (int64_t)ch_rand_between(rng, 0, 5000);
    if (below < 1) continue;
    int64_t old = atomic_load(&ctl->pruned_below[c]);
    while (below > old &&
           !atomic_compare_exchange_weak(&ctl->pruned_below[c], &old, below)) {
    }
    lc_prune_opts o = {.below = below};
    lc_prune_result res;
    lc_prune(h, ch_counter_name(c), &o, &res);
  }
  atomic_store(&ctl->prune_req, 2);
}

/* Adds what the log's status counted since the last look to the control
 * block (so the counts survive this incarnation). */
static void log_status(void) {
  static uint64_t failures, recoveries;
  lc_log_status st;
  if (lc_get_log_status(h, &st) != 0) return;
  if (st.failures > failures)
    atomic_fetch_add(&ctl->log_failures, st.failures - failures);
  if (st.recoveries > recoveries)
    atomic_fetch_add(&ctl->log_recoveries, st.recoveries - recoveries);
  atomic_store(&ctl->log_failed, st.state != LC_LOG_OK);
  failures = st.failures, recoveries = st.recoveries;
}

/* Applies every tally's pending changes every 100 ms.  It sweeps: a
 * forced flush alone only sees tallies scheduled, and a tally changed again
 * within the window of its last flush is not scheduled anew (nor is the
 * queue of a killed incarnation), so what memcached could lose would be
 * up to a window of changes rather than 100 ms of them. */
static void *flusher(void *arg) {
  (void)arg;
  uint64_t rng = seed ^ 0x5eed ^ incarnation;
  while (!stopping) {
    ch_sleep_ms(100);
    lc_tally_flush(h, 0, LC_TALLY_FORCE | LC_TALLY_SWEEP, NULL);
    if (atomic_load(&ctl->prune_req) == 1) prune(&rng);
    log_status();
  }
  return NULL;
}

static int open_seed_log(const char *dir) {
  char path[1024], *err = NULL;
  snprintf(path, sizeof path, "%s/seed", dir);
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, 1);
  for (int i = 0; i < 100 && !stopping; i++) {
    leveldb_free(err);
    err = NULL;
    sdb = leveldb_open(o, path, &err);
    if (sdb) break;
    ch_sleep_ms(50);
  }
  leveldb_options_destroy(o);
  if (sdb == NULL) {
    fprintf(stderr, "chaos worker: cannot open %s: %s\n", path,
            err ? err : "?");
    leveldb_free(err);
    return -1;
  }
  swo = leveldb_writeoptions_create();
  sro = leveldb_readoptions_create();
  return 0;
}

int ch_worker_main(int argc, char **argv) {
  if (argc != 13) {
    fprintf(stderr, "usage: chaos worker DIR MEMCACHED CTL OUT FINAL INC "
                    "THREADS TIMEOUT_MS SEED DURABILITY BASELINE\n");
    return 2;
  }
  const char *dir = argv[2], *final_path = argv[6];
  mc_config = argv[3];
  incarnation = (unsigned)atoi(argv[7]);
  int threads = atoi(argv[8]);
  timeout_ms = atoi(argv[9]);
  seed = strtoull(argv[10], NULL, 10);
  bool sync = strcmp(argv[11], "sync") == 0;
  bool prefetch = strcmp(argv[11], "prefetch") == 0;
  baseline = atoi(argv[12]) != 0;
  if (threads < 1 || threads > 255) threads = 4;
  signal(SIGTERM, on_term);
  signal(SIGPIPE, SIG_IGN);
  if ((ctl = ch_ctl_map(argv[4], false)) == NULL) return 1;
  out_fd = open(argv[5], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (out_fd < 0) return 1;
  if (!baseline) lc__test_before_commit = pause_hook; /* before threads */

  char path[1024];
  snprintf(path, sizeof path, "%s/log", dir);
  lc_options o;
  lc_options_init(&o);
  o.memcached = mc_config;
  o.db_path = path;
  o.timeout_ms = timeout_ms;
  o.lock_wait_ms = 5000;
  o.owner = "chaos worker";
  o.durability = sync ? LC_DURABILITY_SYNC : LC_DURABILITY_DEFAULT;
  /* Fixed, small segments: a fetch (where the pause seam is) every few
   * hundred ids, so a pause-before-log fault finds one in time; the
   * daemon's prefetch mode is auto. */
  o.prefetch = prefetch ? 256 : 0;
  int rc = LC_EAGAIN;
  for (int i = 0; i < 200 && !stopping; i++) {
    if ((rc = lc_open(&o, &h)) == 0) break;
    if (rc != LC_EMEMCACHED && rc != LC_ETIMEDOUT && rc != LC_ELOG &&
        rc != LC_ELOCKED)
      break;
    ch_sleep_ms(50); /* memcached may be restarting, a write failing */
  }
  if (rc) {
    fprintf(stderr, "chaos worker: cannot open %s: %s (%s)\n", path,
            lc_err_name(rc), lc_last_detail());
    return 3;
  }
  if (baseline && open_seed_log(dir) != 0) return 3;
  atomic_store(&ctl->log_failed, 0);
  atomic_store(&ctl->ready, 1);

  pthread_t tid[256], ftid;
  for (int t = 0; t < threads; t++)
    pthread_create(&tid[t], NULL, client, (void *)(uintptr_t)t);
  pthread_create(&ftid, NULL, flusher, NULL);
  for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
  pthread_join(ftid, NULL);

  /* the end: apply every pending change, report the durable totals */
  for (int i = 0; i < 50; i++) {
    if (lc_tally_flush(h, 0, LC_TALLY_FORCE | LC_TALLY_SWEEP, NULL) == 0) break;
    ch_sleep_ms(100);
  }
  log_status();
  FILE *f = fopen(final_path, "w");
  for (int i = 0; f && i < CH_EMB_TALLIES; i++) {
    int64_t total = 0, pending = 0;
    uint64_t losses = 0, lost = 0, lost_m = 0;
    rc = lc_tally_get(h, ch_tally_name(i), &total, &pending, &losses);
    /* chaos's deltas are all positive: lost_m must stay 0 */
    if (!rc) rc = lc_tally_lost(h, ch_tally_name(i), &lost, &lost_m);
    if (!rc && lost_m) rc = -1000;
    fprintf(f, "%d %d %lld %lld %llu %llu\n", i, rc, (long long)total,
            (long long)pending, (unsigned long long)losses,
            (unsigned long long)lost);
  }
  if (f) fclose(f);
  if (sdb) {
    leveldb_close(sdb);
    leveldb_writeoptions_destroy(swo);
    leveldb_readoptions_destroy(sro);
  }
  lc_close(h);
  close(out_fd);
  return 0;
}
