/*
 * cli_util.c - the logcounter tool's plumbing shared by every subcommand:
 * messages and exit codes, output escaping (shell and JSON), time
 * formatting, the argument parsers, and opening/closing the handle.
 *
 * Invariants: every message starts with "logcounter: " and every usage
 * error ends with a usage line (exit 2); one strict number parser serves
 * every numeric argument; cli_open runs only after all arguments have been
 * checked and, with --server, never touches a log directory (and refuses
 * the commands that need one).
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int cli_write_errno;

/* Writes s with bytes outside printable ASCII (and the backslash) escaped
 * as \xNN, so that a bad name shows what it really holds. */
void cli_put_escaped(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p < 0x20 || *p > 0x7e || *p == '\\')
      fprintf(f, *p == '\\' ? "\\\\" : "\\x%02x", *p);
    else
      fputc(*p, f);
  }
}

/* Writes s as a JSON string, quotes included. */
void cli_put_json(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20 || *p > 0x7e)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

static void vmessage(const char *fmt, va_list ap) {
  fputs(PROG ": ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

/* "logcounter: <what>" without a library code; returns EXIT_RUNTIME. */
int cli_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(fmt, ap);
  va_end(ap);
  return EXIT_RUNTIME;
}

/* The hint after a usage error: the usage line of the command (or the
 * general one).  Returns EXIT_USAGE. */
int cli_usage_hint(const struct command *cmd) {
  if (cmd)
    fprintf(stderr, "usage: " PROG " %s %s\n", cmd->name, cmd->usage);
  else
    fprintf(stderr, "usage: " PROG " [options] <command> [args]"
                    "   (see '" PROG " --help')\n");
  return EXIT_USAGE;
}

/* "logcounter: <what>" and the usage hint; returns EXIT_USAGE.  <what>
 * quotes the user's arguments, so it is written escaped like a bad name
 * (cli_put_escaped): control bytes in an argument never reach the
 * terminal raw. */
int cli_usage_error(const struct command *cmd, const char *fmt, ...) {
  char buf[512], *text = buf;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) buf[0] = '\0';
  if (n >= (int)sizeof buf && (text = malloc((size_t)n + 1)) != NULL) {
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  fputs(PROG ": ", stderr);
  cli_put_escaped(stderr, text ? text : buf);
  fputc('\n', stderr);
  if (text != buf) free(text);
  return cli_usage_hint(cmd);
}

/* "logcounter: cannot <what>: <lc_strerror(rc)> (<detail>)".  Call it
 * right after the failing call: the detail is only valid until the next
 * lc_ call. */
static void vruntime_error(int rc, const char *fmt, va_list ap) {
  char detail[512];
  snprintf(detail, sizeof detail, "%s", lc_last_detail());
  fputs(PROG ": cannot ", stderr);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, ": %s", lc_strerror(rc));
  if (*detail) fprintf(stderr, " (%s)", detail);
  fputc('\n', stderr);
}

int cli_runtime_error(int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vruntime_error(rc, fmt, ap);
  va_end(ap);
  return EXIT_RUNTIME;
}

/* Formats microseconds since the epoch as 2026-11-29T23:04:17.123456Z. */
void cli_format_time(int64_t us, char *buf, size_t size) {
  int64_t secs = us / 1000000, frac = us % 1000000;
  if (frac < 0) {
    frac += 1000000;
    secs -= 1;
  }
  time_t t = (time_t)secs;
  struct tm tm;
  if (!gmtime_r(&t, &tm)) {
    snprintf(buf, size, "?");
    return;
  }
  size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, size - n, ".%06dZ", (int)frac);
}

int64_t cli_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

double cli_monotonic_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------- argument parsing */

/*
 * The one number parser: text must be all decimal digits (no sign, no
 * spaces, not empty) and within min..max.  On failure it prints
 * "invalid <what> '<text>' for <where> (must be min..max)" and returns
 * EXIT_USAGE.
 */
