/*
 * logcounter.c - the logcounter command line tool.
 *
 * A thin shell over liblogcounter for operators and scripts: it allocates
 * serial numbers (next), shows and repairs counters (current, restore,
 * advance), and looks after the log (prune, verify, dump).
 *
 * Layout: output helpers, argument parsing helpers (one strict number
 * parser used everywhere), the handle (open/close), one handler per
 * subcommand, the subcommand table, main.
 *
 * Conventions it keeps (git style):
 *  - exit 0 on success, 1 on a runtime error (or when verify/dump find
 *    corruption), 2 on a usage error;
 *  - every message on stderr starts with "logcounter: "; runtime errors read
 *    "logcounter: cannot <what>: <reason> (<detail>)";
 *  - nothing is opened (no memcached, no log) before all arguments have been
 *    checked, and the handle is always closed with its result checked;
 *  - stdout is flushed and checked before exiting 0, so a full disk or a
 *    closed pipe is never a silent success.
 */
#include "logcounter.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "logcounter"
#define DEFAULT_MEMCACHED "--SERVER=127.0.0.1:11211"
#define DEFAULT_NAME "default"
#define DEFAULT_TIMEOUT_MS 1000
#define DEFAULT_WAIT_MS 10000
#define MAX_TIMEOUT_MS 600000
#define MAX_WAIT_MS 86400000
#define MAX_GAPS_LISTED 10

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };
/* Returned by argument parsing when --help was printed: exit 0. */
#define HELP_SHOWN (-1)

struct command;

/* Everything a subcommand needs: the global settings and the handle. */
struct cli {
  const char *memcached;
  const char *db;
  char *db_alloc;               /* db when built from XDG_STATE_HOME/HOME */
  lc_durability_t durability;
  int timeout_ms;
  int wait_ms;
  bool json;
  const struct command *cmd;
  lc_t *h;
  char owner[96];
};

typedef int (*handler_fn)(struct cli *c, int argc, char **argv);

struct command {
  const char *name;
  handler_fn run;
  const char *usage;            /* arguments after the command name */
  const char *summary;          /* one line */
  const char *details;          /* the command's options, for CMD --help */
};

static const struct command *find_command(const char *name);
static void print_general_help(FILE *f);

static void print_command_help(const struct command *cmd) {
  printf("usage: " PROG " %s %s\n\n%s\n%s%s", cmd->name, cmd->usage,
         cmd->summary, *cmd->details ? "\n" : "", cmd->details);
}

/* ---------------------------------------------------------------- output */

/* Writes s with bytes outside printable ASCII (and the backslash) escaped
 * as \xNN, so that a bad name shows what it really holds. */
static void put_escaped(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p < 0x20 || *p > 0x7e || *p == '\\')
      fprintf(f, *p == '\\' ? "\\\\" : "\\x%02x", *p);
    else
      fputc(*p, f);
  }
}

