/*
 * cli_cmds.c - the logcounter subcommands that allocate and repair:
 * next, current, restore, advance, release, adopt and prune.
 *
 * Each handler checks all of its arguments first, then opens the handle
 * (cli_open), makes one library call, closes the handle with its result
 * checked, and only then prints: a value is printed only once it is
 * logged, and the log is released before a slow reader gets the output.
 * next and current also work through a logcounterd (--server); the others
 * need the log and are refused there by cli_open.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------- next */

static int next_option(struct cli *c, int opt, const char *arg, void *ctx) {
  if (opt != 'n') return EXIT_USAGE;
  return cli_parse_number(c->cmd, "count", "-n", arg, 1, LC_BLOCK_MAX,
                          (uint64_t *)ctx);
}

/* Prints first..last one per line through a large buffer. */
static void print_range(int64_t first, int64_t last) {
  static char buf[1 << 16];
  size_t len = 0;
  for (int64_t v = first;; v++) {
    char digits[24];
    int n = 0;
    for (uint64_t u = (uint64_t)v; u; u /= 10)
      digits[n++] = (char)('0' + u % 10);
    if (len + n + 1 > sizeof buf) {
      if (fwrite(buf, 1, len, stdout) != len) {
        cli_write_errno = errno; /* finish_output reports it */
        return;
      }
      len = 0;
    }
    while (n) buf[len++] = digits[--n];
    buf[len++] = '\n';
    if (v == last) break;
  }
  if (fwrite(buf, 1, len, stdout) != len) cli_write_errno = errno;
}

int cmd_next(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {{"count", required_argument, NULL, 'n'},
                                     {"help", no_argument, NULL, 'h'},
                                     {"json", no_argument, NULL, 'J'},
                                     {NULL, 0, NULL, 0}};
  uint64_t count = 1;
  const char *pos[1] = {DEFAULT_NAME};
  int npos, rc;
  if ((rc = cli_parse_args(c, argc, argv, "+:hn:", lo, next_option, &count, pos,
                           0, 1, &npos)))
    return rc;
  const char *name = pos[0];
  if ((rc = cli_check_name(c->cmd, name)) || (rc = cli_open(c))) return rc;
  int64_t first;
  rc = lc_next_n(c->h, name, count, &first);
  if (rc) {
    cli_runtime_error(rc, "allocate from counter '%s'%s", name, c->via);
    return cli_close(c, EXIT_RUNTIME);
  }
  /* The values are logged: release the log before printing, so that a
   * slow reader of a long list does not keep others waiting. */
  if ((rc = cli_close(c, 0))) return rc;
  int64_t last = first + (int64_t)(count - 1);
  if (c->json) {
    fputs("{\"counter\":", stdout);
    cli_put_json(stdout, name);
    printf(",\"first\":%" PRId64 ",\"last\":%" PRId64 ",\"count\":%" PRIu64
           "}\n",
           first, last, count);
  } else {
    print_range(first, last);
  }
  return 0;
}

/* ------------------------------------------------- current and restore */

/* current and restore: NAME in, the value the counter stands at out. */
static int value_command(struct cli *c, int argc, char **argv,
                         int (*op)(lc_t *, const char *, int64_t *),
                         const char *what) {
  const char *name;
  int64_t v;
  int rc;
  if ((rc = cli_name_only(c, argc, argv, &name)) || (rc = cli_open(c)))
    return rc;
  rc = op(c->h, name, &v);
  if ((rc = cli_finish(c, rc, "%s counter '%s'%s", what, name, c->via)))
    return rc;
  if (c->json) {
    fputs("{\"counter\":", stdout);
    cli_put_json(stdout, name);
    printf(",\"current\":%" PRId64 "}\n", v);
  } else {
    printf("%" PRId64 "\n", v);
  }
  return 0;
}

int cmd_current(struct cli *c, int argc, char **argv) {
  return value_command(c, argc, argv, lc_current, "read");
}

int cmd_restore(struct cli *c, int argc, char **argv) {
  return value_command(c, argc, argv, lc_restore, "restore");
}

/* ---------------------------------------------------------------- advance */

int cmd_advance(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {{"help", no_argument, NULL, 'h'},
                                     {"json", no_argument, NULL, 'J'},
                                     {NULL, 0, NULL, 0}};
  const char *pos[2];
  uint64_t min_next;
  int npos, rc;
  if ((rc = cli_parse_args(c, argc, argv, "+:h", lo, NULL, NULL, pos, 2, 2,
                           &npos)) ||
      (rc = cli_check_name(c->cmd, pos[0])) ||
      (rc = cli_parse_number(c->cmd, "value", "VALUE", pos[1], 1, LC_VALUE_MAX,
                             &min_next)) ||
      (rc = cli_open(c)))
    return rc;
  rc = lc_advance(c->h, pos[0], (int64_t)min_next);
  if ((rc = cli_finish(c, rc, "advance counter '%s'", pos[0]))) return rc;
  if (c->json) {
    fputs("{\"counter\":", stdout);
    cli_put_json(stdout, pos[0]);
    printf(",\"min_next\":%" PRIu64 "}\n", min_next);
  } else {
    printf("%s: next value >= %" PRIu64 "\n", pos[0], min_next);
  }
  return 0;
}

/* ------------------------------------------------------- release, adopt */

int cmd_release(struct cli *c, int argc, char **argv) {
  const char *name;
  int64_t final = 0;
  int rc;
  if ((rc = cli_name_only(c, argc, argv, &name)) || (rc = cli_open(c)))
    return rc;
  rc = lc_release(c->h, name, &final);
  if ((rc = cli_finish(c, rc, "release counter '%s'", name))) return rc;
  if (c->json) {
    fputs("{\"counter\":", stdout);
    cli_put_json(stdout, name);
    printf(",\"final\":%" PRId64 "}\n", final);
  } else {
    printf("%" PRId64 "\n", final);
  }
  return 0;
}

