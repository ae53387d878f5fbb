/*
 * runner.c - runs one workload at N threads for a fixed time.
 *
 * Each thread opens its own state, makes one untimed warm-up call (so that
 * connecting is not measured), then waits at a barrier.  From the barrier
 * on, every call is timed with CLOCK_MONOTONIC and goes into the thread's
 * own histogram; the main thread sleeps for the duration, raises the stop
 * flag and merges.  The elapsed time runs from the barrier to the end of
 * the last call any thread finished, so slow calls in flight at the stop
 * are counted with the time they took.
 *
 * When the workload names its server's process (cpu_pid), that process's
 * user + system clock ticks (/proc/PID/stat) are read right after the
 * barrier and again once every thread has stopped: its CPU time per
 * million ids (one id = one request for the cases that set it).
 */
#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hist.h"

typedef struct worker {
  pthread_t tid;
  const workload *w;
  pthread_barrier_t *start;
  atomic_bool *stop;
  bool opened;
  uint64_t ids, calls, errors, end_ns;
  char err[256];
  hist h;
} worker;

static void *work(void *arg) {
  worker *k = arg;
  const workload *w = k->w;
  void *state = NULL;
  char err[256] = "";
  k->opened = w->thread_open == NULL ||
              w->thread_open(w->shared, &state, k->err, sizeof k->err) == 0;
  if (k->opened && w->op(w->shared, state, err, sizeof err) < 0) {
    k->errors++;
    memcpy(k->err, err, sizeof err);
  }
  pthread_barrier_wait(k->start);
  while (k->opened && !atomic_load_explicit(k->stop, memory_order_relaxed)) {
    uint64_t t0 = now_ns();
    int64_t n = w->op(w->shared, state, err, sizeof err);
    uint64_t t1 = now_ns();
    k->end_ns = t1;
    if (n < 0) {
      if (k->errors++ == 0) memcpy(k->err, err, sizeof err);
      continue;
    }
    hist_add(&k->h, t1 - t0);
    k->calls++;
    k->ids += (uint64_t)n;
  }
  if (k->opened && w->thread_close) w->thread_close(state);
  return NULL;
}

bool run_once(const workload *w, int threads, double seconds, sample *out) {
  memset(out, 0, sizeof *out);
  worker *ks = calloc((size_t)threads, sizeof *ks);
  hist *all = calloc(1, sizeof *all);
  if (ks == NULL || all == NULL) {
    free(ks);
    free(all);
    return false;
  }
  pthread_barrier_t start;
  atomic_bool stop = false;
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  int started = 0;
  for (; started < threads; started++) {
    worker *k = &ks[started];
    k->w = w;
    k->start = &start;
    k->stop = &stop;
    if (pthread_create(&k->tid, NULL, work, k) != 0) break;
  }
  if (started < threads) { /* cannot happen at these thread counts */
    fprintf(stderr, "bench: cannot start %d threads\n", threads);
    abort();
  }
  pthread_barrier_wait(&start);
  long long cpu0 = w->cpu_pid > 0 ? proc_cpu_ticks(w->cpu_pid) : -1;
  uint64_t t0 = now_ns();
  sleep_s(seconds);
  atomic_store(&stop, true);
  uint64_t ids = 0, end = t0;
  bool ok = true;
  for (int i = 0; i < threads; i++) {
    worker *k = &ks[i];
    pthread_join(k->tid, NULL);
    if (!k->opened) {
      ok = false;
      fprintf(stderr, "bench: %s %s: cannot open a thread: %s\n", w->kase,
              w->mode, k->err);
    }
    if (k->errors && out->errors == 0)
      fprintf(stderr, "bench: %s %s at %d threads: %s\n", w->kase, w->mode,
              threads, k->err);
    out->errors += k->errors;
    out->calls += k->calls;
    ids += k->ids;
    if (k->end_ns > end) end = k->end_ns;
    hist_merge(all, &k->h);
  }
  pthread_barrier_destroy(&start);
  out->cpu_ms_per_m = -1;
  if (w->cpu_pid > 0) {
    long long cpu1 = proc_cpu_ticks(w->cpu_pid);
    long hz = sysconf(_SC_CLK_TCK);
    if (cpu0 < 0 || cpu1 < cpu0 || hz <= 0) {
      fprintf(stderr, "bench: %s %s: cannot read the CPU time of process %d\n",
              w->kase, w->mode, w->cpu_pid);
      ok = false;
    } else if (ids > 0) {
      out->cpu_ms_per_m =
          (double)(cpu1 - cpu0) * 1000.0 / (double)hz / ((double)ids / 1e6);
    }
  }
  double elapsed = (double)(end - t0) / 1e9;
  out->ids_per_s = elapsed > 0 ? (double)ids / elapsed : 0;
  out->p50_us = hist_quantile_us(all, 0.50);
  out->p99_us = hist_quantile_us(all, 0.99);
  out->p999_us = hist_quantile_us(all, 0.999);
  free(ks);
  free(all);
  return ok;
}
