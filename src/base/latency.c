/*
 * latency.c - histograms of how long the floor writes take: the synced
 * writes that raise a counter's reservation and those that write a new
 * prefetched segment's record (lc_get_latency in core/handle.c,
 * logcounter.h "Write latency").
 *
 * Invariants: the buckets are fixed (1-2-5 steps from 5 us to 5 s, then
 * one without bound) and the same for every kind; recording is two
 * relaxed atomic adds on the handle and takes no lock, so a writer never
 * waits for a reader; a reader sums the buckets it read into count, so
 * count always equals the sum of the buckets it reports.
 */
#include "base/base.h"

#include <string.h>

static const int64_t bounds[LC_LATENCY_BUCKETS - 1] = {
    5,      10,     20,     50,      100,     200,     500,
    1000,   2000,   5000,   10000,   20000,   50000,   100000,
    200000, 500000, 1000000, 2000000, 5000000};

int64_t lc_latency_bound_us(int i) {
  if (i < 0 || i >= LC_LATENCY_BUCKETS - 1) return INT64_MAX;
  return bounds[i];
}

void lc__lat_record(lc__hist *t, int64_t start_us) {
  int64_t us = lc__clock_mono_us() - start_us;
  if (us < 0) us = 0;
  int i = 0;
  while (i < LC_LATENCY_BUCKETS - 1 && us > bounds[i]) i++;
  atomic_fetch_add_explicit(&t->n[i], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&t->sum_us, (uint64_t)us, memory_order_relaxed);
}

void lc__lat_snapshot(const lc__hist *t, lc_latency_hist *out) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < LC_LATENCY_BUCKETS; i++) {
    out->buckets[i] = atomic_load_explicit(&t->n[i], memory_order_relaxed);
    out->count += out->buckets[i];
  }
  out->sum_us = atomic_load_explicit(&t->sum_us, memory_order_relaxed);
}
