/*
 * nopeers.c - build/bench's stand-in for bench/peers/: this binary has no
 * peer cases (they need hiredis and libpq, which the tests do not), so a
 * peer that was asked for gets rows saying why.  make bench builds
 * build/bench-peers, which links bench/peers/ instead of this file.
 */
#include "bench.h"

const bool bench_has_peers = false;

int peer_cases_open(const bench_cfg *cfg, case_set *cs, results *res) {
  (void)cs;
  const char *why = cfg->peers_why;
  if (why == NULL && (cfg->redis_everysec || cfg->redis_always || cfg->pg))
    why = "this build/bench has no peer cases (make bench builds "
          "build/bench-peers)";
  if (why) peer_skip_all(cfg, res, true, true, why);
  return 0;
}

void peer_cases_close(case_set *cs) {
  (void)cs;
}
