/*
 * ceiling.c - the "ceiling" case: the physical limit of one strictly
 * ordered counter on this machine, measured in the same run as
 * "next prefetch" (ids from memory) and at the same thread counts.
 *
 *   ceiling atomic-shared  one atomic_fetch_add on one shared counter
 *   ceiling mutex-shared   one increment under one shared mutex
 *
 * Nothing is logged or counted in memcached: no allocation path can be
 * faster than these, so "next prefetch" / "ceiling atomic-shared" says how
 * much of the machine's limit the library reaches.
 */
#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct ceiling_priv {
  _Alignas(64) atomic_uint_fast64_t value;
  _Alignas(64) pthread_mutex_t mu;
  uint64_t locked_value;
} ceiling_priv;

static int64_t atomic_op(void *shared, void *state, char *err, size_t n) {
  (void)state, (void)err, (void)n;
  ceiling_priv *p = shared;
  atomic_fetch_add_explicit(&p->value, 1, memory_order_relaxed);
  return 1;
}

static int64_t mutex_op(void *shared, void *state, char *err, size_t n) {
  (void)state, (void)err, (void)n;
  ceiling_priv *p = shared;
  pthread_mutex_lock(&p->mu);
  p->locked_value++;
  pthread_mutex_unlock(&p->mu);
  return 1;
}

int ceiling_cases_open(const bench_cfg *cfg, case_set *cs) {
  if (!bench_case_selected(cfg, "ceiling")) return 0;
  ceiling_priv *p = calloc(1, sizeof *p);
  if (p == NULL || cs->n + 2 > BENCH_LINES_MAX) {
    free(p);
    return -1;
  }
  pthread_mutex_init(&p->mu, NULL);
  cs->ceiling_priv = p;
  cs->w[cs->n++] = (workload){"ceiling", "atomic-shared", 1, p, NULL, NULL,
                              atomic_op, BENCH_PEER_WIDE_MAX, 0, 0, 0};
  cs->w[cs->n++] = (workload){"ceiling", "mutex-shared", 1, p, NULL, NULL,
                              mutex_op, BENCH_PEER_WIDE_MAX, 0, 0, 0};
  return 0;
}

void ceiling_cases_close(case_set *cs) {
  ceiling_priv *p = cs->ceiling_priv;
  if (p == NULL) return;
  pthread_mutex_destroy(&p->mu);
  free(p);
  cs->ceiling_priv = NULL;
}
