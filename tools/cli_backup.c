/*
 * cli_backup.c - logcounter backup DIR: a consistent copy of the log
 * (lc_backup) into a new directory, while the log keeps serving.
 *
 * The copy is marked as a restored backup: a handle opened on it takes a
 * new identity and refuses the counters the original still claims
 * (EOWNED) until 'adopt NAME'; it goes on above memcached's value for each
 * counter memcached still holds, and refuses the others (EBEHIND) until
 * 'adopt NAME --above V'.  Like every
 * handler, it checks its arguments before opening anything and prints
 * only once the handle is closed.
 */
#include "cli.h"

#include <inttypes.h>
#include <unistd.h>

struct backup_ctx {
  const char *dir;
  double last_shown; /* monotonic seconds; 0: nothing shown */
  uint64_t keys;
};

static void show_progress(const struct backup_ctx *b) {
  fprintf(stderr, "\rbacking up to %s: %" PRIu64 " keys", b->dir, b->keys);
  fflush(stderr);
}

/* Shows progress on a terminal, at most five times a second. */
static void backup_progress(void *arg, uint64_t keys) {
  struct backup_ctx *b = arg;
  double now = cli_monotonic_s();
  b->keys = keys;
  if (b->last_shown != 0 && now - b->last_shown < 0.2) return;
  b->last_shown = now;
  show_progress(b);
}

int cmd_backup(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {{"help", no_argument, NULL, 'h'},
                                     {"json", no_argument, NULL, 'J'},
                                     {NULL, 0, NULL, 0}};
  const char *pos[1];
  int npos, rc;
  if ((rc = cli_parse_args(c, argc, argv, "+:h", lo, NULL, NULL, pos, 1, 1,
                           &npos)))
    return rc;
  if (pos[0][0] == '\0')
    return cli_usage_error(c->cmd, "the backup directory is empty");
  struct backup_ctx b = {.dir = pos[0]};
  lc_backup_opts opts = {0};
  if (isatty(STDERR_FILENO)) {
    opts.progress = backup_progress;
    opts.progress_arg = &b;
  }
  if ((rc = cli_open(c))) return rc;
  lc_backup_result res;
  rc = lc_backup(c->h, pos[0], &opts, &res);
  if (b.last_shown != 0) { /* the final figure, then a newline */
    show_progress(&b);
    fputc('\n', stderr);
  }
  if ((rc = cli_finish(c, rc, "back up the log to '%s'", pos[0]))) return rc;
  char when[64];
  cli_format_time(res.time_us, when, sizeof when);
  if (c->json) {
    printf("{\"keys\":%" PRIu64 ",\"records\":%" PRIu64 ",\"bytes\":%" PRIu64
           ",\"time_us\":%" PRId64 ",\"time\":",
           res.keys, res.records, res.bytes, res.time_us);
    cli_put_json(stdout, when);
    fputs(",\"dir\":", stdout);
    cli_put_json(stdout, pos[0]);
    fputs("}\n", stdout);
  } else {
    printf("backed up %" PRIu64 " keys (%" PRIu64 " records, %" PRIu64
           " bytes) as of %s to ",
           res.keys, res.records, res.bytes, when);
    cli_put_escaped(stdout, pos[0]);
    putchar('\n');
  }
  return 0;
}
