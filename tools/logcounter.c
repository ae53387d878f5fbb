/*
 * logcounter.c - the logcounter command line tool: the global options,
 * the table of subcommands and the help texts (main is in cli_main.c).
 *
 * A thin shell over liblogcounter for operators and scripts: it allocates
 * serial numbers (next), shows and repairs counters (current, restore,
 * advance, release, adopt), looks after the log (prune, backup, verify,
 * dump, gaps, void), keeps tallies (tally), and shows a logcounterd's
 * statistics (stats).  With --server it talks to a running logcounterd
 * instead of owning a log: through its admin socket every command works
 * (the library's remote handle sends each call there); through a data
 * port only next and current.
 *
 * The subcommands live in cli_cmds.c, cli_backup.c, cli_audit.c,
 * cli_ledger.c, cli_tally.c and cli_stats.c, the shared plumbing in cli_util.c and
 * cli_trail.c; cli.h lists them and the conventions all
 * of them keep (exit codes, message format, nothing opened before the
 * arguments are checked, stdout checked before exit 0).
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void print_general_help(FILE *f);

void cli_print_command_help(const struct command *cmd) {
  printf("usage: " PROG " %s %s\n\n%s\n%s%s", cmd->name, cmd->usage,
         cmd->summary, *cmd->details ? "\n" : "", cmd->details);
}

/* ------------------------------------------------------------------- help */

