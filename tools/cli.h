/*
 * cli.h - the internals shared by the files of the logcounter command line
 * tool; nothing here is installed or part of liblogcounter's API.
 *
 *   cli_main.c    main
 *   logcounter.c  the global options, the subcommand table, help
 *   cli_util.c    messages and exit codes, output escaping, the argument
 *                 parsers (one strict number parser), opening and closing
 *                 the handle (a log, or a logcounterd with --server)
 *   cli_cmds.c    next, current, restore, advance, release, adopt, prune
 *   cli_backup.c  backup (a copy of the log into a new directory)
 *   cli_promote.c promote (a standby becomes the primary)
 *   cli_audit.c   verify, dump
 *   cli_ledger.c  gaps, void (the gap ledger)
 *   cli_trail.c   records and ledger entries merged, for the three above
 *   cli_tally.c   tally add, get, flush, list
 *   cli_stats.c   stats (a logcounterd's statistics, through libmemcached)
 *
 * Conventions every file keeps (git style):
 *  - exit 0 on success, 1 on a runtime error (or when verify/dump find
 *    corruption), 2 on a usage error;
 *  - every message on stderr starts with "logcounter: "; runtime errors read
 *    "logcounter: cannot <what>: <reason> (<detail>)";
 *  - nothing is opened (no memcached, no log, no daemon) before all
 *    arguments have been checked, and the handle is always closed with its
 *    result checked;
 *  - stdout is flushed and checked before exiting 0, so a full disk or a
 *    closed pipe is never a silent success.
 * The tool is single-threaded: the globals below need no locking.
 */
#ifndef LOGCOUNTER_CLI_H
#define LOGCOUNTER_CLI_H

#include "logcounter.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define PROG "logcounter"
#define DEFAULT_MEMCACHED "--SERVER=127.0.0.1:11211"
#define DEFAULT_NAME "default"
#define DEFAULT_TIMEOUT_MS 1000
#define DEFAULT_WAIT_MS 10000
#define MAX_TIMEOUT_MS 600000
#define MAX_WAIT_MS 86400000
#define MAX_GAPS_LISTED 10
#define MAX_SERVER_LEN 1000 /* longest --server address, in bytes */

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };
/* Returned by argument parsing when --help was printed: exit 0. */
#define HELP_SHOWN (-1)

struct command;

/* Everything a subcommand needs: the global settings and the handle. */
struct cli {
  const char *memcached;
  const char *db;
  char *db_alloc;                /* db when built from XDG_STATE_HOME/HOME */
  const char *server;            /* a logcounterd's address; NULL: local */
  const char *user;              /* --user: authenticate to it; NULL: no */
  char password[256];            /* read from --password-file or the
                                    environment, never the command line */
  const char *tls_ca, *tls_cert, *tls_key; /* --tls-*: TLS to it */
  const char *etcd, *cluster;    /* --etcd, --cluster: the primary's data
                                    port from etcd's leader key (main) */
  const char *etcd_cacert, *etcd_cert, *etcd_key; /* --etcd-* */
  char server_buf[MAX_SERVER_LEN + 1]; /* server when found in etcd */
  char via[MAX_SERVER_LEN + 32]; /* " through logcounterd 'ADDR'", or "" */
  lc_durability_t durability;
  uint64_t prefetch; /* lc_options.prefetch */
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
  const char *usage;   /* arguments after the command name */
  const char *summary; /* one line */
  const char *details; /* the command's options, for CMD --help */
  bool needs_log;      /* with --server, only through an admin socket:
                                   the log */
};

/* ---- logcounter.c: the subcommand table, help, the global options */
extern const struct command cli_commands[];
extern const size_t cli_ncommands;
const struct command *cli_find_command(const char *name); /* or NULL */
void cli_print_command_help(const struct command *cmd);
/* Parses the global options (getopt: optind is left at the command);
 * returns 0, HELP_SHOWN or EXIT_USAGE. */
int cli_parse_globals(struct cli *c, int argc, char **argv);