int cli_parse_number(const struct command *cmd, const char *what,
                     const char *where, const char *text, uint64_t min,
                     uint64_t max, uint64_t *out) {
  char *end;
  unsigned long long v = 0;
  bool ok = text[0] >= '0' && text[0] <= '9';
  if (ok) {
    errno = 0;
    v = strtoull(text, &end, 10);
    ok = errno == 0 && *end == '\0' && v >= min && v <= max;
  }
  if (!ok) {
    fputs(PROG ": invalid ", stderr);
    fprintf(stderr, "%s '", what);
    cli_put_escaped(stderr, text);
    fprintf(stderr, "' for %s (must be %" PRIu64 "..%" PRIu64 ")\n", where, min,
            max);
    return cli_usage_hint(cmd);
  }
  *out = v;
  return 0;
}

/* A strict signed 64-bit decimal (optional sign, digits only). */
int cli_parse_i64(const struct command *cmd, const char *what, const char *text,
                  int64_t *out) {
  const char *p = text;
  if (*p == '+' || *p == '-') p++;
  bool ok = *p >= '0' && *p <= '9';
  for (; ok && *p; p++) ok = *p >= '0' && *p <= '9';
  char *end = NULL;
  errno = 0;
  long long v = ok ? strtoll(text, &end, 10) : 0;
  if (!ok || errno || *end)
    return cli_usage_error(cmd, "%s '%s': not a number in -2^63 .. 2^63-1",
                           what, text);
  *out = v;
  return 0;
}

/* Parses a duration: digits with an optional unit ms, s, m, h, d or w
 * (plain digits are seconds).  *out receives microseconds. */
int cli_parse_duration(const struct command *cmd, const char *where,
                       const char *text, int64_t *out) {
  static const struct {
    const char *unit, *what;
    uint64_t us;
  } units[] = {
      {"ms", "number of milliseconds", 1000ULL},
      {"s", "number of seconds", 1000000ULL},
      {"m", "number of minutes", 60000000ULL},
      {"h", "number of hours", 3600000000ULL},
      {"d", "number of days", 86400000000ULL},
      {"w", "number of weeks", 604800000000ULL},
      {"", "number of seconds", 1000000ULL},
  };

  size_t digits = strspn(text, "0123456789");
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp(text + digits, units[i].unit) != 0 || digits == 0) continue;
    char num[32];
    uint64_t v;
    if (digits >= sizeof num) break;
    memcpy(num, text, digits);
    num[digits] = '\0';
    if (cli_parse_number(cmd, units[i].what, where, num, 0,
                         (uint64_t)INT64_MAX / units[i].us, &v))
      return EXIT_USAGE;
    *out = (int64_t)(v * units[i].us);
    return 0;
  }
  fputs(PROG ": invalid duration '", stderr);
  cli_put_escaped(stderr, text);
  fprintf(stderr,
          "' for %s (a number with an optional unit ms, s, m, h, "
          "d or w, e.g. 30d)\n",
          where);
  return cli_usage_hint(cmd);
}

/* Checks a counter name before anything is opened. */
int cli_check_name(const struct command *cmd, const char *name) {
  if (lc_check_name(name) == 0) return 0;
  fputs(PROG ": invalid counter name '", stderr);
  cli_put_escaped(stderr, name);
  fprintf(stderr, "': %s\n", lc_strerror(LC_ENAME));
  return cli_usage_hint(cmd);
}

/* Reports getopt's '?' (unknown option, or a value given to a long
 * option that takes none) or ':' (missing value); arg is the argument
 * getopt was reading (argv[optind] before the call: argv[optind - 1]
 * after it is another argument when the error is inside "-xy"). */
int cli_bad_option(const struct command *cmd, int opt, const char *arg) {
  bool is_long = arg[0] == '-' && arg[1] == '-';
  if (opt == ':') {
    if (is_long) return cli_usage_error(cmd, "option '%s' needs a value", arg);
    return cli_usage_error(cmd, "option '-%c' needs a value", optopt);
  }
  if (is_long && optopt) /* glibc: a known option, but "--opt=v" */
    return cli_usage_error(cmd, "option '%.*s' takes no value",
                           (int)strcspn(arg, "="), arg);
  if (!is_long) return cli_usage_error(cmd, "unknown option '-%c'", optopt);
  return cli_usage_error(cmd, "unknown option '%s'", arg);
}

