/*
 * peers.c - logcounter against its peers, Redis INCR and PostgreSQL
 * sequences, measured in the same run (the peer workloads themselves are
 * in bench/peers/, built only into build/bench-peers).
 *
 * For each logcounter point that a peer can be compared with (next,
 * next_n, daemon-incr) it gives the ratio of logcounter's ids/s to each
 * peer's at the same thread (connection) count and the same block,
 * beside its ratio to raw memcached-incr:
 *
 *   x redis         block 1: redis-incr aof-everysec; block B:
 *                   redis-incrby aof-everysec with the same B
 *   x redis-always  block 1: redis-incr aof-always
 *   x pg            block 1: pg-nextval; block B: pg-nextval-block B
 *
 * It prints that table, the peers' settings as they reported them, and
 * what each path survives (the durability notes), and writes
 * OUT/latest-peers.csv (one row per comparison; a peer line that did not
 * run has a row with only its note).  Nothing here is judged.
 */
#include "bench.h"

#include <stdio.h>
#include <string.h>

bool is_peer(const char *kase) {
  return strncmp(kase, "redis-", 6) == 0 || strncmp(kase, "pg-", 3) == 0;
}

void peer_note(results *res, const char *text) {
  size_t len = strlen(res->peer_notes);
  snprintf(res->peer_notes + len, sizeof res->peer_notes - len, "\n  %s", text);
}

void peer_skip(results *res, const char *kase, const char *mode, uint64_t block,
               const char *why) {
  if (res->nskip >= BENCH_SKIPPED_MAX) return;
  skipped *s = &res->skip[res->nskip++];
  snprintf(s->kase, sizeof s->kase, "%s", kase);
  snprintf(s->mode, sizeof s->mode, "%s", mode);
  s->block = block;
  snprintf(s->why, sizeof s->why, "%s", why);
  fprintf(stderr, "bench: %s %s x%llu: not run: %s\n", kase, mode,
          (unsigned long long)block, why);
}

void peer_skip_all(const bench_cfg *cfg, results *res, bool redis, bool pg,
                   const char *why) {
  static const struct {
    const char *kase, *mode;
    uint64_t block;
    bool redis;
  } lines[] = {{"redis-incr", "aof-everysec", 1, true},
               {"redis-incr", "aof-always", 1, true},
               {"redis-incrby", "aof-everysec", 100, true},
               {"redis-incrby", "aof-everysec", 1000, true},
               {"pg-nextval", "default", 1, false},
               {"pg-nextval-block", "default", 100, false},
               {"pg-nextval-block", "default", 1000, false}};
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
    if ((lines[i].redis ? redis : pg) &&
        bench_case_selected(cfg, lines[i].kase))
      peer_skip(res, lines[i].kase, lines[i].mode, lines[i].block, why);
}

static const point *find(const results *res, const char *kase, const char *mode,
                         uint64_t block, int threads) {
  for (size_t i = 0; i < res->np; i++) {
    const point *p = &res->p[i];
    if (strcmp(p->kase, kase) == 0 && strcmp(p->mode, mode) == 0 &&
        p->block == block && p->threads == threads && p->ids_per_s > 0)
      return p;
  }
  return NULL;
}

/* The three ratios of a logcounter point (negative: no such peer point);
 * false when it has none. */
static bool ratios(const results *res, const point *p, double r[3]) {
  const point *peer[3];
  if (p->block == 1) {
    peer[0] = find(res, "redis-incr", "aof-everysec", 1, p->threads);
    peer[1] = find(res, "redis-incr", "aof-always", 1, p->threads);
    peer[2] = find(res, "pg-nextval", "default", 1, p->threads);
  } else {
    peer[0] = find(res, "redis-incrby", "aof-everysec", p->block, p->threads);
    peer[1] = NULL;
    peer[2] = find(res, "pg-nextval-block", "default", p->block, p->threads);
  }
  bool any = false;
  for (int i = 0; i < 3; i++) {
    r[i] = peer[i] ? p->ids_per_s / peer[i]->ids_per_s : -1;
    any |= peer[i] != NULL;
  }
  return any;
}

static bool compared(const point *p) {
  return strcmp(p->kase, "next") == 0 || strcmp(p->kase, "next_n") == 0 ||
         strcmp(p->kase, "daemon-incr") == 0;
}

static const char *ratio(char *buf, size_t size, double r) {
  if (r < 0)
    snprintf(buf, size, "-");
  else
    snprintf(buf, size, "%.2f", r);
  return buf;
}

static bool any_peer(const results *res) {
  for (size_t i = 0; i < res->np; i++)
    if (is_peer(res->p[i].kase)) return true;
  return res->nskip > 0;
}

