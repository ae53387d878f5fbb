/*
 * cli_main.c - main of the logcounter command line tool: the environment,
 * the global options, the subcommand, and the final checks of stdout.
 * (Apart, so that fuzz/fuzz_cli.c links every other CLI file.)
 */
#include "cli.h"

#include "lcd_etcd.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

/* --etcd: c->server becomes the primary's data port, the first address
 * of the "data" field of the leader key's value ("notls:" taken off).
 * 0, or EXIT_RUNTIME with the reason said. */
static int find_primary(struct cli *c) {
  char err[LCD_ETCD_ERR], key[300];
  lcd_etcd_auth auth = {c->etcd_cacert, c->etcd_cert, c->etcd_key, NULL, NULL};
  lcd_etcd *e = lcd_etcd_new(c->etcd, c->timeout_ms, &auth, err, sizeof err);
  if (!e) {
    fprintf(stderr, PROG ": --etcd: %s\n", err);
    return EXIT_USAGE;
  }
  static lcd_etcd_kv kv;
  snprintf(key, sizeof key, "/logcounter/%s/leader", c->cluster);
  int rc = lcd_etcd_get(e, key, &kv, err, sizeof err);
  lcd_etcd_free(e);
  if (rc) {
    fprintf(stderr, PROG ": cannot read %s from etcd: %s\n", key, err);
    return EXIT_RUNTIME;
  }
  if (!kv.found) {
    fprintf(stderr, PROG ": cluster '%s' has no primary now (no %s in etcd)\n",
            c->cluster, key);
    return EXIT_RUNTIME;
  }
  json_object *o = json_tokener_parse(kv.value), *d = NULL;
  const char *data = o && json_object_object_get_ex(o, "data", &d)
                         ? json_object_get_string(d)
                         : NULL;
  if (data && strncmp(data, "notls:", 6) == 0) data += 6;
  size_t n = data ? strcspn(data, ",") : 0;
  if (n == 0 || n > MAX_SERVER_LEN || strncmp(data, "none", n) == 0) {
    fprintf(stderr, PROG ": %s names no data port: '%s'\n", key, kv.value);
    json_object_put(o);
    return EXIT_RUNTIME;
  }
  snprintf(c->server_buf, sizeof c->server_buf, "%.*s", (int)n, data);
  json_object_put(o);
  c->server = c->server_buf;
  if (cli_check_server(c->server, key)) return EXIT_RUNTIME;
  snprintf(c->via, sizeof c->via, " through logcounterd '%s'", c->server);
  return 0;
}

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
  if (c.etcd && (status = find_primary(&c)) != 0) return status;
  if (!(c.cmd = cli_find_command(argv[optind])))
    return cli_usage_error(NULL, "unknown command '%s'", argv[optind]);

  status = c.cmd->run(&c, argc - optind, argv + optind);
  if (status == HELP_SHOWN) status = 0;
  status = cli_close(&c, status);
  free(c.db_alloc);
  return finish_output(status);
}
