/*
 * cli_ledger.c - the logcounter subcommands of the gap ledger: gaps (every
 * gap with its cause, every void, every open segment) and void (mark an
 * issued id as never used).
 *
 * gaps exits 1 when a gap has no ledger entry or the ledger is corrupt, as
 * verify does.  Both need the log, so cli_open refuses them with --server.
 */
#include "cli.h"

#include <string.h>

struct gaps_ctx {
  struct cli *c;
  uint64_t bad; /* unexplained gaps, undecodable or misplaced */
};

static void gaps_item(void *ctx, const struct trail_item *t) {
  struct gaps_ctx *g = ctx;
  if (t->kind == TRAIL_BAD || t->overlap || (t->kind == TRAIL_GAP && !t->cause))
    g->bad++;
  if (t->kind == TRAIL_BAD) {
    fprintf(stderr, PROG ": undecodable %s (key value %lld): %s\n",
            t->entry ? "ledger entry" : "record", (long long)t->last,
            t->detail);
  } else if (t->overlap && t->kind != TRAIL_RECORD) {
    fprintf(stderr,
            PROG ": ledger entry %lld-%lld (%s) lies over logged "
                 "values\n",
            (long long)t->first, (long long)t->last, trail_kind(t));
  } else if (t->kind != TRAIL_RECORD || t->version == LC_RECORD_SEGMENT_OPEN) {
    if (!ferror(stdout)) trail_put_gap(g->c, t);
  }
}

int cmd_gaps(struct cli *c, int argc, char **argv) {
  const char *name;
  int rc;
  if ((rc = cli_name_only(c, argc, argv, &name)) || (rc = cli_open(c)))
    return rc;
  struct gaps_ctx g = {c, 0};
  if ((rc = trail_walk(c, name, gaps_item, &g))) return cli_close(c, rc);
  if ((rc = cli_close(c, 0))) return rc;
  if (g.bad) {
    fprintf(stderr,
            PROG ": %llu gap%s of '%s' unexplained or ledger entries "
                 "corrupt\n",
            (unsigned long long)g.bad, g.bad == 1 ? "" : "s", name);
    return EXIT_RUNTIME;
  }
  return 0;
}

static int void_option(struct cli *c, int opt, const char *arg, void *ctx) {
  (void)c;
  if (opt != 'r') return EXIT_USAGE;
  *(const char **)ctx = arg;
  return 0;
}

int cmd_void(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {{"reason", required_argument, NULL, 'r'},
                                     {"help", no_argument, NULL, 'h'},
                                     {"json", no_argument, NULL, 'J'},
                                     {NULL, 0, NULL, 0}};
  const char *pos[2], *reason = NULL;
  int npos, rc;
  uint64_t value;
  if ((rc = cli_parse_args(c, argc, argv, "+:h", lo, void_option, &reason, pos,
                           2, 2, &npos)) ||
      (rc = cli_check_name(c->cmd, pos[0])) ||
      (rc = cli_parse_number(c->cmd, "value", "VALUE", pos[1], 1, LC_VALUE_MAX,
                             &value)))
    return rc;
  if (reason == NULL || !*reason)
    return cli_usage_error(c->cmd, "say why: --reason TEXT");
  if (strlen(reason) > LC_REASON_MAX)
    return cli_usage_error(c->cmd, "--reason is longer than %d bytes",
                           LC_REASON_MAX);
  if ((rc = cli_open(c))) return rc;
  rc = lc_void(c->h, pos[0], (int64_t)value, reason);
  if ((rc = cli_finish(c, rc, "void %s %llu", pos[0],
                       (unsigned long long)value)))
    return rc;
  if (c->json) {
    fputs("{\"counter\":", stdout);
    cli_put_json(stdout, pos[0]);
    printf(",\"voided\":%llu,\"reason\":", (unsigned long long)value);
    cli_put_json(stdout, reason);
    fputs("}\n", stdout);
  } else {
    printf("%s %llu voided\n", pos[0], (unsigned long long)value);
  }
  return 0;
}
