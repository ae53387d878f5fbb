/*
 * cli_stats.c - what the logcounter tool knows about a logcounterd: the
 * check of a --server address, and the stats subcommand, which prints the
 * daemon's statistics ("stats" in the memcached text protocol).
 *
 * stats talks to the daemon with libmemcached directly (liblogcounter has
 * no call for it), with the same address syntax as lc_options.server
 * ("HOST:PORT", or an absolute unix socket path) and the same timeout as
 * every other call (--timeout), so it never waits longer than that for a
 * hung daemon.  Nothing is printed unless the whole reply arrived: the
 * lines are collected first.  Values are shown as the daemon sent them.
 */
#include "cli.h"

#include <libmemcached/memcached.h>
#include <stdlib.h>
#include <string.h>

/* libmemcached's configuration string for a logcounterd address; the
 * library's remote mode (lc_options.server) builds the same one. */
static void server_config(const char *server, char *buf, size_t size) {
  const char *comma = server[0] == '/' ? NULL : strchr(server, ',');
  if (server[0] == '/')
    snprintf(buf, size, "--SOCKET=\"%s\"", server);
  else if (comma) /* PRIMARY,STANDBY: both */
    snprintf(buf, size, "--SERVER=%.*s --SERVER=%s", (int)(comma - server),
             server, comma + 1);
  else
    snprintf(buf, size, "--SERVER=%s", server);
}

static int bad_server(const char *server, const char *from, const char *why) {
  fputs(PROG ": invalid server address '", stderr);
  cli_put_escaped(stderr, server);
  fprintf(stderr, "' for %s (%s)\n", from, why);
  return cli_usage_hint(NULL);
}

int cli_check_server(const char *server, const char *from) {
  static const char syntax[] = "give HOST:PORT of a logcounterd, or the "
                               "absolute path of its unix socket";
  size_t len = strlen(server);
  if (len > MAX_SERVER_LEN)
    return bad_server(server, from, "longer than 1000 bytes");
  for (const unsigned char *p = (const unsigned char *)server; *p; p++)
    if (*p <= 0x20 || *p >= 0x7f || *p == '"')
      return bad_server(server, from,
                        "spaces, quotes and control "
                        "characters are not allowed");
  /* HOST:PORT (or PRIMARY,STANDBY: two), each port spelled out:
   * libmemcached would otherwise pick memcached's 11211, where no
   * logcounterd listens. */
  for (const char *a = server; a && server[0] != '/';) {
    const char *comma = strchr(a, ',');
    size_t n = comma ? (size_t)(comma - a) : strlen(a);
    const char *colon = NULL;
    for (const char *q = a; q < a + n; q++)
      if (*q == ':') colon = q;
    const char *port = colon ? colon + 1 : NULL;
    size_t plen = port ? n - (size_t)(port - a) : 0;
    if (!colon || colon == a || plen == 0 || plen > 5 ||
        strspn(port, "0123456789") != plen ||
        strtoull(port, NULL, 10) < 1 || strtoull(port, NULL, 10) > 65535 ||
        (comma && a != server))
      return bad_server(server, from,
                        comma || a != server
                            ? "give PRIMARY,STANDBY: two HOST:PORT"
                            : syntax);
    a = comma ? comma + 1 : NULL;
  }
  char config[MAX_SERVER_LEN + 32], err[256] = "";
  server_config(server, config, sizeof config);
  if (libmemcached_check_configuration(config, strlen(config), err,
                                       sizeof err) != MEMCACHED_SUCCESS)
    return bad_server(server, from, syntax);
  return 0;
}

/* The statistics as they arrive: name/value pairs in the daemon's order. */
struct stat_list {
  char **name, **value;
  size_t n, cap;
  bool failed; /* out of memory */
};

static memcached_return_t collect(const memcached_instance_st *server,
                                  const char *key, size_t key_len,
                                  const char *value, size_t value_len,
                                  void *ctx) {
  (void)server;
  struct stat_list *l = ctx;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    char **nn = realloc(l->name, cap * sizeof *nn);
    if (nn) l->name = nn;
    char **vv = nn ? realloc(l->value, cap * sizeof *vv) : NULL;
    if (vv) l->value = vv;
    if (!nn || !vv) {
      l->failed = true;
      return MEMCACHED_MEMORY_ALLOCATION_FAILURE;
    }
    l->cap = cap;
  }
  char *k = strndup(key, key_len), *v = strndup(value, value_len);
  if (!k || !v) {
    free(k);
    free(v);
    l->failed = true;
    return MEMCACHED_MEMORY_ALLOCATION_FAILURE;
  }
  l->name[l->n] = k;
  l->value[l->n++] = v;
  return MEMCACHED_SUCCESS;
}