/* Writes s as a JSON string, quotes included. */
static void put_json_string(FILE *f, const char *s) {
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

/* The hint after a usage error: the usage line of the command (or the
 * general one).  Returns EXIT_USAGE. */
static int usage_hint(const struct command *cmd) {
  if (cmd)
    fprintf(stderr, "usage: " PROG " %s %s\n", cmd->name, cmd->usage);
  else
    fprintf(stderr, "usage: " PROG " [options] <command> [args]"
                    "   (see '" PROG " --help')\n");
  return EXIT_USAGE;
}

/* "logcounter: <what>" and the usage hint; returns EXIT_USAGE. */
static int usage_error(const struct command *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(fmt, ap);
  va_end(ap);
  return usage_hint(cmd);
}

/* "logcounter: cannot <what>: <lc_strerror(rc)> (<detail>)"; returns
 * EXIT_RUNTIME.  Call it right after the failing call: the detail is only
 * valid until the next lc_ call. */
static int runtime_error(int rc, const char *fmt, ...) {
  char detail[512];
  snprintf(detail, sizeof detail, "%s", lc_last_detail());
  va_list ap;
  fputs(PROG ": cannot ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, ": %s", lc_strerror(rc));
  if (*detail)
    fprintf(stderr, " (%s)", detail);
  fputc('\n', stderr);
  return EXIT_RUNTIME;
}

/* Formats microseconds since the epoch as 2026-11-29T23:04:17.123456Z. */
static void format_time_us(int64_t us, char *buf, size_t size) {
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

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static double monotonic_s(void) {
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
static int parse_number(const struct command *cmd, const char *what,
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
    put_escaped(stderr, text);
    fprintf(stderr, "' for %s (must be %" PRIu64 "..%" PRIu64 ")\n", where,
            min, max);
    return usage_hint(cmd);
  }
  *out = v;
  return 0;
}

/* Parses a duration: digits with an optional unit ms, s, m, h, d or w
 * (plain digits are seconds).  *out receives microseconds. */
static int parse_duration(const struct command *cmd, const char *where,
                          const char *text, int64_t *out) {
  static const struct { const char *unit, *what; uint64_t us; } units[] = {
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
    if (strcmp(text + digits, units[i].unit) != 0 || digits == 0)
      continue;
    char num[32];
    uint64_t v;
    if (digits >= sizeof num)
      break;
    memcpy(num, text, digits);
    num[digits] = '\0';
    if (parse_number(cmd, units[i].what, where, num, 0,
                     (uint64_t)INT64_MAX / units[i].us, &v))
      return EXIT_USAGE;
    *out = (int64_t)(v * units[i].us);
    return 0;
  }
  fputs(PROG ": invalid duration '", stderr);
  put_escaped(stderr, text);
  fprintf(stderr, "' for %s (a number with an optional unit ms, s, m, h, "
                  "d or w, e.g. 30d)\n", where);
  return usage_hint(cmd);
}

/* Checks a counter name before anything is opened. */
static int check_name(const struct command *cmd, const char *name) {
  if (lc_check_name(name) == 0)
    return 0;
  fputs(PROG ": invalid counter name '", stderr);
  put_escaped(stderr, name);
  fprintf(stderr, "': %s\n", lc_strerror(LC_ENAME));
  return usage_hint(cmd);
}

/* Reports getopt's '?' (unknown option) or ':' (missing value); last is
 * the argument getopt looked at last. */
static int bad_option(const struct command *cmd, int opt, const char *last) {
  bool is_long = last[0] == '-' && last[1] == '-';
  if (opt == ':') {
    if (is_long)
      return usage_error(cmd, "option '%s' needs a value", last);
    return usage_error(cmd, "option '-%c' needs a value", optopt);
  }
  if (optopt || !is_long)
    return usage_error(cmd, "unknown option '-%c'", optopt);
  return usage_error(cmd, "unknown option '%s'", last);
}

static int unexpected(const struct command *cmd, const char *arg) {
  fputs(PROG ": unexpected argument '", stderr);
  put_escaped(stderr, arg);
  fputs("'\n", stderr);
  return usage_hint(cmd);
}

/* Called for each option of a subcommand other than --help and --json. */
typedef int (*option_fn)(struct cli *c, int opt, const char *arg, void *ctx);

/*
 * Parses a subcommand's arguments: options anywhere (getopt_long, restarted
 * with optind = 1 on the sub-argv), "--" ends them, the rest go to pos[].
 * --help and --json are handled here for every command.  Returns 0,
 * HELP_SHOWN, or EXIT_USAGE after printing the reason.
 */
static int parse_args(struct cli *c, int argc, char **argv,
                      const char *shortopts, const struct option *longopts,
                      option_fn fn, void *ctx, const char **pos, int min_pos,
                      int max_pos, int *npos) {
  const struct command *cmd = c->cmd;
  int n = 0;
  optind = 1;
  opterr = 0;
  while (optind < argc) {
    const char *a = argv[optind];
    if (strcmp(a, "--") == 0) {
      for (optind++; optind < argc; optind++) {
        if (n == max_pos)
          return unexpected(cmd, argv[optind]);
        pos[n++] = argv[optind];
      }
      break;
    }
    if (a[0] != '-' || a[1] == '\0') {          /* a positional argument */
      if (n == max_pos)
        return unexpected(cmd, a);
      pos[n++] = a;
      optind++;
      continue;
    }
    int opt = getopt_long(argc, argv, shortopts, longopts, NULL);
    if (opt == -1)
      break;
    if (opt == '?' || opt == ':')
      return bad_option(cmd, opt, argv[optind - 1]);
    if (opt == 'h') {
      print_command_help(cmd);
      return HELP_SHOWN;
    }
    if (opt == 'J') {
      c->json = true;
      continue;
    }
    int rc = fn ? fn(c, opt, optarg, ctx) : EXIT_USAGE;
    if (rc)
      return rc;
  }
  if (n < min_pos)
    return usage_error(cmd, "missing argument%s", min_pos > 1 ? "s" : "");
  *npos = n;
  return 0;
}

/* ------------------------------------------------------------- the handle */

/* mkdir -p for the parent directories of path (mode 0700); the library
 * creates the directory itself. */
static int make_parents(const char *path) {
  char *p = strdup(path);
  if (!p)
    return ENOMEM;
  char *slash = strrchr(p, '/');
  if (slash)
    *slash = '\0';
  for (char *s = p + 1; slash && *p; s++) {
    if (*s != '/' && *s != '\0')
      continue;
    char saved = *s;
    *s = '\0';
    if (mkdir(p, 0700) != 0 && errno != EEXIST) {
      int e = errno;
      free(p);
      return e;
    }
    *s = saved;
    if (saved == '\0')
      break;
  }
  free(p);
  return 0;
}

/* The log directory when neither --db nor LOGCOUNTER_DB gives one. */
static int default_db(struct cli *c) {
  const char *base = getenv("XDG_STATE_HOME"), *suffix = "/logcounter";
  if (!base || base[0] != '/') {        /* XDG: relative paths are ignored */
    base = getenv("HOME");
    suffix = "/.local/state/logcounter";
  }
  if (!base || !*base)
    return usage_error(NULL, "no log directory: give --db DIR or set "
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

static int open_handle(struct cli *c) {
  int e;
  if ((!c->db || !*c->db) && (e = default_db(c)))
    return e;
  if ((e = make_parents(c->db))) {
    fprintf(stderr, PROG ": cannot create the parent directories of '%s': "
                         "%s\n", c->db, strerror(e));
    return EXIT_RUNTIME;
  }
  lc_options o;
  lc_options_init(&o);
  o.memcached = c->memcached;
  o.db_path = c->db;
  o.durability = c->durability;
  o.timeout_ms = c->timeout_ms;
  o.lock_wait_ms = c->wait_ms;
  snprintf(c->owner, sizeof c->owner, PROG " %s (pid %ld)", c->cmd->name,
           (long)getpid());
  o.owner = c->owner;
  int rc = lc_open(&o, &c->h);
  if (rc) {
    c->h = NULL;
    if (rc == LC_ECONFIG || rc == LC_EMEMCACHED || rc == LC_ETIMEDOUT)
      return runtime_error(rc, "connect to memcached '%s'", c->memcached);
    return runtime_error(rc, "open the log '%s'", c->db);
  }
  return 0;
}

/* Closes the handle; a failure turns a success into a runtime error. */
static int close_handle(struct cli *c, int status) {
  if (!c->h)
    return status;
  int rc = lc_close(c->h);
  c->h = NULL;
  if (rc && status == 0)
    return runtime_error(rc, "close the log '%s'", c->db);
  return status;
}

/* ------------------------------------------------------------------- next */

static int next_option(struct cli *c, int opt, const char *arg, void *ctx) {
  if (opt != 'n')
    return EXIT_USAGE;
  return parse_number(c->cmd, "count", "-n", arg, 1, LC_BLOCK_MAX,
                      (uint64_t *)ctx);
}

/* errno of a failed write to stdout (print_range stops at the first). */
static int write_errno;

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
        write_errno = errno;            /* finish_output reports it */
        return;
      }
      len = 0;
    }
    while (n)
      buf[len++] = digits[--n];
    buf[len++] = '\n';
    if (v == last)
      break;
  }
  if (fwrite(buf, 1, len, stdout) != len)
    write_errno = errno;
}

static int cmd_next(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {
    {"count", required_argument, NULL, 'n'},
    {"help", no_argument, NULL, 'h'},
    {"json", no_argument, NULL, 'J'},
    {NULL, 0, NULL, 0}};
  uint64_t count = 1;
  const char *pos[1] = {DEFAULT_NAME};
  int npos, rc;
  if ((rc = parse_args(c, argc, argv, "+:hn:", lo, next_option, &count, pos,
                       0, 1, &npos)))
    return rc;
  const char *name = pos[0];
  if ((rc = check_name(c->cmd, name)) || (rc = open_handle(c)))
    return rc;
  int64_t first;
  rc = lc_next_n(c->h, name, count, &first);
  if (rc) {
    runtime_error(rc, "allocate from counter '%s'", name);
    return close_handle(c, EXIT_RUNTIME);
  }
  /* The values are logged: release the log before printing, so that a
   * slow reader of a long list does not keep others waiting. */
  if ((rc = close_handle(c, 0)))
    return rc;
  int64_t last = first + (int64_t)(count - 1);
  if (c->json) {
    fputs("{\"counter\":", stdout);
    put_json_string(stdout, name);
    printf(",\"first\":%" PRId64 ",\"last\":%" PRId64 ",\"count\":%" PRIu64
           "}\n", first, last, count);
  } else {
    print_range(first, last);
  }
  return 0;
}

/* ------------------------------------------------- current and restore */

static int name_only(struct cli *c, int argc, char **argv, const char **name) {
  static const struct option lo[] = {
    {"help", no_argument, NULL, 'h'},
    {"json", no_argument, NULL, 'J'},
    {NULL, 0, NULL, 0}};
  int npos, rc;
  if ((rc = parse_args(c, argc, argv, "+:h", lo, NULL, NULL, name, 1, 1,
                       &npos)))
    return rc;
  return check_name(c->cmd, *name);
}

/* current and restore: NAME in, the value the counter stands at out. */
static int value_command(struct cli *c, int argc, char **argv,
                         int (*op)(lc_t *, const char *, int64_t *),
                         const char *what) {
  const char *name;
  int64_t v;
  int rc;
  if ((rc = name_only(c, argc, argv, &name)) || (rc = open_handle(c)))
    return rc;
  if ((rc = op(c->h, name, &v)))
    return close_handle(c, runtime_error(rc, "%s counter '%s'", what, name));
  if ((rc = close_handle(c, 0)))
    return rc;
  if (c->json) {
    fputs("{\"counter\":", stdout);
    put_json_string(stdout, name);
    printf(",\"current\":%" PRId64 "}\n", v);
  } else {
    printf("%" PRId64 "\n", v);
  }
  return 0;
}

static int cmd_current(struct cli *c, int argc, char **argv) {
  return value_command(c, argc, argv, lc_current, "read");
}

static int cmd_restore(struct cli *c, int argc, char **argv) {
  return value_command(c, argc, argv, lc_restore, "restore");
}

/* ---------------------------------------------------------------- advance */

static int cmd_advance(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {
    {"help", no_argument, NULL, 'h'},
    {"json", no_argument, NULL, 'J'},
    {NULL, 0, NULL, 0}};
  const char *pos[2];
  uint64_t min_next;
  int npos, rc;
  if ((rc = parse_args(c, argc, argv, "+:h", lo, NULL, NULL, pos, 2, 2,
                       &npos)) ||
      (rc = check_name(c->cmd, pos[0])) ||
      (rc = parse_number(c->cmd, "value", "VALUE", pos[1], 1, LC_VALUE_MAX,
                         &min_next)) ||
      (rc = open_handle(c)))
    return rc;
  rc = lc_advance(c->h, pos[0], (int64_t)min_next);
  if (rc)
    return close_handle(c, runtime_error(rc, "advance counter '%s'", pos[0]));
  if ((rc = close_handle(c, 0)))
    return rc;
  if (c->json) {
    fputs("{\"counter\":", stdout);
    put_json_string(stdout, pos[0]);
    printf(",\"min_next\":%" PRIu64 "}\n", min_next);
  } else {
    printf("%s: next value >= %" PRIu64 "\n", pos[0], min_next);
  }
  return 0;
}

/* ------------------------------------------------------------------ prune */

struct prune_ctx {
  lc_prune_opts opts;
  const char *name;
  double last_shown;            /* monotonic seconds; 0: nothing shown */
  uint64_t scanned, deleted;    /* as last reported by the library */
};

static int prune_option(struct cli *c, int opt, const char *arg, void *ctx) {
  struct prune_ctx *p = ctx;
  uint64_t v;
  int64_t us;
  switch (opt) {
  case 'k':
    if (*arg && arg[strspn(arg, "0")] == '\0')
      return usage_error(c->cmd, "the newest record is always kept; --keep "
                                 "must be at least 1");
    if (parse_number(c->cmd, "count", "--keep", arg, 1, UINT64_MAX, &v))
      return EXIT_USAGE;
    p->opts.keep = v;
    return 0;
  case 'b':
    if (parse_number(c->cmd, "value", "--below", arg, 1, LC_VALUE_MAX, &v))
      return EXIT_USAGE;
    p->opts.below = (int64_t)v;
    return 0;
  case 'o':
    if (parse_duration(c->cmd, "--older-than", arg, &us))
      return EXIT_USAGE;
    /* A cut-off before the epoch keeps everything; 0 would mean "not
     * given", so the earliest cut-off is 1 us. */
    p->opts.older_than_us = us >= now_us() ? 1 : now_us() - us;
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
  double now = monotonic_s();
  p->scanned = scanned;
  p->deleted = deleted;
  if (p->last_shown != 0 && now - p->last_shown < 0.2)
    return;
  p->last_shown = now;
  show_progress(p);
}

static int cmd_prune(struct cli *c, int argc, char **argv) {
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
  if ((rc = parse_args(c, argc, argv, "+:h", lo, prune_option, &p, pos, 1, 1,
                       &npos)) ||
      (rc = check_name(c->cmd, pos[0])))
    return rc;
  if (!p.opts.keep && !p.opts.below && !p.opts.older_than_us)
    return usage_error(c->cmd, "say what to prune: --keep, --below and/or "
                               "--older-than");
  p.name = pos[0];
  if (isatty(STDERR_FILENO)) {
    p.opts.progress = prune_progress;
    p.opts.progress_arg = &p;
  }
  if ((rc = open_handle(c)))
    return rc;
  lc_prune_result res;
  rc = lc_prune(c->h, pos[0], &p.opts, &res);
  if (p.last_shown != 0) {             /* the final figures, then a newline */
    show_progress(&p);
    fputc('\n', stderr);
  }
  if (rc)
    return close_handle(c, runtime_error(rc, "prune counter '%s'", pos[0]));
  if ((rc = close_handle(c, 0)))
    return rc;
  if (c->json) {
    fputs("{\"counter\":", stdout);
    put_json_string(stdout, pos[0]);
    printf(",\"deleted\":%" PRIu64 ",\"kept\":%" PRIu64 "}\n", res.deleted,
           res.kept);
  } else {
    printf("%s: deleted %" PRIu64 " records, kept %" PRIu64 "\n", pos[0],
           res.deleted, res.kept);
  }
  return 0;
}

/* ----------------------------------------------------------------- verify */

struct verify_report {
  uint64_t records, ids, gaps, missing, overlaps, undecodable, inconsistent;
  int64_t lowest, highest, reservation;
  int64_t gap_from[MAX_GAPS_LISTED], gap_to[MAX_GAPS_LISTED];
};

/* Adds one record to the report; prev_last is the highest value seen so
 * far (0: none yet). */
static void verify_record(struct verify_report *r, const lc_record *rec,
                          int64_t *prev_last) {
  if (rec->first < 1 || rec->last < rec->first ||
      (uint64_t)(rec->last - rec->first) + 1 != rec->count) {
    r->inconsistent++;
    return;
  }
  if (r->records++ == 0)
    r->lowest = rec->first;
  r->ids += rec->count;
  if (*prev_last && rec->first <= *prev_last) {
    r->overlaps++;
  } else if (*prev_last && rec->first > *prev_last + 1) {
    if (r->gaps < MAX_GAPS_LISTED) {
      r->gap_from[r->gaps] = *prev_last + 1;
      r->gap_to[r->gaps] = rec->first - 1;
    }
    r->gaps++;
    r->missing += (uint64_t)(rec->first - *prev_last - 1);
  }
  if (rec->last > *prev_last)
    *prev_last = rec->last;
  r->highest = *prev_last;
}

static void print_verify(struct cli *c, const char *name,
                         const struct verify_report *r, bool ok) {
  uint64_t listed = r->gaps < MAX_GAPS_LISTED ? r->gaps : MAX_GAPS_LISTED;
  if (c->json) {
    fputs("{\"counter\":", stdout);
    put_json_string(stdout, name);
    printf(",\"ok\":%s,\"records\":%" PRIu64, ok ? "true" : "false",
           r->records);
    if (r->records)
      printf(",\"lowest\":%" PRId64 ",\"highest\":%" PRId64, r->lowest,
             r->highest);
    else
      fputs(",\"lowest\":null,\"highest\":null", stdout);
    printf(",\"ids\":%" PRIu64 ",\"gaps\":%" PRIu64 ",\"missing\":%" PRIu64
           ",\"gap_list\":[", r->ids, r->gaps, r->missing);
    for (uint64_t i = 0; i < listed; i++)
      printf("%s\"%" PRId64 "-%" PRId64 "\"", i ? "," : "", r->gap_from[i],
             r->gap_to[i]);
    printf("],\"overlaps\":%" PRIu64 ",\"undecodable\":%" PRIu64
           ",\"inconsistent\":%" PRIu64 ",\"reservation\":%" PRId64 "}\n",
           r->overlaps, r->undecodable, r->inconsistent, r->reservation);
    return;
  }
  printf("counter:      %s\n", name);
  printf("records:      %" PRIu64 "\n", r->records);
  if (r->records)
    printf("lowest:       %" PRId64 "\nhighest:      %" PRId64 "\n",
           r->lowest, r->highest);
  else
    printf("lowest:       -\nhighest:      -\n");
  printf("ids covered:  %" PRIu64 "\n", r->ids);
  printf("gaps:         %" PRIu64 " (%" PRIu64 " values never handed out)",
         r->gaps, r->missing);
  for (uint64_t i = 0; i < listed; i++)
    printf("%s%" PRId64 "-%" PRId64, i ? " " : ": ", r->gap_from[i],
           r->gap_to[i]);
  printf("%s\n", r->gaps > listed ? " ..." : "");
  printf("overlaps:     %" PRIu64 "%s\n", r->overlaps,
         r->overlaps ? " (values logged twice: CORRUPTION)" : "");
  printf("undecodable:  %" PRIu64 "\n", r->undecodable);
  if (r->inconsistent)
    printf("inconsistent: %" PRIu64 " (count does not match first..last)\n",
           r->inconsistent);
  printf("reservation:  %" PRId64 "\n", r->reservation);
  printf("status:       %s\n", ok ? "ok" : "CORRUPT");
}

static int cmd_verify(struct cli *c, int argc, char **argv) {
  const char *name;
  int rc;
  if ((rc = name_only(c, argc, argv, &name)) || (rc = open_handle(c)))
    return rc;
  struct verify_report r;
  memset(&r, 0, sizeof r);
  lc_iter *it;
  if ((rc = lc_iter_open(c->h, name, &it)))
    return close_handle(c, runtime_error(rc, "read the log of '%s'", name));
  int64_t prev_last = 0;
  lc_record rec;
  memset(&rec, 0, sizeof rec);
  while ((rc = lc_iter_next(it, &rec)) != 0) {
    if (rc == 1) {
      verify_record(&r, &rec, &prev_last);
    } else if (rc == LC_ECORRUPT) {
      r.undecodable++;
      if (rec.last > prev_last)       /* its key: the values up to it are */
        prev_last = rec.last;         /* accounted for, not a gap */
    } else {
      runtime_error(rc, "read the log of '%s'", name);
      lc_iter_close(it);
      return close_handle(c, EXIT_RUNTIME);
    }
  }
  lc_iter_close(it);
  if ((rc = lc_reservation(c->h, name, &r.reservation)))
    return close_handle(c, runtime_error(rc, "read the reservation of '%s'",
                                         name));
  if ((rc = close_handle(c, 0)))
    return rc;
  bool ok = !r.undecodable && !r.overlaps && !r.inconsistent;
  print_verify(c, name, &r, ok);
  return ok ? 0 : EXIT_RUNTIME;
}

/* ------------------------------------------------------------------- dump */

static int cmd_dump(struct cli *c, int argc, char **argv) {
  const char *name;
  int rc;
  if ((rc = name_only(c, argc, argv, &name)) || (rc = open_handle(c)))
    return rc;
  lc_iter *it;
  if ((rc = lc_iter_open(c->h, name, &it)))
    return close_handle(c, runtime_error(rc, "read the log of '%s'", name));
  uint64_t bad = 0;
  lc_record rec;
  memset(&rec, 0, sizeof rec);
  char when[64];
  while ((rc = lc_iter_next(it, &rec)) != 0 && !ferror(stdout)) {
    if (rc == LC_ECORRUPT) {
      bad++;
      const char *why = lc_last_detail();
      if (c->json) {
        printf("{\"undecodable\":true,\"key\":%" PRId64 ",\"detail\":",
               rec.last);
        put_json_string(stdout, why);
        fputs("}\n", stdout);
      } else {
        printf("# undecodable record (key value %" PRId64 ")%s%s\n", rec.last,
               *why ? ": " : "", why);
      }
      continue;
    }
    if (rc != 1) {
      runtime_error(rc, "read the log of '%s'", name);
      lc_iter_close(it);
      return close_handle(c, EXIT_RUNTIME);
    }
    format_time_us(rec.time_us, when, sizeof when);
    if (c->json)
      printf("{\"first\":%" PRId64 ",\"last\":%" PRId64 ",\"count\":%" PRIu64
             ",\"time_us\":%" PRId64 ",\"time\":\"%s\"}\n", rec.first,
             rec.last, rec.count, rec.time_us, when);
    else if (rec.count == 1 && rec.first == rec.last)
      printf("%" PRId64 " 1 %s\n", rec.first, when);
    else
      printf("%" PRId64 "-%" PRId64 " %" PRIu64 " %s\n", rec.first, rec.last,
             rec.count, when);
  }
  lc_iter_close(it);
  if ((rc = close_handle(c, 0)))
    return rc;
  if (bad) {
    fprintf(stderr, PROG ": %" PRIu64 " undecodable record%s in the log of "
                         "'%s'\n", bad, bad == 1 ? "" : "s", name);
    return EXIT_RUNTIME;
  }
  return 0;
}

/* ------------------------------------------------------------------- help */

static int cmd_help(struct cli *c, int argc, char **argv) {
  const char *pos[1];
  int npos, rc;
  static const struct option lo[] = {{"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};
  if ((rc = parse_args(c, argc, argv, "+:h", lo, NULL, NULL, pos, 0, 1,
                       &npos)))
    return rc;
  if (npos == 0) {
    print_general_help(stdout);
    return 0;
  }
  const struct command *cmd = find_command(pos[0]);
  if (!cmd)
    return usage_error(NULL, "unknown command '%s'", pos[0]);
  print_command_help(cmd);
  return 0;
}

/* ------------------------------------------------------ the command table */

static const struct command commands[] = {
  {"next", cmd_next, "[NAME] [-n COUNT]",
   "allocate COUNT ids (default 1), one per line",
   "  NAME             the counter (default: \"" DEFAULT_NAME "\")\n"
   "  -n, --count N    allocate a block of N consecutive ids, 1..1000000000\n"
   "                   (default 1), with one memcached increment and one\n"
   "                   log record\n"
   "  --json           print {\"counter\",\"first\",\"last\",\"count\"}\n"},
  {"current", cmd_current, "NAME",
   "print the value the counter stands at",
   "  The next id will be greater than it.  Changes nothing.\n"
   "  --json           print {\"counter\",\"current\"}\n"},
  {"restore", cmd_restore, "NAME",
   "re-seed memcached from the log if it lost NAME",
   "  Prints the value the counter now stands at.  'next' does this by\n"
   "  itself when needed.\n"
   "  --json           print {\"counter\",\"current\"}\n"},
  {"advance", cmd_advance, "NAME VALUE",
   "make the next id at least VALUE (never lowers)",
   "  VALUE is 1..9223372036854775807.  Never lowers the counter.\n"
   "  --json           print {\"counter\",\"min_next\"}\n"},
  {"prune", cmd_prune,
   "NAME [--keep N] [--below VALUE] [--older-than DURATION]",
   "delete old log records (give a criterion)",
   "  Deletes the oldest records up to the first one a criterion keeps.  The\n"
   "  newest record and the reservation are never deleted.\n"
   "  --keep N         keep at least the N newest records (N >= 1)\n"
   "  --below VALUE    delete records whose last value is below VALUE\n"
   "  --older-than D   delete records written more than D ago; D is a\n"
   "                   number with a unit ms, s, m, h, d or w (e.g. 30d);\n"
   "                   a plain number is seconds\n"
   "  --json           print {\"counter\",\"deleted\",\"kept\"}\n"},
  {"verify", cmd_verify, "NAME",
   "check the log: records, gaps, overlaps",
   "  Gaps (values never handed out) are normal after failures and are\n"
   "  listed; overlapping or undecodable records are corruption: exit 1.\n"
   "  --json           print one object with every figure\n"},
  {"dump", cmd_dump, "NAME",
   "print the audit trail, oldest record first",
   "  One line per record: FIRST-LAST COUNT TIME (just FIRST for a single\n"
   "  id), TIME in UTC with microseconds.  Undecodable records are shown as\n"
   "  '# undecodable record (key value V)' and make the exit status 1.\n"
   "  --json           one object per line: {\"first\",\"last\",\"count\",\n"
   "                   \"time_us\",\"time\"}\n"},
  {"help", cmd_help, "[COMMAND]", "show this help, or one command's",
   ""},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct command *find_command(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

static void print_general_help(FILE *f) {
  fprintf(f,
    "usage: " PROG " [options] <command> [args]\n\n"
    "Hands out unique serial numbers: each one is counted in memcached and\n"
    "logged to a LevelDB directory before it is printed.\n\nCommands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++) {
    char head[96];
    snprintf(head, sizeof head, "%s %s", commands[i].name, commands[i].usage);
    if (strlen(head) > 26)
      fprintf(f, "  %s\n  %-26s  %s\n", head, "", commands[i].summary);
    else
      fprintf(f, "  %-26s  %s\n", head, commands[i].summary);
  }
  fprintf(f,
    "\nOptions (before the command):\n"
    "  --memcached CONFIG   memcached servers, libmemcached syntax\n"
    "                       (default: $LOGCOUNTER_MEMCACHED, else\n"
    "                       " DEFAULT_MEMCACHED ")\n"
    "  --db DIR             the log directory (default: $LOGCOUNTER_DB, else\n"
    "                       $XDG_STATE_HOME/logcounter, else\n"
    "                       $HOME/.local/state/logcounter)\n"
    "  --durability MODE    default (a synced reservation keeps ids unique\n"
    "                       after an OS crash) or sync (every record synced)\n"
    "                       (default: $LOGCOUNTER_DURABILITY, else default)\n"
    "  --timeout MS         memcached timeout, 1..%d (default %d)\n"
    "  --wait MS            wait this long for a log directory in use by\n"
    "                       another process, 0..%d (default %d)\n"
    "  --json               machine-readable output: one JSON object per\n"
    "                       command (dump: one per record, one per line)\n"
    "  -h, --help           this help ('" PROG " CMD --help': one command)\n"
    "  --version            print the version\n\n"
    "Environment: LOGCOUNTER_MEMCACHED, LOGCOUNTER_DB, LOGCOUNTER_DURABILITY,\n"
    "XDG_STATE_HOME, HOME (see above).\n\n"
    "Exit status: 0 success, 1 runtime error (or corruption found by verify\n"
    "or dump), 2 usage error.\n",
    MAX_TIMEOUT_MS, DEFAULT_TIMEOUT_MS, MAX_WAIT_MS, DEFAULT_WAIT_MS);
}

/* ------------------------------------------------------------------- main */

/* Parses the global options; returns 0, HELP_SHOWN or EXIT_USAGE. */
static int parse_globals(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {
    {"memcached", required_argument, NULL, 'M'},
    {"db", required_argument, NULL, 'D'},
    {"durability", required_argument, NULL, 'S'},
    {"timeout", required_argument, NULL, 'T'},
    {"wait", required_argument, NULL, 'W'},
    {"json", no_argument, NULL, 'J'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};
  bool version = false;
  const char *durability = getenv("LOGCOUNTER_DURABILITY");
  const char *durability_from = "LOGCOUNTER_DURABILITY";
  uint64_t v;
  int opt;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, "+:h", lo, NULL)) != -1) {
    switch (opt) {
    case 'M': c->memcached = optarg; break;
    case 'D': c->db = optarg; break;
    case 'S': durability = optarg; durability_from = "--durability"; break;
    case 'J': c->json = true; break;
    case 'V': version = true; break;
    case 'h': print_general_help(stdout); return HELP_SHOWN;
    case 'T':
      if (parse_number(NULL, "timeout", "--timeout", optarg, 1,
                       MAX_TIMEOUT_MS, &v))
        return EXIT_USAGE;
      c->timeout_ms = (int)v;
      break;
    case 'W':
      if (parse_number(NULL, "wait", "--wait", optarg, 0, MAX_WAIT_MS, &v))
        return EXIT_USAGE;
      c->wait_ms = (int)v;
      break;
    default:
      return bad_option(NULL, opt, argv[optind - 1]);
    }
  }
  if (version) {
    if (c->json)
      printf("{\"version\":\"%s\"}\n", lc_version());
    else
      printf(PROG " %s\n", lc_version());
    return HELP_SHOWN;
  }
  if (durability && *durability &&
      lc_durability_parse(durability, &c->durability) != 0)
    return usage_error(NULL, "invalid durability '%s' for %s (must be "
                             "default or sync)", durability, durability_from);
  return 0;
}

/* Flushes stdout; a failed write anywhere turns success into exit 1. */
static int finish_output(int status) {
  int failed = fflush(stdout) != 0 ? errno : 0;
  if (!failed && ferror(stdout))
    failed = write_errno ? write_errno : EIO;
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
  if (!c.memcached || !*c.memcached)
    c.memcached = DEFAULT_MEMCACHED;
  c.db = getenv("LOGCOUNTER_DB");
  c.durability = LC_DURABILITY_DEFAULT;
  c.timeout_ms = DEFAULT_TIMEOUT_MS;
  c.wait_ms = DEFAULT_WAIT_MS;

  int status = parse_globals(&c, argc, argv);
  if (status == HELP_SHOWN)
    return finish_output(0);
  if (status)
    return status;
  if (optind >= argc)
    return usage_error(NULL, "no command given");
  if (!(c.cmd = find_command(argv[optind])))
    return usage_error(NULL, "unknown command '%s'", argv[optind]);

  status = c.cmd->run(&c, argc - optind, argv + optind);
  if (status == HELP_SHOWN)
    status = 0;
  status = close_handle(&c, status);
  free(c.db_alloc);
  return finish_output(status);
}
