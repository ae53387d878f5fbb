/*
 * peers.h - the peer cases of build/bench-peers: the same workloads as
 * logcounter's, run by the same threads and timed the same way, against
 * the servers a team would otherwise use for ids.
 *
 *   redis.c  redis-incr (INCR, AOF appendfsync everysec and always) and
 *            redis-incrby (INCRBY 100 and 1000, everysec), with hiredis
 *   pg.c     pg-nextval (SELECT nextval('s')) and pg-nextval-block
 *            (SELECT nextval('s') FROM generate_series(1, 100 or 1000)),
 *            PostgreSQL at its default durability, with libpq
 *   open.c   peer_cases_open/close for bench.c
 *
 * bench/run.sh --peers starts the servers (127.0.0.1, free ports, private
 * data directories on the same disk as the logcounter logs) and passes
 * their addresses in BENCH_REDIS_EVERYSEC, BENCH_REDIS_ALWAYS and BENCH_PG,
 * or "none: WHY" for one it could not start.  A peer that cannot be
 * reached gets rows that say why; the rest of the run goes on.  Each
 * connection checks that the ids it gets strictly increase.
 */
#ifndef LC_BENCH_PEERS_H
#define LC_BENCH_PEERS_H

#include "bench.h"

/* Each adds its selected workloads, or skipped rows; *priv is freed by
 * the matching close. */
int redis_cases_open(const bench_cfg *cfg, case_set *cs, results *res,
                     void **priv);
void redis_cases_close(void *priv);
int pg_cases_open(const bench_cfg *cfg, case_set *cs, results *res,
                  void **priv);
void pg_cases_close(void *priv);

#endif