static void free_list(struct stat_list *l) {
  for (size_t i = 0; i < l->n; i++) {
    free(l->name[i]);
    free(l->value[i]);
  }
  free(l->name);
  free(l->value);
}

/* A JSON number: 0 or digits without a leading zero, then an optional
 * fraction (memcached's rusage figures look like 0.123456). */
static bool is_json_number(const char *s) {
  size_t d = strspn(s, "0123456789");
  if (d == 0 || (s[0] == '0' && d > 1)) return false;
  if (s[d] == '\0') return true;
  return s[d] == '.' && s[d + 1] != '\0' &&
         s[d + 1 + strspn(s + d + 1, "0123456789")] == '\0';
}

static void print_stats(const struct cli *c, const struct stat_list *l) {
  if (c->json) fputc('{', stdout);
  for (size_t i = 0; i < l->n; i++) {
    if (c->json) {
      if (i) fputc(',', stdout);
      cli_put_json(stdout, l->name[i]);
      fputc(':', stdout);
      if (is_json_number(l->value[i]))
        fputs(l->value[i], stdout);
      else
        cli_put_json(stdout, l->value[i]);
    } else {
      cli_put_escaped(stdout, l->name[i]);
      fputc(' ', stdout);
      cli_put_escaped(stdout, l->value[i]);
      fputc('\n', stdout);
    }
  }
  if (c->json) fputs("}\n", stdout);
}

/* libmemcached's messages start with the address of its handle and end
 * with its source file: keeps the words between (as liblogcounter does). */
static const char *clean(const char *msg, char *buf, size_t size) {
  if (msg[0] == '(' && strncmp(msg, "(0x", 3) == 0 && strchr(msg, ')'))
    msg = strchr(msg, ')') + 1;
  while (*msg == ' ') msg++;
  size_t n = 0;
  for (; *msg && n + 1 < size && strncmp(msg, " -> ", 4) != 0; msg++)
    if (!(*msg == ' ' && n > 0 && buf[n - 1] == ' ')) buf[n++] = *msg;
  while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == ',')) n--;
  buf[n] = '\0';
  return buf;
}

/* Asks the daemon for its statistics into *l; 0 or EXIT_RUNTIME. */
static int fetch_stats(const struct cli *c, struct stat_list *l) {
  char config[MAX_SERVER_LEN + 32];
  server_config(c->server, config, sizeof config);
  memcached_st *mc = memcached(config, strlen(config));
  if (!mc)
    return cli_fail("cannot connect to logcounterd '%s': cannot set up "
                    "libmemcached with '%s'",
                    c->server, config);
  const struct {
    memcached_behavior_t b;
    uint64_t v;
  } set[] = {
      {MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, (uint64_t)c->timeout_ms},
      {MEMCACHED_BEHAVIOR_POLL_TIMEOUT, (uint64_t)c->timeout_ms},
      {MEMCACHED_BEHAVIOR_SND_TIMEOUT, (uint64_t)c->timeout_ms * 1000},
      {MEMCACHED_BEHAVIOR_RCV_TIMEOUT, (uint64_t)c->timeout_ms * 1000},
  };
  for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
    memcached_behavior_set(mc, set[i].b, set[i].v);
  memcached_return_t r = memcached_stat_execute(mc, NULL, collect, l);
  int status = 0;
  if (l->failed) {
    status = cli_fail("cannot read the statistics of logcounterd '%s': "
                      "out of memory",
                      c->server);
  } else if (r != MEMCACHED_SUCCESS) {
    char buf[512];
    const char *why = memcached_last_error_message(mc);
    why = clean(why ? why : "", buf, sizeof buf);
    if (!*why) why = memcached_strerror(mc, r);
    if (r == MEMCACHED_TIMEOUT)
      status = cli_fail("cannot read the statistics of logcounterd '%s': "
                        "no answer within %d ms (%s)",
                        c->server, c->timeout_ms, why);
    else
      status = cli_fail("cannot read the statistics of logcounterd '%s': "
                        "%s",
                        c->server, why);
  }
  memcached_free(mc);
  return status;
}

int cmd_stats(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {{"help", no_argument, NULL, 'h'},
                                     {"json", no_argument, NULL, 'J'},
                                     {NULL, 0, NULL, 0}};
  const char *pos[1];
  int npos, rc;
  if ((rc = cli_parse_args(c, argc, argv, "+:h", lo, NULL, NULL, pos, 0, 0,
                           &npos)))
    return rc;
  if (!c->server)
    return cli_usage_error(c->cmd, "stats needs --server (it shows a running "
                                   "logcounterd's statistics)");
  struct stat_list l;
  memset(&l, 0, sizeof l);
  if ((rc = fetch_stats(c, &l)) == 0) print_stats(c, &l);
  free_list(&l);
  return rc;
}