static int unexpected(const struct command *cmd, const char *arg) {
  fputs(PROG ": unexpected argument '", stderr);
  cli_put_escaped(stderr, arg);
  fputs("'\n", stderr);
  return cli_usage_hint(cmd);
}

/*
 * Parses a subcommand's arguments: options anywhere (getopt_long, restarted
 * with optind = 1 on the sub-argv), "--" ends them, the rest go to pos[].
 * --help and --json are handled here for every command.  Returns 0,
 * HELP_SHOWN, or EXIT_USAGE after printing the reason.
 */
int cli_parse_args(struct cli *c, int argc, char **argv, const char *shortopts,
                   const struct option *longopts, option_fn fn, void *ctx,
                   const char **pos, int min_pos, int max_pos, int *npos) {
  const struct command *cmd = c->cmd;
  int n = 0;
  optind = 1;
  opterr = 0;
  while (optind < argc) {
    const char *a = argv[optind];
    if (strcmp(a, "--") == 0) {
      for (optind++; optind < argc; optind++) {
        if (n == max_pos) return unexpected(cmd, argv[optind]);
        pos[n++] = argv[optind];
      }
      break;
    }
    if (a[0] != '-' || a[1] == '\0') { /* a positional argument */
      if (n == max_pos) return unexpected(cmd, a);
      pos[n++] = a;
      optind++;
      continue;
    }
    int opt = getopt_long(argc, argv, shortopts, longopts, NULL);
    if (opt == -1) break;
    if (opt == '?' || opt == ':') return cli_bad_option(cmd, opt, a);
    if (opt == 'h') {
      cli_print_command_help(cmd);
      return HELP_SHOWN;
    }
    if (opt == 'J') {
      c->json = true;
      continue;
    }
    int rc = fn ? fn(c, opt, optarg, ctx) : EXIT_USAGE;
    if (rc) return rc;
  }
  if (n < min_pos)
    return cli_usage_error(cmd, "missing argument%s", min_pos > 1 ? "s" : "");
  *npos = n;
  return 0;
}

/* Arguments of a command taking just NAME (and --help, --json). */
int cli_name_only(struct cli *c, int argc, char **argv, const char **name) {
  static const struct option lo[] = {{"help", no_argument, NULL, 'h'},
                                     {"json", no_argument, NULL, 'J'},
                                     {NULL, 0, NULL, 0}};
  int npos, rc;
  if ((rc = cli_parse_args(c, argc, argv, "+:h", lo, NULL, NULL, name, 1, 1,
                           &npos)))
    return rc;
  return cli_check_name(c->cmd, *name);
}

/* ------------------------------------------------------------- the handle */

/* mkdir -p for the parent directories of path (mode 0700); the library
 * creates the directory itself. */
static int make_parents(const char *path) {
  char *p = strdup(path);
  if (!p) return ENOMEM;
  char *slash = strrchr(p, '/');
  if (slash) *slash = '\0';
  for (char *s = p + 1; slash && *p; s++) {
    if (*s != '/' && *s != '\0') continue;
    char saved = *s;
    *s = '\0';
    if (mkdir(p, 0700) != 0 && errno != EEXIST) {
      int e = errno;
      free(p);
      return e;
    }
    *s = saved;
    if (saved == '\0') break;
  }
  free(p);
  return 0;
}

/* The log directory when neither --db nor LOGCOUNTER_DB gives one. */
static int default_db(struct cli *c) {
  const char *base = getenv("XDG_STATE_HOME"), *suffix = "/logcounter";
  if (!base || base[0] != '/') { /* XDG: relative paths are ignored */
    base = getenv("HOME");
    suffix = "/.local/state/logcounter";
  }
  if (!base || !*base)
    return cli_usage_error(NULL, "no log directory: give --db DIR or set "
                                 "LOGCOUNTER_DB (HOME is not set)");
  size_t n = strlen(base) + strlen(suffix) + 1;
  if (!(c->db_alloc = malloc(n))) {
    fprintf(stderr, PROG ": cannot allocate memory\n");
    return EXIT_RUNTIME;
  }
  snprintf(c->db_alloc, n, "%s%s", base, suffix);
  c->db = c->db_alloc;
  return 0;
}

