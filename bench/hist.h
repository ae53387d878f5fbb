/*
 * hist.h - a log-linear latency histogram for the benchmark harness.
 *
 * Values are nanoseconds.  Below 128 every value has its own bucket; above,
 * each power of two is split into 64 buckets, so a reported percentile is
 * within 1/64 (1.6%) of the true value.  Adding a sample is a few integer
 * operations and no allocation, so each thread keeps its own histogram
 * while it runs and the main thread merges them afterwards.
 */
#ifndef LC_BENCH_HIST_H
#define LC_BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 6
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((65 - HIST_SUB_BITS) * HIST_SUB)

typedef struct hist {
  uint64_t count;
  uint64_t b[HIST_BUCKETS];
} hist;

void hist_reset(hist *h);
void hist_add(hist *h, uint64_t ns);
void hist_merge(hist *into, const hist *from);
/* The q-quantile (0 < q <= 1) in microseconds; 0 for an empty histogram. */
double hist_quantile_us(const hist *h, double q);

#endif