void peers_print(const results *res) {
  if (!any_peer(res)) return;
  printf("\nlogcounter against the peers, same run, same thread (connection) "
         "count and block:\nratio = logcounter ids/s / the other's ids/s "
         "(above 1.00: logcounter gives more ids/s)\n");
  printf("%-12s %-12s %6s %7s %12s %7s %8s %14s %7s\n", "case", "mode", "block",
         "threads", "ids/s", "x incr", "x redis", "x redis-always", "x pg");
  for (size_t i = 0; i < res->np; i++) {
    const point *p = &res->p[i];
    double r[3];
    if (!compared(p) || !ratios(res, p, r)) continue;
    char a[16], b[16], c[16], d[16];
    printf("%-12s %-12s %6llu %7d %12.0f %7s %8s %14s %7s\n", p->kase, p->mode,
           (unsigned long long)p->block, p->threads, p->ids_per_s,
           ratio(a, sizeof a, p->ratio), ratio(b, sizeof b, r[0]),
           ratio(c, sizeof c, r[1]), ratio(d, sizeof d, r[2]));
  }
  printf(
      "x redis: redis-incr aof-everysec (block 1) or redis-incrby aof-everysec "
      "with the same\nblock; x redis-always: redis-incr aof-always; x pg: "
      "pg-nextval (block 1) or\npg-nextval-block with the same block.\n");
  if (res->peer_notes[0])
    printf("The peers' settings, as they reported them:%s\n", res->peer_notes);
  printf(
      "\nDurability: what survives a process crash, an OS crash (power loss),"
      " the loss of the\nin-memory store, and what can hand out an id twice:\n"
      "  next default, daemon-incr  process crash: everything.  OS crash: "
      "unsynced records\n      are lost but ids never repeat (the synced "
      "reservation; the restore skips at most\n      its window).  memcached "
      "lost: restored from the log, no repeat, no skip.\n"
      "  next sync                  process and OS crash: everything (each "
      "record is synced\n      before its id is returned).  memcached lost: "
      "restored from the log.\n"
      "  redis-incr aof-everysec    process crash: everything (the AOF is "
      "written before the\n      reply, unless an fsync lags: then writes "
      "wait up to 2 s).  OS crash: up to\n      1-2 s of increments lost, "
      "and then HANDED OUT AGAIN.  Data set lost (FLUSHALL,\n      eviction, "
      "failover to a lagging replica): REPEATS.\n"
      "  redis-incr aof-always      process and OS crash: everything (fsynced "
      "before the\n      reply).  Data set lost: REPEATS, as above.\n"
      "  pg-nextval default         process and OS crash: a committed "
      "nextval never repeats\n      (the sequence is WAL-logged 32 values "
      "ahead, flushed at commit); skips up to\n      32 per sequence after a "
      "crash.  No cache whose loss matters (shared buffers\n      are rebuilt "
      "from the WAL).\n");
}

static void csv_ratio(FILE *f, double r) {
  if (r >= 0) fprintf(f, "%.3f", r);
  fputc(',', f);
}

int peers_write_csv(const bench_cfg *cfg, const results *res) {
  char path[4096];
  snprintf(path, sizeof path, "%s/latest-peers.csv", cfg->out);
  if (!any_peer(res)) return remove(path), 0; /* none from an older run */
  FILE *f = fopen(path, "w");
  if (f == NULL) return fprintf(stderr, "bench: cannot write %s\n", path), -1;
  fprintf(f, "case,mode,threads,block,ids_per_s,ratio_to_incr,ratio_to_redis,"
             "ratio_to_redis_always,ratio_to_pg,note\n");
  for (size_t i = 0; i < res->np; i++) {
    const point *p = &res->p[i];
    double r[3];
    if (!compared(p) || !ratios(res, p, r)) continue;
    fprintf(f, "%s,%s,%d,%llu,%.1f,", p->kase, p->mode, p->threads,
            (unsigned long long)p->block, p->ids_per_s);
    csv_ratio(f, p->ratio);
    for (int k = 0; k < 3; k++) csv_ratio(f, r[k]);
    fputc('\n', f);
  }
  for (int i = 0; i < res->nskip; i++) {
    const skipped *s = &res->skip[i];
    fprintf(f, "%s,%s,,%llu,,,,,,\"not run: ", s->kase, s->mode,
            (unsigned long long)s->block);
    for (const char *c = s->why; *c; c++) fputc(*c == '"' ? '\'' : *c, f);
    fprintf(f, "\"\n");
  }
  if (ferror(f) | fclose(f))
    return fprintf(stderr, "bench: cannot write %s\n", path), -1;
  return 0;
}
