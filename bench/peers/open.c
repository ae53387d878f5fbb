/*
 * open.c - peer_cases_open/close of build/bench-peers: the Redis and the
 * PostgreSQL cases (redis.c, pg.c).  build/bench links nopeers.c instead.
 */
#include "peers.h"

#include <stdlib.h>

const bool bench_has_peers = true;

typedef struct peers_priv {
  void *redis, *pg;
} peers_priv;

int peer_cases_open(const bench_cfg *cfg, case_set *cs, results *res) {
  peers_priv *p = calloc(1, sizeof *p);
  if (p == NULL) return -1;
  cs->peer_priv = p;
  if (redis_cases_open(cfg, cs, res, &p->redis) != 0) return -1;
  return pg_cases_open(cfg, cs, res, &p->pg);
}

void peer_cases_close(case_set *cs) {
  peers_priv *p = cs->peer_priv;
  if (p == NULL) return;
  redis_cases_close(p->redis);
  pg_cases_close(p->pg);
  free(p);
  cs->peer_priv = NULL;
}
