/*
 * cli_promote.c - logcounter --server ADMIN promote [--force] [--above V]:
 * makes the standby behind that admin socket the primary (lc_promote).
 *
 * A stale standby refuses (exit 1, ESTALE) unless --force; with --force,
 * --above should be at least the last id the old primary handed out when
 * memcached may not hold it any more.
 */
#include "cli.h"

#include <inttypes.h>

static int promote_option(struct cli *c, int opt, const char *arg, void *ctx) {
  lc_promote_opts *o = ctx;
  if (opt == 'f') {
    o->force = 1;
    return 0;
  }
  uint64_t v = 0;
  int rc = cli_parse_number(c->cmd, "value", "--above", arg, 0,
                            LC_VALUE_MAX - 1, &v);
  o->above = (int64_t)v;
  return rc;
}

int cmd_promote(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {{"force", no_argument, NULL, 'f'},
                                     {"above", required_argument, NULL, 'a'},
                                     {"help", no_argument, NULL, 'h'},
                                     {"json", no_argument, NULL, 'J'},
                                     {NULL, 0, NULL, 0}};
  lc_promote_opts o = {0};
  int npos, rc;
  if ((rc = cli_parse_args(c, argc, argv, "+:hfa:", lo, promote_option, &o,
                           NULL, 0, 0, &npos)) ||
      (rc = cli_open(c)))
    return rc;
  uint64_t n = 0;
  rc = lc_promote(c->h, &o, &n);
  if ((rc = cli_finish(c, rc, "promote the standby"))) return rc;
  if (c->json)
    printf("{\"promoted\":true,\"counters\":%" PRIu64 "}\n", n);
  else
    printf("promoted: %" PRIu64 " counters go on above the old primary\n", n);
  return 0;
}
