/*
 * cli_tally.c - "logcounter tally": write-behind counts (lc_tally_*).
 *
 *   tally add NAME DELTA     change by DELTA (non-zero, may be negative)
 *   tally get NAME           durable total, pending change, losses, lost
 *   tally flush [--sweep]    apply everything pending to the log
 *   tally list [--prefix P] [--min N] [--max N] [--top K] [--by-total]
 *              [--offset N] [--limit N]
 *
 * A CLI process lives for one command, so it has no flush schedule of its
 * own: "tally flush" always sweeps every tally in the log (comparing
 * memcached with what was applied); --sweep is accepted for clarity.
 * Like every handler, each checks all arguments before opening anything,
 * and prints only after the handle is closed with its result checked.
 * All of them need the log: not with --server.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static bool looks_negative(const char *a) {
  return a[0] == '-' && a[1] >= '0' && a[1] <= '9';
}

/* ---- add ---- */

static int tally_add(struct cli *c, int argc, char **argv) {
  /* by hand: "-5" is a DELTA, not an option */
  const char *pos[2];
  int n = 0;
  bool rest = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!rest && strcmp(a, "--") == 0)
      rest = true;
    else if (!rest && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
      cli_print_command_help(c->cmd);
      return HELP_SHOWN;
    } else if (!rest && strcmp(a, "--json") == 0)
      c->json = true;
    else if (!rest && a[0] == '-' && a[1] && !looks_negative(a))
      return cli_usage_error(c->cmd, "unknown option '%s'", a);
    else if (n == 2)
      return cli_usage_error(c->cmd, "unexpected argument '%s'", a);
    else
      pos[n++] = a;
  }
  if (n < 2) return cli_usage_error(c->cmd, "tally add needs NAME DELTA");
  int64_t delta;
  int rc;
  if ((rc = cli_check_name(c->cmd, pos[0])) ||
      (rc = cli_parse_i64(c->cmd, "delta", pos[1], &delta)))
    return rc;
  if (delta == 0) return cli_usage_error(c->cmd, "delta must not be 0");
  if ((rc = cli_open(c))) return rc;
  rc = lc_tally_add(c->h, pos[0], delta);
  if ((rc = cli_finish(c, rc, "change tally '%s'", pos[0]))) return rc;
  if (c->json) {
    fputs("{\"tally\":", stdout);
    cli_put_json(stdout, pos[0]);
    printf(",\"delta\":%" PRId64 "}\n", delta);
  } else {
    printf("%s: %+" PRId64 " (pending until a flush)\n", pos[0], delta);
  }
  return 0;
}

/* ---- get ---- */

static int tally_get(struct cli *c, int argc, char **argv) {
  const char *name;
  int rc;
  if ((rc = cli_name_only(c, argc, argv, &name)) || (rc = cli_open(c)))
    return rc;
  int64_t total, pending;
  uint64_t losses, lp = 0, lm = 0;
  rc = lc_tally_get(c->h, name, &total, &pending, &losses);
  if (!rc) rc = lc_tally_lost(c->h, name, &lp, &lm);
  if ((rc = cli_finish(c, rc, "read tally '%s'", name))) return rc;
  if (c->json) {
    fputs("{\"tally\":", stdout);
    cli_put_json(stdout, name);
    printf(",\"total\":%" PRId64 ",\"pending\":%" PRId64 ",\"losses\":%" PRIu64
           ",\"lost\":%" PRIu64 ",\"lost_increments\":%" PRIu64
           ",\"lost_decrements\":%" PRIu64 "}\n",
           total, pending, losses, lp + lm, lp, lm);
  } else {
    printf("%s: total %" PRId64 ", pending %+" PRId64 ", losses %" PRIu64
           ", lost +%" PRIu64 " -%" PRIu64 "%s\n",
           name, total, pending, losses, lp, lm,
           losses ? " (memcached lost pending changes)" : "");
  }
  return 0;
}

/* ---- flush ---- */

static int flush_option(struct cli *c, int opt, const char *arg, void *ctx) {
  (void)c;
  (void)arg;
  (void)ctx;
  return opt == 's' ? 0 : EXIT_USAGE;
}

static int tally_flush(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {{"sweep", no_argument, NULL, 's'},
                                     {"help", no_argument, NULL, 'h'},
                                     {"json", no_argument, NULL, 'J'},
                                     {NULL, 0, NULL, 0}};
  const char *pos[1];
  int npos, rc;
  if ((rc = cli_parse_args(c, argc, argv, "+:h", lo, flush_option, NULL, pos, 0,
                           0, &npos)) ||
      (rc = cli_open(c)))
    return rc;
  uint64_t n = 0;
  rc = lc_tally_flush(c->h, 0, LC_TALLY_FORCE | LC_TALLY_SWEEP, &n);
  if ((rc = cli_finish(c, rc, "flush tallies"))) return rc;
  if (c->json)
    printf("{\"flushed\":%" PRIu64 "}\n", n);
  else
    printf("flushed %" PRIu64 " tall%s\n", n, n == 1 ? "y" : "ies");
  return 0;
}