static int cmd_help(struct cli *c, int argc, char **argv) {
  const char *pos[1];
  int npos, rc;
  static const struct option lo[] = {{"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};
  if ((rc = cli_parse_args(c, argc, argv, "+:h", lo, NULL, NULL, pos, 0, 1,
                           &npos)))
    return rc;
  if (npos == 0) {
    print_general_help(stdout);
    return 0;
  }
  const struct command *cmd = cli_find_command(pos[0]);
  if (!cmd) return cli_usage_error(NULL, "unknown command '%s'", pos[0]);
  cli_print_command_help(cmd);
  return 0;
}

/* ------------------------------------------------------ the command table */

const struct command cli_commands[] = {
    {"next", cmd_next, "[NAME] [-n COUNT]",
     "allocate COUNT ids (default 1), one per line",
     "  NAME             the counter (default: \"" DEFAULT_NAME "\")\n"
     "  -n, --count N    allocate a block of N consecutive ids, 1..1000000000\n"
     "                   (default 1), with one memcached increment and one\n"
     "                   log record\n"
     "  --json           print {\"counter\",\"first\",\"last\",\"count\"}\n",
     false},
    {"current", cmd_current, "NAME", "print the value the counter stands at",
     "  The next id will be greater than it.  Changes nothing.\n"
     "  --json           print {\"counter\",\"current\"}\n",
     false},
    {"restore", cmd_restore, "NAME",
     "re-seed memcached from the log if it lost NAME",
     "  Prints the value the counter now stands at.  'next' does this by\n"
     "  itself when needed.  Needs the log: with --server, an admin socket.\n"
     "  --json           print {\"counter\",\"current\"}\n",
     true},
    {"advance", cmd_advance, "NAME VALUE",
     "make the next id at least VALUE (never lowers)",
     "  VALUE is 1..9223372036854775807.  Never lowers the counter.  Needs\n"
     "  the log: with --server, an admin socket.\n"
     "  --json           print {\"counter\",\"min_next\"}\n",
     true},
    {"release", cmd_release, "NAME",
     "give the counter up to another log; prints its final value",
     "  Records the final value (synced), marks the counter released in this\n"
     "  log and drops its claim in memcached.  This log then refuses it\n"
     "  (EOWNED) until 'adopt'.  Give the printed value to 'adopt --above'\n"
     "  on the new log.  Needs the log: with --server, an admin socket.\n"
     "  --json           print {\"counter\",\"final\"}\n",
     true},
    {"adopt", cmd_adopt, "NAME [--above VALUE]",
     "take a counter over (after 'release' on its old log)",
     "  Forgets a refusal or release recorded in this log, claims the\n"
     "  counter (EOWNED while another log holds it; a restored log takes\n"
     "  over the claim of the log it was copied from) and raises it so that\n"
     "  the next value is above VALUE.  Needs the log: with --server, an admin socket.\n"
     "  --above VALUE    the value 'release' printed (default 0)\n"
     "  --json           print {\"counter\",\"above\"}\n",
     true},
    {"prune", cmd_prune,
     "NAME [--keep N] [--below VALUE] [--older-than DURATION]",
     "delete old log records (give a criterion)",
     "  Deletes the oldest records up to the first one a criterion keeps.  The\n"
     "  newest record and the reservation are never deleted.  Needs the log:\n"
     "  with --server, an admin socket.\n"
     "  --keep N         keep at least the N newest records (N >= 1)\n"
     "  --below VALUE    delete records whose last value is below VALUE\n"
     "  --older-than D   delete records written more than D ago; D is a\n"
     "                   number with a unit ms, s, m, h, d or w (e.g. 30d);\n"
     "                   a plain number is seconds\n"
     "  --json           print {\"counter\",\"deleted\",\"kept\"}\n",
     true},
    {"backup", cmd_backup, "DIR",
     "copy the log, consistently, into a new directory while it serves",
     "  DIR must not exist; its parent must.  The copy is one snapshot,\n"
     "  synced, marked as a restored backup; until its last write DIR holds\n"
     "  BACKUP-INCOMPLETE and cannot be opened.  A log opened on it takes a\n"
     "  new identity: it refuses each counter the original still claims\n"
     "  (EOWNED) until 'adopt NAME' (stop the original first); it goes on\n"
     "  above memcached's value for each counter memcached still holds, and\n"
     "  refuses the others (EBEHIND) until 'adopt NAME --above V' with V at\n"
     "  least the last id handed out.  Needs the log: with --server, an\n"
     "  admin socket (a relative DIR is from here; the daemon writes it).\n"
     "  --json           print {\"keys\",\"records\",\"bytes\",\"time_us\",\n"
     "                   \"time\",\"dir\"}\n",
     true},
    {"promote", cmd_promote, "[--force] [--above V]",
     "make the standby behind --server ADMIN the primary",
     "  The standby (logcounterd --standby-of) stops following, and every\n"
     "  counter goes on above the largest of its last replicated floor,\n"
     "  memcached's value and V: the skipped range is a gap of cause\n"
     "  failover.  A stale standby (its primary ran in preferred mode, or\n"
     "  it never caught up) refuses: exit 1, ESTALE.  Needs --server with\n"
     "  the standby's admin socket.\n"
     "  --force          promote a stale standby: then V (or memcached) must\n"
     "                   cover every id the old primary handed out\n"
     "  --above V        every counter goes on above V too\n"
     "  --json           print {\"promoted\",\"counters\"}\n",
     true},
    {"verify", cmd_verify, "NAME [--explain]",
     "check the log: records, gaps and their causes, overlaps",
     "  Gaps (values never handed out) are normal after failures; each has a\n"
     "  cause in the gap ledger (see 'gaps').  A gap with none, overlapping\n"
     "  or undecodable records or ledger entries: exit 1.  Needs the log:\n"
     "  with --server, an admin socket.\n"
     "  --explain        list every gap with its cause (else the first 10)\n"
     "  --json           print one object with every figure\n",
     true},
    {"dump", cmd_dump, "NAME", "print the audit trail, oldest record first",
     "  One line per record: FIRST-LAST COUNT TIME (just FIRST for a single\n"
     "  id), TIME in UTC with microseconds; ledger entries (gaps and voids)\n"
     "  in value order among them, as 'gaps' prints them.  Undecodable\n"
     "  records are shown as\n"
     "  '# undecodable record (key value V)' and make the exit status 1.\n"
     "  Needs the log: with --server, an admin socket.\n"
     "  --json           one object per line: {\"first\",\"last\",\"count\",\n"
     "                   \"time_us\",\"time\"}\n",
     true},
    {"gaps", cmd_gaps, "NAME",
     "list every gap with its cause, every void, every open segment",
     "  One line per gap: FIRST-LAST COUNT TIME CAUSE (just FIRST for one\n"
     "  value).  Causes: burned (a log write failed), restart (reserved by a\n"
     "  run that stopped without closing), unlogged (memcached was ahead of\n"
     "  the log: a run died between increment and write, or another client),\n"
     "  segment-unused (a prefetched segment's unused rest), advance\n"
     "  (advance or adopt --above), void (handed out, then voided: REASON\n"
     "  follows), segment-open (a prefetched segment a crash left open: some\n"
     "  values may never have gone out), unexplained (no ledger entry, TIME\n"
     "  '-': exit 1).\n"
     "  Needs the log: with --server, an admin socket.\n"
     "  --json           one object per line: {\"first\",\"last\",\"count\",\n"
     "                   \"cause\",\"time_us\",\"time\",\"reason\"}\n",
     true},
    {"void", cmd_void, "NAME VALUE --reason TEXT",
     "mark an id that was handed out but never used (audit)",
     "  Records, synced, that VALUE was handed out and then not used (a\n"
     "  cancelled order), with why.  Refused for a value never handed out,\n"
     "  and for one voided already.  'gaps' and 'dump' list voids.  Needs\n"
     "  the log: with --server, an admin socket.\n"
     "  --reason TEXT    why, 1..200 bytes (required)\n"
     "  --json           print {\"counter\",\"voided\",\"reason\"}\n",
     true},
    {"stats", cmd_stats, "[--json]",
     "show a logcounterd's statistics (needs --server)",
     "  One 'NAME VALUE' line per figure, as the daemon reports them (its\n"
     "  pid, uptime, connections, requests, ids handed out, log writes...).\n"
     "  --json           print one object {NAME: VALUE, ...}\n",
     false},
    {"tally", cmd_tally,
     "add NAME DELTA | get NAME | flush [--sweep] | list "
     "[options]",
     "write-behind counts: change, read, flush to the log, list",
     "  add NAME DELTA   change the tally by DELTA (non-zero, may be negative;\n"
     "                   one memcached round trip; pending until a flush)\n"
     "  get NAME         the durable total in the log, the change pending in\n"
     "                   memcached, and how often memcached lost pending\n"
     "                   changes\n"
     "  flush [--sweep]  apply every pending change to the log (a CLI\n"
     "                   process always sweeps all tallies)\n"
     "  list             tallies by name, or by total with --top/--by-total:\n"
     "    --prefix P     names starting with P\n"
     "    --min N, --max N  durable totals within [N, M]\n"
     "    --top K        the K largest totals (--by-total --limit K)\n"
     "    --by-total     largest total first (ties: name descending)\n"
     "    --offset N, --limit N  pagination\n"
     "  --json           one JSON object per line\n"
     "  Tallies are separate from serial counters (a name may be both).\n"
     "  Needs the log: with --server, an admin socket.\n",
     true},
    {"help", cmd_help, "[COMMAND]", "show this help, or one command's", "",
     false},
};
const size_t cli_ncommands = sizeof cli_commands / sizeof cli_commands[0];

const struct command *cli_find_command(const char *name) {
  for (size_t i = 0; i < cli_ncommands; i++)
    if (strcmp(cli_commands[i].name, name) == 0) return &cli_commands[i];
  return NULL;
}

static void print_general_help(FILE *f) {
  fprintf(
      f,
      "usage: " PROG " [options] <command> [args]\n\n"
      "Hands out unique serial numbers: each one is counted in memcached and\n"
      "logged to a LevelDB directory before it is printed.\n\nCommands:\n");
  for (size_t i = 0; i < cli_ncommands; i++) {
    char head[96];
    snprintf(head, sizeof head, "%s %s", cli_commands[i].name,
             cli_commands[i].usage);
    if (strlen(head) > 26)
      fprintf(f, "  %s\n  %-26s  %s\n", head, "", cli_commands[i].summary);
    else
      fprintf(f, "  %-26s  %s\n", head, cli_commands[i].summary);
  }
  fprintf(
      f,
      "\nOptions (before the command):\n"
      "  --server ADDR        talk to a running logcounterd instead of owning a\n"
      "                       log: at its admin socket (a unix socket path,\n"
      "                       logcounterd --admin-socket) every command works,\n"
      "                       with the same output, and at its TLS port with\n"
      "                       --tls-ca and a --user with the admin right; at\n"
      "                       a data port otherwise (HOST:PORT or its -s\n"
      "                       socket) only next and current;\n"
      "                       --memcached, --db, --durability and --wait do\n"
      "                       not apply (default: $LOGCOUNTER_SERVER;\n"
      "                       --server '' overrides it)\n"
      "  --etcd URL[,URL...] --cluster NAME\n"
      "                       instead of --server: the data port of the\n"
      "                       cluster's primary, read from etcd's leader key\n"
      "                       (/logcounter/NAME/leader; its first --listen\n"
      "                       address); --etcd-cacert, --etcd-cert and\n"
      "                       --etcd-key FILE for etcd over https\n"
      "  --user NAME          authenticate to a logcounterd with --auth-file\n"
      "                       (memcached's text handshake; default:\n"
      "                       $LOGCOUNTER_USER); the password is the first\n"
      "                       line of --password-file FILE (default:\n"
      "                       $LOGCOUNTER_PASSWORD_FILE), else\n"
      "                       $LOGCOUNTER_PASSWORD, never an argument\n"
      "  --tls-ca FILE        speak TLS to a logcounterd with --tls-cert: its\n"
      "                       certificate must chain to these PEM CAs and\n"
      "                       name the host of --server (default:\n"
      "                       $LOGCOUNTER_TLS_CA)\n"
      "  --tls-cert FILE, --tls-key FILE\n"
      "                       this client's certificate and key (PEM), for a\n"
      "                       daemon with --tls-verify require\n"
      "  --memcached CONFIG   memcached servers, libmemcached syntax\n"
      "                       (default: $LOGCOUNTER_MEMCACHED, else\n"
      "                       " DEFAULT_MEMCACHED ")\n"
      "  --db DIR             the log directory (default: $LOGCOUNTER_DB, else\n"
      "                       $XDG_STATE_HOME/logcounter, else\n"
      "                       $HOME/.local/state/logcounter)\n"
      "  --durability MODE    default (a synced reservation keeps ids unique\n"
      "                       after an OS crash) or sync (every record synced)\n"
      "                       (default: $LOGCOUNTER_DURABILITY, else default)\n"
      "  --prefetch off|auto|N  hand ids out of prefetched segments of N\n"
      "                       values (auto: sized to last about a second);\n"
      "                       the unused rest is given back at exit (default:\n"
      "                       $LOGCOUNTER_PREFETCH, else off)\n"
      "  --timeout MS         memcached (or logcounterd) timeout, 1..%d\n"
      "                       (default %d)\n"
      "  --wait MS            wait this long for a log directory in use by\n"
      "                       another process, 0..%d (default %d)\n"
      "  --json               machine-readable output: one JSON object per\n"
      "                       command (dump: one per record, one per line)\n"
      "  -h, --help           this help ('" PROG " CMD --help': one command)\n"
      "  --version            print the version\n\n"
      "Environment: LOGCOUNTER_SERVER, LOGCOUNTER_USER, LOGCOUNTER_PASSWORD_FILE,\n"
      "LOGCOUNTER_PASSWORD, LOGCOUNTER_MEMCACHED, LOGCOUNTER_DB,\n"
      "LOGCOUNTER_DURABILITY, LOGCOUNTER_PREFETCH, XDG_STATE_HOME, HOME (see\n"
      "above).\n\n"
      "Exit status: 0 success, 1 runtime error (or corruption found by verify\n"
      "or dump), 2 usage error.\n",
      MAX_TIMEOUT_MS, DEFAULT_TIMEOUT_MS, MAX_WAIT_MS, DEFAULT_WAIT_MS);
}

/* ------------------------------------------------------------------- main */

/* --user's password: the first line of FILE (--password-file or
 * $LOGCOUNTER_PASSWORD_FILE), else $LOGCOUNTER_PASSWORD; never an
 * argument, so that it stays out of process listings. */
static int read_password(struct cli *c, const char *file) {
  const char *env = getenv("LOGCOUNTER_PASSWORD");
  if (file && *file) {
    FILE *f = fopen(file, "r");
    if (!f) {
      cli_usage_error(NULL, "cannot read the password file '%s': %s", file,
                      strerror(errno));
      return -1;
    }
    if (!fgets(c->password, sizeof c->password, f)) c->password[0] = '\0';
    fclose(f);
    c->password[strcspn(c->password, "\r\n")] = '\0';
  } else if (env && *env) {
    snprintf(c->password, sizeof c->password, "%s", env);
  }
  if (!c->password[0]) {
    cli_usage_error(NULL, "--user needs a password: --password-file FILE, "
                          "$LOGCOUNTER_PASSWORD_FILE or $LOGCOUNTER_PASSWORD");
    return -1;
  }
  return 0;
}

int cli_parse_globals(struct cli *c, int argc, char **argv) {
  static const struct option lo[] = {
      {"server", required_argument, NULL, 'R'},
      {"etcd", required_argument, NULL, 'E'},
      {"cluster", required_argument, NULL, 'L'},
      {"etcd-cacert", required_argument, NULL, 'a'},
      {"etcd-cert", required_argument, NULL, 'c'},
      {"etcd-key", required_argument, NULL, 'k'},
      {"user", required_argument, NULL, 'U'},
      {"password-file", required_argument, NULL, 'F'},
      {"tls-ca", required_argument, NULL, 'A'},
      {"tls-cert", required_argument, NULL, 'C'},
      {"tls-key", required_argument, NULL, 'K'},
      {"memcached", required_argument, NULL, 'M'},
      {"db", required_argument, NULL, 'D'},
      {"durability", required_argument, NULL, 'S'},
      {"prefetch", required_argument, NULL, 'P'},
      {"timeout", required_argument, NULL, 'T'},
      {"wait", required_argument, NULL, 'W'},
      {"json", no_argument, NULL, 'J'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  bool version = false;
  const char *durability = getenv("LOGCOUNTER_DURABILITY");
  const char *durability_from = "LOGCOUNTER_DURABILITY";
  const char *prefetch = getenv("LOGCOUNTER_PREFETCH");
  const char *prefetch_from = "LOGCOUNTER_PREFETCH";
  const char *server_from = "LOGCOUNTER_SERVER";
  const char *password_file = getenv("LOGCOUNTER_PASSWORD_FILE");
  c->user = getenv("LOGCOUNTER_USER");
  c->tls_ca = getenv("LOGCOUNTER_TLS_CA");
  uint64_t v;
  int opt;
  opterr = 0;
  /* The argument getopt reads next, for cli_bad_option: the only short
   * option, -h, ends the parse, so an error is never inside a cluster. */
  const char *arg = argc > 1 ? argv[1] : "";
  while ((opt = getopt_long(argc, argv, "+:h", lo, NULL)) != -1) {
    switch (opt) {
    case 'R':
      c->server = optarg;
      server_from = "--server";
      break;
    case 'E': c->etcd = optarg; break;
    case 'L': c->cluster = optarg; break;
    case 'a': c->etcd_cacert = optarg; break;
    case 'c': c->etcd_cert = optarg; break;
    case 'k': c->etcd_key = optarg; break;
    case 'U': c->user = optarg; break;
    case 'F': password_file = optarg; break;
    case 'A': c->tls_ca = optarg; break;
    case 'C': c->tls_cert = optarg; break;
    case 'K': c->tls_key = optarg; break;
    case 'M': c->memcached = optarg; break;
    case 'D': c->db = optarg; break;
    case 'S':
      durability = optarg;
      durability_from = "--durability";
      break;
    case 'P':
      prefetch = optarg;
      prefetch_from = "--prefetch";
      break;
    case 'J': c->json = true; break;
    case 'V': version = true; break;
    case 'h': print_general_help(stdout); return HELP_SHOWN;
    case 'T':
      if (cli_parse_number(NULL, "timeout", "--timeout", optarg, 1,
                           MAX_TIMEOUT_MS, &v))
        return EXIT_USAGE;
      c->timeout_ms = (int)v;
      break;
    case 'W':
      if (cli_parse_number(NULL, "wait", "--wait", optarg, 0, MAX_WAIT_MS, &v))
        return EXIT_USAGE;
      c->wait_ms = (int)v;
      break;
    default: return cli_bad_option(NULL, opt, arg);
    }
    arg = optind < argc ? argv[optind] : "";
  }
  if (c->etcd && !*c->etcd) c->etcd = NULL;
  if (c->etcd && c->server && *c->server && strcmp(server_from, "--server") == 0)
    return cli_usage_error(NULL, "give --server or --etcd, not both");
  if (c->etcd) c->server = NULL; /* found by main, before the command */
  if (c->etcd && !(c->cluster && *c->cluster))
    return cli_usage_error(NULL, "--etcd needs --cluster NAME (logcounterd's)");
  if (!c->etcd && (c->cluster || c->etcd_cacert || c->etcd_cert || c->etcd_key))
    return cli_usage_error(NULL, "--cluster and --etcd-* go with --etcd");
  if (!c->etcd_cert != !c->etcd_key)
    return cli_usage_error(NULL, "give both --etcd-cert and --etcd-key");
  if (c->user && !*c->user) c->user = NULL;
  if (c->user && !(c->server && *c->server) && !c->etcd)
    return cli_usage_error(NULL, "--user is for a logcounterd: give --server");
  if (c->user && read_password(c, password_file) != 0) return EXIT_USAGE;
  if (c->tls_ca && !*c->tls_ca) c->tls_ca = NULL;
  if ((c->tls_ca || c->tls_cert || c->tls_key) && !(c->server && *c->server) &&
      !c->etcd)
    return cli_usage_error(NULL, "--tls-ca is for a logcounterd: give "
                                 "--server");
  if (!c->tls_ca && (c->tls_cert || c->tls_key))
    return cli_usage_error(NULL, "--tls-cert and --tls-key need --tls-ca");
  if (!c->tls_cert != !c->tls_key)
    return cli_usage_error(NULL, "give both --tls-cert and --tls-key");
  if (version) {
    if (c->json)
      printf("{\"version\":\"%s\"}\n", lc_version());
    else
      printf(PROG " %s\n", lc_version());
    return HELP_SHOWN;
  }
  if (durability && *durability &&
      lc_durability_parse(durability, &c->durability) != 0)
    return cli_usage_error(NULL,
                           "invalid durability '%s' for %s (must be "
                           "default or sync)",
                           durability, durability_from);
  if (prefetch && *prefetch && lc_prefetch_parse(prefetch, &c->prefetch) != 0)
    return cli_usage_error(NULL,
                           "invalid prefetch '%s' for %s (must be off, "
                           "auto or a segment size 1..%llu)",
                           prefetch, prefetch_from,
                           (unsigned long long)LC_BLOCK_MAX);
  if (c->server && !*c->server) /* --server '': a local log */
    c->server = NULL;
  if (c->server) {
    if (cli_check_server(c->server, server_from)) return EXIT_USAGE;
    snprintf(c->via, sizeof c->via, " through logcounterd '%s'", c->server);
  }
  return 0;
}
