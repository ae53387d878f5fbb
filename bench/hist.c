/*
 * hist.c - the log-linear latency histogram of hist.h.
 *
 * Bucket index of v: v itself below 2 * HIST_SUB; otherwise, with e the
 * position of v's highest set bit and s = e - HIST_SUB_BITS, the bucket is
 * (s + 1) * HIST_SUB + the HIST_SUB_BITS bits below the highest one.  The
 * index grows with v, so a cumulative walk finds quantiles.
 */
#include "hist.h"

#include <math.h>
#include <string.h>

static unsigned bucket_of(uint64_t v) {
  if (v < 2 * HIST_SUB) return (unsigned)v;
  unsigned e = 63u - (unsigned)__builtin_clzll(v);
  unsigned s = e - HIST_SUB_BITS;
  return (s + 1) * HIST_SUB + (unsigned)((v >> s) & (HIST_SUB - 1));
}

/* The middle of bucket i, in nanoseconds. */
static double bucket_mid(unsigned i) {
  if (i < 2 * HIST_SUB) return (double)i;
  unsigned s = i / HIST_SUB - 1;
  double low = (double)((uint64_t)(i % HIST_SUB + HIST_SUB) << s);
  return low + ((double)((uint64_t)1 << s) - 1.0) / 2.0;
}

void hist_reset(hist *h) {
  memset(h, 0, sizeof *h);
}

void hist_add(hist *h, uint64_t ns) {
  h->b[bucket_of(ns)]++;
  h->count++;
}

void hist_merge(hist *into, const hist *from) {
  for (unsigned i = 0; i < HIST_BUCKETS; i++) into->b[i] += from->b[i];
  into->count += from->count;
}

double hist_quantile_us(const hist *h, double q) {
  if (h->count == 0) return 0.0;
  uint64_t rank = (uint64_t)ceil(q * (double)h->count);
  if (rank < 1) rank = 1;
  uint64_t seen = 0;
  for (unsigned i = 0; i < HIST_BUCKETS; i++) {
    seen += h->b[i];
    if (seen >= rank) return bucket_mid(i) / 1000.0;
  }
  return bucket_mid(HIST_BUCKETS - 1) / 1000.0;
}