/* ---- list ---- */

typedef struct list_ctx {
  lc_tally_list_opts o;
  bool json;
  lc_tally_info *v;
  size_t n, cap;
  bool nomem;
} list_ctx;

static int list_option(struct cli *c, int opt, const char *arg, void *ctx) {
  list_ctx *l = ctx;
  uint64_t u;
  int rc;
  switch (opt) {
  case 'p': l->o.prefix = arg; return 0;
  case 'm':
    l->o.has_min = 1;
    return cli_parse_i64(c->cmd, "--min", arg, &l->o.min);
  case 'M':
    l->o.has_max = 1;
    return cli_parse_i64(c->cmd, "--max", arg, &l->o.max);
  case 't':
    l->o.order = LC_TALLY_BY_TOTAL_DESC;
    rc = cli_parse_number(c->cmd, "count", "--top", arg, 1, UINT32_MAX, &u);
    l->o.limit = u;
    return rc;
  case 'b': l->o.order = LC_TALLY_BY_TOTAL_DESC; return 0;
  case 'o':
    return cli_parse_number(c->cmd, "offset", "--offset", arg, 0, UINT64_MAX,
                            &l->o.offset);
  case 'l':
    return cli_parse_number(c->cmd, "limit", "--limit", arg, 1, UINT64_MAX,
                            &l->o.limit);
  default: return EXIT_USAGE;
  }
}

/* Collects (the handle is closed before anything is printed). */
static int collect(void *arg, const lc_tally_info *info) {
  list_ctx *l = arg;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    lc_tally_info *v = realloc(l->v, cap * sizeof *v);
    if (v == NULL) {
      l->nomem = true;
      return 1;
    }
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = *info;
  return 0;
}

static int tally_list(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {{"prefix", required_argument, NULL, 'p'},
                                     {"min", required_argument, NULL, 'm'},
                                     {"max", required_argument, NULL, 'M'},
                                     {"top", required_argument, NULL, 't'},
                                     {"by-total", no_argument, NULL, 'b'},
                                     {"offset", required_argument, NULL, 'o'},
                                     {"limit", required_argument, NULL, 'l'},
                                     {"help", no_argument, NULL, 'h'},
                                     {"json", no_argument, NULL, 'J'},
                                     {NULL, 0, NULL, 0}};
  list_ctx l;
  memset(&l, 0, sizeof l);
  const char *pos[1];
  int npos, rc;
  if ((rc = cli_parse_args(c, argc, argv, "+:h", lo, list_option, &l, pos, 0, 0,
                           &npos)))
    return rc;
  if (l.o.prefix && strlen(l.o.prefix) > LC_NAME_MAX)
    return cli_usage_error(c->cmd, "--prefix longer than %d bytes",
                           LC_NAME_MAX);
  if ((rc = cli_open(c))) return rc;
  l.o.cb = collect;
  l.o.arg = &l;
  rc = lc_tally_list(c->h, &l.o, NULL);
  if (!rc && l.nomem) rc = LC_ENOMEM;
  if ((rc = cli_finish(c, rc, "list tallies"))) {
    free(l.v);
    return rc;
  }
  for (size_t i = 0; i < l.n; i++) {
    if (c->json) {
      fputs("{\"tally\":", stdout);
      cli_put_json(stdout, l.v[i].name);
      printf(",\"total\":%" PRId64 ",\"losses\":%" PRIu64 "}\n", l.v[i].total,
             l.v[i].losses);
    } else {
      cli_put_escaped(stdout, l.v[i].name);
      printf(" %" PRId64 "\n", l.v[i].total);
    }
  }
  free(l.v);
  return 0;
}

int cmd_tally(struct cli *c, int argc, char **argv) {
  static const struct {
    const char *name;
    int (*run)(struct cli *, int, char **);
  } subs[] = {{"add", tally_add},
              {"get", tally_get},
              {"flush", tally_flush},
              {"list", tally_list}};
  if (argc < 2)
    return cli_usage_error(c->cmd, "say what to do: add, get, flush or list");
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    cli_print_command_help(c->cmd);
    return HELP_SHOWN;
  }
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
    if (strcmp(argv[1], subs[i].name) == 0)
      return subs[i].run(c, argc - 1, argv + 1);
  return cli_usage_error(c->cmd, "unknown tally command '%s'", argv[1]);
}
