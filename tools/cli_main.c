/*
 * cli_main.c - main of the logcounter command line tool: the environment,
 * the global options, the subcommand, and the final checks of stdout.
 * (Apart, so that fuzz/fuzz_cli.c links every other CLI file.)
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Flushes stdout; a failed write anywhere turns success into exit 1. */
static int finish_output(int status) {
  int failed = fflush(stdout) != 0 ? errno : 0;
  if (!failed && ferror(stdout))
    failed = cli_write_errno ? cli_write_errno : EIO;
  if (failed && status == 0) {
    fprintf(stderr, PROG ": cannot write output: %s\n", strerror(failed));
    return EXIT_RUNTIME;
  }
  return status;
}

int main(int argc, char **argv) {
  struct cli c;
  memset(&c, 0, sizeof c);
  c.memcached = getenv("LOGCOUNTER_MEMCACHED");
  if (!c.memcached || !*c.memcached) c.memcached = DEFAULT_MEMCACHED;
  c.db = getenv("LOGCOUNTER_DB");
  c.server = getenv("LOGCOUNTER_SERVER");
  c.durability = LC_DURABILITY_DEFAULT;
  c.timeout_ms = DEFAULT_TIMEOUT_MS;
  c.wait_ms = DEFAULT_WAIT_MS;

  int status = cli_parse_globals(&c, argc, argv);
  if (status == HELP_SHOWN) return finish_output(0);
  if (status) return status;
  if (optind >= argc) return cli_usage_error(NULL, "no command given");
  if (!(c.cmd = cli_find_command(argv[optind])))
    return cli_usage_error(NULL, "unknown command '%s'", argv[optind]);

  status = c.cmd->run(&c, argc - optind, argv + optind);
  if (status == HELP_SHOWN) status = 0;
  status = cli_close(&c, status);
  free(c.db_alloc);
  return finish_output(status);
}