static int adopt_option(struct cli *c, int opt, const char *arg, void *ctx) {
  (void)opt;
  return cli_parse_number(c->cmd, "value", "--above", arg, 0, LC_VALUE_MAX - 1,
                          ctx);
}

int cmd_adopt(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {{"above", required_argument, NULL, 'a'},
                                     {"help", no_argument, NULL, 'h'},
                                     {"json", no_argument, NULL, 'J'},
                                     {NULL, 0, NULL, 0}};
  const char *pos[1];
  uint64_t above = 0;
  int npos, rc;
  if ((rc = cli_parse_args(c, argc, argv, "+:ha:", lo, adopt_option, &above,
                           pos, 1, 1, &npos)) ||
      (rc = cli_check_name(c->cmd, pos[0])) || (rc = cli_open(c)))
    return rc;
  rc = lc_adopt(c->h, pos[0], (int64_t)above);
  if ((rc = cli_finish(c, rc, "adopt counter '%s'", pos[0]))) return rc;
  if (c->json) {
    fputs("{\"counter\":", stdout);
    cli_put_json(stdout, pos[0]);
    printf(",\"above\":%" PRIu64 "}\n", above);
  } else {
    printf("%s: adopted; next value > %" PRIu64 "\n", pos[0], above);
  }
  return 0;
}

/* ------------------------------------------------------------------ prune */

struct prune_ctx {
  lc_prune_opts opts;
  const char *name;
  double last_shown;         /* monotonic seconds; 0: nothing shown */
  uint64_t scanned, deleted; /* as last reported by the library */
};

static int prune_option(struct cli *c, int opt, const char *arg, void *ctx) {
  struct prune_ctx *p = ctx;
  uint64_t v;
  int64_t us;
  switch (opt) {
  case 'k':
    if (*arg && arg[strspn(arg, "0")] == '\0')
      return cli_usage_error(c->cmd, "the newest record is always kept; "
                                     "--keep must be at least 1");
    if (cli_parse_number(c->cmd, "count", "--keep", arg, 1, UINT64_MAX, &v))
      return EXIT_USAGE;
    p->opts.keep = v;
    return 0;
  case 'b':
    if (cli_parse_number(c->cmd, "value", "--below", arg, 1, LC_VALUE_MAX, &v))
      return EXIT_USAGE;
    p->opts.below = (int64_t)v;
    return 0;
  case 'o':
    if (cli_parse_duration(c->cmd, "--older-than", arg, &us)) return EXIT_USAGE;
    /* A cut-off before the epoch keeps everything; 0 would mean "not
     * given", so the earliest cut-off is 1 us. */
    p->opts.older_than_us = us >= cli_now_us() ? 1 : cli_now_us() - us;
    return 0;
  }
  return EXIT_USAGE;
}

static void show_progress(struct prune_ctx *p) {
  fprintf(stderr, "\rpruning %s: scanned %" PRIu64 ", deleted %" PRIu64,
          p->name, p->scanned, p->deleted);
  fflush(stderr);
}

/* Shows progress on a terminal, at most five times a second. */
static void prune_progress(void *arg, uint64_t scanned, uint64_t deleted) {
  struct prune_ctx *p = arg;
  double now = cli_monotonic_s();
  p->scanned = scanned;
  p->deleted = deleted;
  if (p->last_shown != 0 && now - p->last_shown < 0.2) return;
  p->last_shown = now;
  show_progress(p);
}

int cmd_prune(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {
      {"keep", required_argument, NULL, 'k'},
      {"below", required_argument, NULL, 'b'},
      {"older-than", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'},
      {"json", no_argument, NULL, 'J'},
      {NULL, 0, NULL, 0}};
  struct prune_ctx p;
  memset(&p, 0, sizeof p);
  const char *pos[1];
  int npos, rc;
  if ((rc = cli_parse_args(c, argc, argv, "+:h", lo, prune_option, &p, pos, 1,
                           1, &npos)) ||
      (rc = cli_check_name(c->cmd, pos[0])))
    return rc;
  if (!p.opts.keep && !p.opts.below && !p.opts.older_than_us)
    return cli_usage_error(c->cmd, "say what to prune: --keep, --below "
                                   "and/or --older-than");
  p.name = pos[0];
  if (isatty(STDERR_FILENO)) {
    p.opts.progress = prune_progress;
    p.opts.progress_arg = &p;
  }
  if ((rc = cli_open(c))) return rc;
  lc_prune_result res;
  rc = lc_prune(c->h, pos[0], &p.opts, &res);
  if (p.last_shown != 0) { /* the final figures, then a newline */
    show_progress(&p);
    fputc('\n', stderr);
  }
  if ((rc = cli_finish(c, rc, "prune counter '%s'", pos[0]))) return rc;
  if (c->json) {
    fputs("{\"counter\":", stdout);
    cli_put_json(stdout, pos[0]);
    printf(",\"deleted\":%" PRIu64 ",\"kept\":%" PRIu64
           ",\"ledger_deleted\":%" PRIu64 "}\n",
           res.deleted, res.kept, res.ledger_deleted);
  } else {
    printf("%s: deleted %" PRIu64 " records, kept %" PRIu64, pos[0],
           res.deleted, res.kept);
    if (res.ledger_deleted)
      printf("; deleted %" PRIu64 " ledger entr%s below them",
             res.ledger_deleted, res.ledger_deleted == 1 ? "y" : "ies");
    putchar('\n');
  }
  return 0;
}