/* With --server: a daemon's admin socket (a unix socket path) serves
 * every command, and so does its TLS port with a user (the library asks
 * for the admin relay); a data port otherwise only next and current, so
 * the log's commands are refused before anything is opened when the
 * address is TCP without TLS and a user, and by the library (LC_EREMOTE)
 * when a unix socket turns out to be a data port. */
static int open_remote(struct cli *c) {
  if (c->cmd->needs_log && c->server[0] != '/' && !(c->tls_ca && c->user)) {
    fprintf(stderr, PROG ": cannot %s with --server '%s': %s\n", c->cmd->name,
            c->server, lc_strerror(LC_EREMOTE));
    fprintf(stderr,
            PROG ": '%s' needs the log: give --server the daemon's admin "
                 "socket (logcounterd --admin-socket PATH), or its TLS port "
                 "with --tls-ca and a --user with the admin right, or stop "
                 "the daemon and run '" PROG " --db DIR %s ...'\n",
            c->cmd->name, c->cmd->name);
    return EXIT_RUNTIME;
  }
  lc_options o;
  lc_options_init(&o);
  o.server = c->server;
  o.timeout_ms = c->timeout_ms;
  if (c->user) {
    o.user = c->user;
    o.password = c->password;
  }
  o.tls_ca = c->tls_ca;
  o.tls_cert = c->tls_cert;
  o.tls_key = c->tls_key;
  int rc = lc_open(&o, &c->h);
  if (rc) {
    c->h = NULL;
    return cli_runtime_error(rc, "connect to logcounterd '%s'", c->server);
  }
  return 0;
}

int cli_open(struct cli *c) {
  if (c->server) return open_remote(c);
  int e;
  if ((!c->db || !*c->db) && (e = default_db(c))) return e;
  if ((e = make_parents(c->db))) {
    fprintf(stderr,
            PROG ": cannot create the parent directories of '%s': "
                 "%s\n",
            c->db, strerror(e));
    return EXIT_RUNTIME;
  }
  lc_options o;
  lc_options_init(&o);
  o.memcached = c->memcached;
  o.db_path = c->db;
  o.durability = c->durability;
  o.prefetch = c->prefetch;
  o.timeout_ms = c->timeout_ms;
  o.lock_wait_ms = c->wait_ms;
  snprintf(c->owner, sizeof c->owner, PROG " %s (pid %ld)", c->cmd->name,
           (long)getpid());
  o.owner = c->owner;
  int rc = lc_open(&o, &c->h);
  if (rc) {
    c->h = NULL;
    if (rc == LC_ECONFIG || rc == LC_EMEMCACHED || rc == LC_ETIMEDOUT)
      return cli_runtime_error(rc, "connect to memcached '%s'", c->memcached);
    return cli_runtime_error(rc, "open the log '%s'", c->db);
  }
  return 0;
}

/* Closes the handle; a failure turns a success into a runtime error. */
int cli_close(struct cli *c, int status) {
  if (!c->h) return status;
  int rc = lc_close(c->h);
  c->h = NULL;
  if (rc && status == 0) {
    if (c->server)
      return cli_runtime_error(rc,
                               "close the connection to logcounterd "
                               "'%s'",
                               c->server);
    return cli_runtime_error(rc, "close the log '%s'", c->db);
  }
  return status;
}

int cli_finish(struct cli *c, int rc, const char *fmt, ...) {
  if (rc) {
    va_list ap;
    va_start(ap, fmt);
    vruntime_error(rc, fmt, ap);
    va_end(ap);
    return cli_close(c, EXIT_RUNTIME);
  }
  return cli_close(c, 0);
}