/* ---- cli_util.c: output and messages */
/* errno of a failed write to stdout; main reports it before exiting. */
extern int cli_write_errno;
/* s with bytes outside printable ASCII (and the backslash) as \xNN. */
void cli_put_escaped(FILE *f, const char *s);
/* s as a JSON string, quotes included. */
void cli_put_json(FILE *f, const char *s);
/* The usage line of cmd (or the general one) on stderr; EXIT_USAGE. */
int cli_usage_hint(const struct command *cmd);
/* "logcounter: <what>" and the usage hint; returns EXIT_USAGE. */
int cli_usage_error(const struct command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "logcounter: cannot <what>: <lc_strerror(rc)> (<detail>)"; returns
 * EXIT_RUNTIME.  Call it right after the failing lc_ call. */
int cli_runtime_error(int rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "logcounter: <what>" without a library code; returns EXIT_RUNTIME. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Microseconds since the epoch as 2026-11-29T23:04:17.123456Z. */
void cli_format_time(int64_t us, char *buf, size_t size);
int64_t cli_now_us(void);
double cli_monotonic_s(void);

/* ---- cli_util.c: argument parsing (each returns 0 or EXIT_USAGE after
 * printing the reason) */
int cli_parse_number(const struct command *cmd, const char *what,
                     const char *where, const char *text, uint64_t min,
                     uint64_t max, uint64_t *out);
/* A strict signed 64-bit decimal (optional sign, digits only). */
int cli_parse_i64(const struct command *cmd, const char *what, const char *text,
                  int64_t *out);
/* Digits with an optional unit ms, s, m, h, d or w; *out in us. */
int cli_parse_duration(const struct command *cmd, const char *where,
                       const char *text, int64_t *out);
int cli_check_name(const struct command *cmd, const char *name);
/* getopt's '?' or ':'; arg is the argument getopt was reading
 * (argv[optind] before the call). */
int cli_bad_option(const struct command *cmd, int opt, const char *arg);
/* Called for each option of a subcommand other than --help and --json. */
typedef int (*option_fn)(struct cli *c, int opt, const char *arg, void *ctx);
/* A subcommand's arguments: options anywhere, "--" ends them, the rest go
 * to pos[]; --help ('h') and --json ('J') are handled here.  Returns 0,
 * HELP_SHOWN or EXIT_USAGE. */
int cli_parse_args(struct cli *c, int argc, char **argv, const char *shortopts,
                   const struct option *longopts, option_fn fn, void *ctx,
                   const char **pos, int min_pos, int max_pos, int *npos);
/* Arguments of a command taking just NAME (and --help, --json). */
int cli_name_only(struct cli *c, int argc, char **argv, const char **name);

/* ---- cli_util.c: the handle */
/* Opens c->h: the log (creating its parents), or with --server the
 * daemon; refuses commands that need the log when given --server.
 * Returns 0 or EXIT_RUNTIME / EXIT_USAGE after printing the reason. */
int cli_open(struct cli *c);
/* Closes c->h (if open); a failure turns a success into EXIT_RUNTIME. */
int cli_close(struct cli *c, int status);
/* Ends a command's use of c->h: reports a failed call (rc != 0) as
 * cli_runtime_error does, then closes.  Returns 0 only when the call and
 * the close both succeeded, else the exit status. */
int cli_finish(struct cli *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- cli_trail.c: a counter's records and ledger entries, merged in
 * value order, with the holes no entry explains */
enum trail_kind { TRAIL_RECORD, TRAIL_GAP, TRAIL_VOID, TRAIL_BAD };
struct trail_item {
  enum trail_kind kind;
  int64_t first, last;
  uint64_t count;
  int64_t time_us;
  int version;        /* TRAIL_RECORD: LC_RECORD_* */
  int cause;          /* TRAIL_GAP: LC_GAP_*, or 0 for a hole between
                             records that no ledger entry explains */
  const char *reason; /* TRAIL_VOID */
  bool overlap;       /* a record or gap entry over values seen
                             already, or a void outside every record */
  bool entry;         /* TRAIL_BAD: an undecodable ledger entry (else
                             an undecodable record; last: its key) */
  const char *detail; /* TRAIL_BAD: why */
};
typedef void (*trail_fn)(void *ctx, const struct trail_item *t);
/* Calls fn for each item; 0, or EXIT_RUNTIME after printing why the log
 * could not be read. */
int trail_walk(struct cli *c, const char *name, trail_fn fn, void *ctx);
/* "block", "segment", "segment-open", "void", a cause's name, or
 * "unexplained". */
const char *trail_kind(const struct trail_item *t);
/* One gap, void or open segment: "FIRST-LAST COUNT TIME KIND [REASON]"
 * (text), or one JSON object; both end the line. */
void trail_put_gap(struct cli *c, const struct trail_item *t);

/* ---- the subcommands (cli_cmds.c, cli_backup.c, cli_audit.c,
 * cli_ledger.c, cli_stats.c, cli_tally.c) */
int cmd_next(struct cli *c, int argc, char **argv);
int cmd_current(struct cli *c, int argc, char **argv);
int cmd_restore(struct cli *c, int argc, char **argv);
int cmd_advance(struct cli *c, int argc, char **argv);
int cmd_release(struct cli *c, int argc, char **argv);
int cmd_adopt(struct cli *c, int argc, char **argv);
int cmd_prune(struct cli *c, int argc, char **argv);
int cmd_backup(struct cli *c, int argc, char **argv);
int cmd_promote(struct cli *c, int argc, char **argv);
int cmd_verify(struct cli *c, int argc, char **argv);
int cmd_dump(struct cli *c, int argc, char **argv);
int cmd_gaps(struct cli *c, int argc, char **argv);
int cmd_void(struct cli *c, int argc, char **argv);
int cmd_tally(struct cli *c, int argc, char **argv);
int cmd_stats(struct cli *c, int argc, char **argv);

/* ---- cli_stats.c */
/* Checks a --server address: "HOST:PORT" or an absolute unix socket
 * path; 0, or EXIT_USAGE after a message naming `from`. */
int cli_check_server(const char *server, const char *from);

#endif /* LOGCOUNTER_CLI_H */
