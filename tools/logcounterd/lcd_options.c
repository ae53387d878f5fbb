/*
 * lcd_options.c - logcounterd's settings from its command line: the
 * defaults (lcd_settings_init), --help (usage), and the options
 * (getopt_long; a usage error prints why and exits 2).
 */
#include "lcd_admit.h"
#include "lcd_conn.h"
#include "lcd_settings.h"
#include "lcd_metrics.h"
#include "lcd_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { EXIT_USAGE = 2 };
#define LCD_LIMIT_MAX 1000000000ULL /* --max-counters, --max-tallies */
#define DEFAULT_LISTEN "127.0.0.1:11311"
#define LCD_STR(x) #x
#define LCD_XSTR(x) LCD_STR(x) /* a number macro as text, for --help */
#define DEFAULT_MEMCACHED "--SERVER=127.0.0.1:11211"

/* The CPUs this process may run on, within 1..LCD_THREADS_MAX. */
static int default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > LCD_THREADS_MAX ? LCD_THREADS_MAX : (int)n;
}

void lcd_settings_init(lcd_settings *set) {
  memset(set, 0, sizeof *set);
  set->listen = DEFAULT_LISTEN;
  set->socket_path = NULL;
  set->socket_mode = 0660;
  set->admin_socket = NULL;
  set->admin_mode = 0600;
  set->memcached = getenv("LOGCOUNTER_MEMCACHED");
  if (!set->memcached || !*set->memcached) set->memcached = DEFAULT_MEMCACHED;
  set->db = getenv("LOGCOUNTER_DB");
  set->durability = LC_DURABILITY_DEFAULT;
  set->prefetch = LC_PREFETCH_AUTO; /* LOGCOUNTER_PREFETCH: lcd_options_parse */
  set->timeout_ms = 1000;
  set->threads = default_threads();
  set->workers = 32;
  set->max_connections = 1024;
  set->max_unfinished = LCD_UNFINISHED_DEFAULT;
  set->max_unfinished_addr = LCD_UNFINISHED_ADDR_DEFAULT;
  set->metrics_max = LCD_METRICS_MAX_DEFAULT;
  set->metrics_max_addr = LCD_METRICS_MAX_ADDR_DEFAULT;
  set->idle_timeout = 0;
  set->line_timeout = 10;
  set->drain_timeout = 10;
  set->reply_timeout = 10;
  set->backlog = 1024;
  set->verbose = 0;
  set->pidfile = NULL;
  set->coalesce = 1;
  set->max_counters = LCD_COUNTERS_DEFAULT;
  set->idle_evict_us = 600 * 1000000LL;
  set->max_tallies = LC_MAX_TALLIES_DEFAULT;
  set->flush_interval = 1;
  set->sweep_interval = 60;
  set->retain_records = 0;
  set->retain_age_us = 0;
  set->retain_interval_ms = 60000;
  set->standby_mode = LC_STANDBY_REQUIRED;
  set->standby_timeout_ms = 2000;
}

/* ---- usage ------------------------------------------------------------- */

static void usage(FILE *f) {
  lcd_settings d;
  lcd_settings_init(&d);
  fprintf(
      f,
      "usage: " LCD_PROG " --db DIR [options]\n\n"
      "The LogCounter service: hands out unique ids to any memcached client.\n"
      "Each id is counted in memcached and logged to the LevelDB directory DIR\n"
      "(which this process owns) before it is answered.  Runs in the\n"
      "foreground; logs go to stderr; tells systemd (Type=notify) through\n"
      "$NOTIFY_SOCKET when it is ready and when it stops.\n\n"
      "Protocol (memcached text protocol):\n"
      "  incr NAME N [noreply]   allocate a block of N ids (1..%llu) and\n"
      "                          answer the last; a new counter starts at 1\n"
      "  get NAME...  gets NAME...  the value each counter stands at\n"
      "                          (counters never used are absent); any\n"
      "                          number of keys, as in memcached\n"
      "  incr tally:NAME D [noreply], decr tally:NAME D [noreply]\n"
      "                          change the tally NAME by +D / -D\n"
      "                          (1..2^63-1); answers the total after it,\n"
      "                          floored at 0; applied to the log by the\n"
      "                          flusher (keys tally:... are always tallies)\n"
      "  get tally:NAME          the tally's signed total (log + pending)\n"
      "  stats tally NAME        its total in the log, pending, losses, lost\n"
      "  ma NAME [flags]         meta arithmetic: allocate a block of D ids\n"
      "                          (D<n>, default 1); HD, or with v \"VA <len>\"\n"
      "                          and the last id; q: no HD; k: the key;\n"
      "                          O<opaque>: copied back; c: the value as a\n"
      "                          cas; t: t-1 (no expiry); N<ttl>, T<ttl>:\n"
      "                          accepted, nothing expires; N with J<n>: a\n"
      "                          counter that gave no id yet starts at n;\n"
      "                          ma tally:NAME: +D (MI, M+) or -D (MD, M-)\n"
      "  mg NAME [flags]         meta get: the value (v), k, O, c, t, s\n"
      "                          (size), f (f0); EN for a counter never\n"
      "                          used (q: nothing); mn: MN\n"
      "                          b (base64), C/E (cas), mg h l N R T: refused\n"
      "  stats, stats settings, verbosity N, quit\n"
      "  stats slabs, stats items  END (no slabs: for monitoring tools)\n"
      "  version                 VERSION " LCD_PROTOCOL_VERSION " " LCD_PROG
      "-%s (the memcached\n"
      "                          level first: libmemcached needs it)\n"
      "  decr, set, add, replace, append, prepend, cas, delete, touch,\n"
      "  flush_all, ms, md, me: CLIENT_ERROR (counters only move forward;\n"
      "                          decr works on tallies only)\n"
      "  failures: SERVER_ERROR <LC error name> <message>[: <detail>]\n"
      "  memcached's binary protocol too (first byte 0x80): increment,\n"
      "                          decrement (tallies), get/getk and quiet\n"
      "                          forms, noop, version, stat, quit, SASL\n"
      "                          PLAIN with --auth-file; storage commands:\n"
      "                          not supported (docs/protocol.md)\n\n"
      "Options:\n"
      "  -l, --listen ADDR:PORT[,ADDR:PORT...]\n"
      "                          TCP addresses, numeric, at most %d\n"
      "                          (default %s; \"none\": no TCP);\n"
      "                          with --tls-cert each is TLS unless written\n"
      "                          notls:ADDR:PORT (plain text); an address\n"
      "                          that is not loopback needs --auth-file (or\n"
      "                          --insecure-listen)\n"
      "  -s, --socket PATH       also listen on a unix socket (default: none)\n"
      "  --socket-mode OCTAL     its permissions (default %04o)\n"
      "  --admin-socket PATH     serve operator commands on this unix socket\n"
      "                          (an absolute path): every 'logcounter'\n"
      "                          command, with --server PATH, while clients\n"
      "                          allocate (prune, verify, dump, gaps, void,\n"
      "                          advance, restore, release, adopt, tally,\n"
      "                          backup); never on a data port\n"
      "  --admin-socket-mode OCTAL  its permissions (default %04o)\n"
      "  --memcached CONFIG      memcached servers, libmemcached syntax\n"
      "                          (default: $LOGCOUNTER_MEMCACHED, else\n"
      "                          " DEFAULT_MEMCACHED ")\n"
      "  --db DIR                the log directory (required unless\n"
      "                          $LOGCOUNTER_DB is set)\n"
      "  --durability MODE       default (a synced reservation keeps ids\n"
      "                          unique after an OS crash) or sync (every\n"
      "                          record synced) (default %s)\n"
      "  --prefetch off|auto|N   hand ids out of prefetched segments of N\n"
      "                          values (auto: sized to last about a\n"
      "                          second); SIGTERM gives the unused rest back\n"
      "                          (default: $LOGCOUNTER_PREFETCH, else auto;\n"
      "                          off: one memcached incr per request)\n"
      "  --timeout MS            memcached timeout, 1..600000 (default %d)\n"
      "  -t, --threads N         event-loop threads, 1..%d (default %d, the\n"
      "                          CPUs): each owns its connections, answers\n"
      "                          what the library serves quickly itself, and\n"
      "                          merges a counter's requests of one turn\n"
      "                          into one memcached increment\n"
      "  --workers N             threads for slow library calls (first use\n"
      "                          of a name, sync durability), 1..1024\n"
      "                          (default %d; new names arriving together\n"
      "                          share one synced write per worker wave)\n"
      "  --no-coalesce           do not merge them: every incr request costs\n"
      "                          its own memcached increment (to measure\n"
      "                          what coalescing gains; implies --prefetch\n"
      "                          off unless --prefetch is given) (default:\n"
      "                          %s)\n"
      "  -c, --max-connections N client connections, 1..1000000 (default %d)\n"
      "  --max-connections-per-listener N\n"
      "                          of them on one --listen address or the\n"
      "                          unix socket (default: all of them); below\n"
      "                          -c, one port flooded leaves room on others\n"
      "  --max-unfinished N      of them, connections whose TLS or\n"
      "                          authentication handshake is not done yet,\n"
      "                          1..1000000 (default "
      LCD_XSTR(LCD_UNFINISHED_DEFAULT) "); a new one beyond\n"
      "                          it closes the oldest such (working ones are\n"
      "                          never closed for it)\n"
      "  --max-unfinished-per-address N\n"
      "                          the same, from one peer address (default\n"
      "                          " LCD_XSTR(LCD_UNFINISHED_ADDR_DEFAULT) ")\n"
      "  --max-counters N        counters the daemon keeps state for at\n"
      "                          once (each name an incr has used and not\n"
      "                          evicted), 1..10^9 (default %llu); a new\n"
      "                          name beyond it gets SERVER_ERROR ELIMIT\n"
      "                          and creates nothing\n"
      "  --idle-evict DURATION   drop a counter or a flushed tally unused\n"
      "                          this long from memory (closed as at a\n"
      "                          clean shutdown, loaded from the log at its\n"
      "                          next use), 0: never, else 10ms..1w\n"
      "                          (default %llds)\n"
      "  --max-tallies N         the same for tallies (default %llu)\n"
      "  --idle-timeout SECONDS  close clients idle this long, 0: never\n"
      "                          (default %d)\n"
      "  --line-timeout SECONDS  close clients that leave a request (or a\n"
      "                          TLS handshake) unfinished this long,\n"
      "                          1..3600 (default %d)\n"
      "  --drain-timeout SECONDS on SIGTERM, wait this long for clients to\n"
      "                          read their last replies (default %d)\n"
      "  --reply-timeout SECONDS close a client that leaves %d KiB of replies\n"
      "                          unread this long, 1..3600 (default %d): a\n"
      "                          client that pipelines without reading is\n"
      "                          read no further once %d KiB of its requests\n"
      "                          wait (the rest stays in the kernel and its\n"
      "                          writes block); others are not delayed\n"
      "  --flush-interval SECONDS  apply pending tally changes to the log\n"
      "                          this often, 0..86400; 0: only at shutdown\n"
      "                          (default %d); it bounds what a memcached\n"
      "                          restart can lose\n"
      "  --sweep-interval SECONDS  also compare every tally in the log with\n"
      "                          memcached this often (and at startup), to\n"
      "                          apply what a crash left pending; 0: only at\n"
      "                          startup (default %d)\n"
      "  --retain-records N      retention: every --retain-interval, prune\n"
      "                          every counter in the log to its N newest\n"
      "                          records, 1..2^63-1 (default: off)\n"
      "  --retain-age DURATION   retention: prune records older than\n"
      "                          DURATION (digits with an optional unit ms,\n"
      "                          s, m, h, d or w; no unit: seconds; e.g.\n"
      "                          30d) (default: off); with --retain-records\n"
      "                          a record either one keeps stays; the\n"
      "                          newest record and the reservation of a\n"
      "                          counter always stay\n"
      "  --retain-interval DURATION  between retention runs, 1ms..366d\n"
      "                          (default %llds)\n"
      "  --replication-listen HOST:PORT  serve one standby here: every\n"
      "                          floor (a reservation or segment, written\n"
      "                          once per window of ids) reaches it, synced,\n"
      "                          before any id under it goes out; records\n"
      "                          stream behind (under --durability sync they\n"
      "                          wait too).  With --tls-cert, --tls-key and\n"
      "                          --tls-ca the stream is mutual TLS (each side\n"
      "                          shows its certificate, signed by that CA;\n"
      "                          the standby checks the primary's names the\n"
      "                          host of --standby-of); otherwise it is not\n"
      "                          encrypted.  Not loopback: needs the secret\n"
      "                          or mutual TLS (or --insecure-listen)\n"
      "  --replication-secret-file FILE  its first line is a secret the\n"
      "                          primary and its standby must share: each\n"
      "                          proves it on the other's fresh nonce\n"
      "                          (HMAC-SHA256) before any of the log is\n"
      "                          sent; a side with one refuses a side\n"
      "                          without; refused if group or others may\n"
      "                          read it (default: none)\n"
      "  --standby-mode MODE     required (default): without an acknowledging\n"
      "                          standby, stop at the end of the current\n"
      "                          window (SERVER_ERROR ENOSTANDBY); preferred:\n"
      "                          go on alone (the standby is then stale)\n"
      "  --standby-timeout DURATION  how long a floor waits for the standby\n"
      "                          (default 2s)\n"
      "  --standby-of HOST:PORT  be the standby of that primary: --db follows\n"
      "                          its log; allocations answer SERVER_ERROR\n"
      "                          ESTANDBY, get and stats work; 'logcounter\n"
      "                          --server ADMIN promote' makes it the primary\n"
      "  --etcd URL[,URL...]     automatic failover: the node holding etcd's\n"
      "                          key /logcounter/CLUSTER/leader is the primary,\n"
      "                          the others follow it (no --standby-of); needs\n"
      "                          --cluster, --node and --replication-listen\n"
      "  --cluster NAME          the cluster's name in etcd\n"
      "  --node NAME             this node's name, unique in the cluster\n"
      "  --leader-ttl DURATION   the leader lease (default 5s; 2s .. 3600s)\n"
      "  --etcd-cacert FILE      the CA of etcd's https certificates (PEM)\n"
      "  --etcd-cert FILE        a client certificate for etcd (PEM), with\n"
      "                          --etcd-key FILE, its private key\n"
      "  --etcd-key FILE         the private key of --etcd-cert\n"
      "  --etcd-user USER        etcd's user/password auth, the password the\n"
      "                          first line of --etcd-password-file FILE\n"
      "  --etcd-password-file FILE  the password of --etcd-user\n"
      "  --metrics-listen HOST:PORT  serve Prometheus's text format at\n"
      "                          http://HOST:PORT/metrics (numeric; a bare\n"
      "                          PORT means 127.0.0.1:PORT): every 'stats'\n"
      "                          figure as logcounterd_NAME (counters\n"
      "                          logcounterd_NAME_total), each loop's\n"
      "                          counters (label loop), histograms of\n"
      "                          allocation latency and of the reservation\n"
      "                          and segment write latency; its own thread,\n"
      "                          never in the way of the data loops (default:\n"
      "                          off).  With --tls-cert it is HTTPS with the\n"
      "                          same certificate and --tls-verify (SIGHUP\n"
      "                          reloads it too) unless written notls:HOST:PORT.\n"
      "                          No auth file: an address that is not loopback\n"
      "                          needs TLS with --tls-verify require (or\n"
      "                          --insecure-listen)\n"
      "  --metrics-max-connections N  open /metrics connections at once,\n"
      "                          1..100000 (default "
      LCD_XSTR(LCD_METRICS_MAX_DEFAULT) "); at the bound further\n"
      "                          clients wait in the kernel's backlog\n"
      "  --metrics-max-per-address N  of them from one peer address\n"
      "                          (default " LCD_XSTR(LCD_METRICS_MAX_ADDR_DEFAULT) "); one beyond it is closed\n"
      "  --auth-file FILE        require memcached's authentication on the TCP\n"
      "                          port and the unix socket: FILE holds\n"
      "                          user:password lines (# comments); a client's\n"
      "                          first command is \"set <key> <flags> <exptime>\n"
      "                          <len>\" with data \"user password\": STORED\n"
      "                          (nothing with noreply), else CLIENT_ERROR and\n"
      "                          closed; before it only version and quit work\n"
      "                          (others: CLIENT_ERROR unauthenticated, then\n"
      "                          closed).  Passwords are kept as SHA-256\n"
      "                          digests, compared in constant time.  Repeated\n"
      "                          failures from one address (within %d s of\n"
      "                          the last) are answered after a delay: none\n"
      "                          for the first, then 100 ms doubling, at most\n"
      "                          %d ms; after a failure the address's\n"
      "                          handshakes are checked one at a time, each\n"
      "                          after that delay, however many connections\n"
      "                          it opens; %d addresses are remembered, the\n"
      "                          oldest forgotten first.  A file group or\n"
      "                          others may read, or naming a user twice, is\n"
      "                          refused.  SIGHUP reloads the\n"
      "                          file (a bad one keeps the old, logged);\n"
      "                          connections already in stay in; a connection\n"
      "                          not authenticated within --line-timeout is\n"
      "                          closed\n"
      "  --rights-file FILE      per-user rights (needs --auth-file); a line\n"
      "                          \"USER [prefix=P]... [names=N] [admin]\":\n"
      "                          USER may use counters whose name starts with\n"
      "                          a P (prefix=*: any), and tallies whose NAME\n"
      "                          in tally:NAME does; at most N distinct names\n"
      "                          (counters and tallies) by incr, ma and tally\n"
      "                          changes since start, counted on the first\n"
      "                          accepted request of each (reads never count);\n"
      "                          a user without a line may use no name; admin:\n"
      "                          on a TLS listener, \"admin\" relays the\n"
      "                          connection to --admin-socket (logcounter\n"
      "                          --server HOST:PORT --tls-ca CA --user U).\n"
      "                          Refusals: CLIENT_ERROR permission denied:\n"
      "                          <the missing right>.  SIGHUP reloads it\n"
      "  --insecure-listen       allow a non-loopback --listen without\n"
      "                          --auth-file, and a non-loopback\n"
      "                          --metrics-listen without mutual TLS (logged\n"
      "                          as a warning)\n"
      "  --tls-cert FILE         TLS on the --listen ports and /metrics: this\n"
      "                          PEM certificate chain (TLS 1.2 at least; the\n"
      "                          unix socket stays plain; default: no TLS)\n"
      "  --tls-key FILE          its PEM private key (needed with --tls-cert)\n"
      "  --tls-ca FILE           CA certificates for client certificates\n"
      "  --tls-verify MODE       client certificates: none (default),\n"
      "                          request (checked if sent) or require\n"
      "                          (mutual TLS: none, no connection); needs\n"
      "                          --tls-ca.  SIGHUP reloads the certificate,\n"
      "                          key and CA for new connections (open ones\n"
      "                          keep theirs; a failed reload keeps the old)\n"
      "  --pidfile FILE          write the pid here, removed at exit\n"
      "  -v, --verbose           log connections; twice: failed requests\n"
      "  -h, --help              this help\n"
      "  --version               print the version\n\n"
      "Signals: SIGTERM/SIGINT stop accepting, answer the requests already\n"
      "read, flush the tallies, close the log cleanly and exit 0 (a second\n"
      "one hurries; one while it starts ends the start, exit 0).  SIGHUP\n"
      "reloads --auth-file, --rights-file and the TLS certificates.\n\n"
      "The daemon holds the log: 'logcounter --db DIR' reports it as in use;\n"
      "run the log's commands through --admin-socket instead, and let\n"
      "--retain-records / --retain-age prune inside the daemon.\n\n"
      "Exit status: 0 after a clean shutdown, 1 runtime error, 2 usage error.\n",
      (unsigned long long)LC_BLOCK_MAX, lc_version(), LCD_LISTEN_MAX, d.listen,
      d.socket_mode,
      d.admin_mode,
      lc_durability_name(d.durability), d.timeout_ms, LCD_THREADS_MAX,
      d.threads, d.workers, d.coalesce ? "coalescing on" : "off",
      d.max_connections, (unsigned long long)d.max_counters,
      (long long)(d.idle_evict_us / 1000000), (unsigned long long)d.max_tallies, d.idle_timeout, d.line_timeout,
      d.drain_timeout, LCD_OUTPUT_MAX / 1024, d.reply_timeout,
      LCD_INPUT_MAX / 1024, d.flush_interval, d.sweep_interval,
      (long long)(d.retain_interval_ms / 1000), LCD_AUTH_FAIL_WINDOW,
      LCD_AUTH_DELAY_MAX_MS, LCD_AUTH_FAIL_SLOTS);
}

static int usage_error(const char *fmt, ...) {
  va_list ap;
  fputs(LCD_PROG ": ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\nusage: " LCD_PROG " --db DIR [options]   (see '" LCD_PROG
        " --help')\n",
        stderr);
  return EXIT_USAGE;
}

/* A decimal number in min..max, or a usage error naming the option. */
static int parse_number(const char *opt, const char *text, uint64_t min,
                        uint64_t max, uint64_t *out) {
  if (lcd_proto_number(text, strlen(text), out) != 0 || *out < min ||
      *out > max)
    return usage_error("invalid value '%s' for %s (must be %llu..%llu)", text,
                       opt, (unsigned long long)min, (unsigned long long)max);
  return 0;
}

/* Returns 0, -1 after --help/--version (exit 0), or EXIT_USAGE. */
enum {
  O_MC = 256,
  O_DB,
  O_DUR,
  O_TIMEOUT,
  O_IDLE,
  O_LINE,
  O_DRAIN,
  O_PID,
  O_MODE,
  O_VERSION,
  O_NO_COALESCE,
  O_FLUSH,
  O_SWEEP,
  O_REPLY,
  O_PREFETCH,
  O_WORKERS,
  O_MAX_COUNTERS,
  O_MAX_UNFINISHED,
  O_LISTENER_MAX,
  O_MAX_UNFINISHED_ADDR,
  O_MAX_TALLIES,
  O_ADMIN,
  O_ADMIN_MODE,
  O_RETAIN_RECORDS,
  O_RETAIN_AGE,
  O_IDLE_EVICT,
  O_RETAIN_INTERVAL,
  O_REPL_LISTEN,
  O_STANDBY_OF,
  O_STANDBY_MODE,
  O_STANDBY_TIMEOUT,
  O_METRICS,
  O_METRICS_MAX,
  O_METRICS_MAX_ADDR,
  O_REPL_SECRET,
  O_AUTH_FILE,
  O_RIGHTS_FILE,
  O_INSECURE_LISTEN,
  O_TLS_CERT,
  O_TLS_KEY,
  O_TLS_CA,
  O_TLS_VERIFY
};

static const struct option long_options[] = {
    {"listen", required_argument, NULL, 'l'},
    {"socket", required_argument, NULL, 's'},
    {"socket-mode", required_argument, NULL, O_MODE},
    {"admin-socket", required_argument, NULL, O_ADMIN},
    {"admin-socket-mode", required_argument, NULL, O_ADMIN_MODE},
    {"memcached", required_argument, NULL, O_MC},
    {"db", required_argument, NULL, O_DB},
    {"durability", required_argument, NULL, O_DUR},
    {"prefetch", required_argument, NULL, O_PREFETCH},
    {"timeout", required_argument, NULL, O_TIMEOUT},
    {"threads", required_argument, NULL, 't'},
    {"workers", required_argument, NULL, O_WORKERS},
    {"max-connections", required_argument, NULL, 'c'},
    {"max-unfinished", required_argument, NULL, O_MAX_UNFINISHED},
    {"max-connections-per-listener", required_argument, NULL, O_LISTENER_MAX},
    {"max-unfinished-per-address", required_argument, NULL,
     O_MAX_UNFINISHED_ADDR},
    {"max-counters", required_argument, NULL, O_MAX_COUNTERS},
    {"max-tallies", required_argument, NULL, O_MAX_TALLIES},
    {"idle-timeout", required_argument, NULL, O_IDLE},
    {"line-timeout", required_argument, NULL, O_LINE},
    {"drain-timeout", required_argument, NULL, O_DRAIN},
    {"reply-timeout", required_argument, NULL, O_REPLY},
    {"pidfile", required_argument, NULL, O_PID},
    {"flush-interval", required_argument, NULL, O_FLUSH},
    {"sweep-interval", required_argument, NULL, O_SWEEP},
    {"retain-records", required_argument, NULL, O_RETAIN_RECORDS},
    {"retain-age", required_argument, NULL, O_RETAIN_AGE},
    {"idle-evict", required_argument, NULL, O_IDLE_EVICT},
    {"retain-interval", required_argument, NULL, O_RETAIN_INTERVAL},
    {"no-coalesce", no_argument, NULL, O_NO_COALESCE},
    {"replication-listen", required_argument, NULL, O_REPL_LISTEN},
    {"standby-of", required_argument, NULL, O_STANDBY_OF},
    {"replication-secret-file", required_argument, NULL, O_REPL_SECRET},
    {"standby-mode", required_argument, NULL, O_STANDBY_MODE},
    {"standby-timeout", required_argument, NULL, O_STANDBY_TIMEOUT},
    {"metrics-listen", required_argument, NULL, O_METRICS},
    {"metrics-max-connections", required_argument, NULL, O_METRICS_MAX},
    {"metrics-max-per-address", required_argument, NULL, O_METRICS_MAX_ADDR},
    {"auth-file", required_argument, NULL, O_AUTH_FILE},
    {"rights-file", required_argument, NULL, O_RIGHTS_FILE},
    {"insecure-listen", no_argument, NULL, O_INSECURE_LISTEN},
    {"tls-cert", required_argument, NULL, O_TLS_CERT},
    {"tls-key", required_argument, NULL, O_TLS_KEY},
    {"tls-ca", required_argument, NULL, O_TLS_CA},
    {"tls-verify", required_argument, NULL, O_TLS_VERIFY},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, O_VERSION},
    {NULL, 0, NULL, 0}};

/* The numeric options: their bounds and the setting each one sets (an int,
 * or a uint64_t when wide). */
static const struct number_option {
  int opt;
  const char *name;
  uint64_t min, max;
  size_t offset;
  bool wide;
} number_options[] = {
    {O_TIMEOUT, "--timeout", 1, 600000, offsetof(lcd_settings, timeout_ms), 0},
    {'t', "--threads", 1, LCD_THREADS_MAX, offsetof(lcd_settings, threads), 0},
    {O_WORKERS, "--workers", 1, 1024, offsetof(lcd_settings, workers), 0},
    {'c', "--max-connections", 1, 1000000,
     offsetof(lcd_settings, max_connections), 0},
    {O_LISTENER_MAX, "--max-connections-per-listener", 1, 1000000,
     offsetof(lcd_settings, listener_max), 0},
    {O_MAX_UNFINISHED, "--max-unfinished", 1, 1000000,
     offsetof(lcd_settings, max_unfinished), 0},
    {O_MAX_UNFINISHED_ADDR, "--max-unfinished-per-address", 1, 1000000,
     offsetof(lcd_settings, max_unfinished_addr), 0},
    {O_METRICS_MAX, "--metrics-max-connections", 1, 100000,
     offsetof(lcd_settings, metrics_max), 0},
    {O_METRICS_MAX_ADDR, "--metrics-max-per-address", 1, 100000,
     offsetof(lcd_settings, metrics_max_addr), 0},
    {O_MAX_COUNTERS, "--max-counters", 1, LCD_LIMIT_MAX,
     offsetof(lcd_settings, max_counters), 1},
    {O_MAX_TALLIES, "--max-tallies", 1, LCD_LIMIT_MAX,
     offsetof(lcd_settings, max_tallies), 1},
    {O_IDLE, "--idle-timeout", 0, 86400 * 365,
     offsetof(lcd_settings, idle_timeout), 0},
    {O_LINE, "--line-timeout", 1, 3600, offsetof(lcd_settings, line_timeout),
     0},
    {O_DRAIN, "--drain-timeout", 0, 3600, offsetof(lcd_settings, drain_timeout),
     0},
    {O_REPLY, "--reply-timeout", 1, 3600, offsetof(lcd_settings, reply_timeout),
     0},
    {O_FLUSH, "--flush-interval", 0, 86400,
     offsetof(lcd_settings, flush_interval), 0},
    {O_SWEEP, "--sweep-interval", 0, 86400 * 30,
     offsetof(lcd_settings, sweep_interval), 0},
    {O_RETAIN_RECORDS, "--retain-records", 1, (uint64_t)INT64_MAX,
     offsetof(lcd_settings, retain_records), 1},
};

/* Sets a numeric option: 0, EXIT_USAGE, or 1 when opt is not one. */
static int number_option(lcd_settings *set, int opt, const char *text) {
  for (size_t i = 0; i < sizeof number_options / sizeof *number_options; i++) {
    const struct number_option *n = &number_options[i];
    if (n->opt != opt) continue;
    uint64_t v;
    int rc = parse_number(n->name, text, n->min, n->max, &v);
    if (rc) return rc;
    char *field = (char *)set + n->offset;
    if (n->wide)
      *(uint64_t *)field = v;
    else
      *(int *)field = (int)v;
    return 0;
  }
  return 1;
}

/* A DURATION (digits, then an optional unit ms, s, m, h, d or w; none:
 * seconds) in microseconds, min_us..max_us, or a usage error naming the
 * option.  The same syntax as the CLI's durations. */
static int parse_duration(const char *opt, const char *text, int64_t min_us,
                          int64_t max_us, int64_t *out_us) {
  static const struct {
    const char *unit;
    int64_t us;
  } units[] = {{"ms", 1000LL},          {"s", 1000000LL},
               {"m", 60000000LL},       {"h", 3600000000LL},
               {"d", 86400000000LL},    {"w", 604800000000LL},
               {"", 1000000LL}};
  size_t digits = strspn(text, "0123456789");
  uint64_t v;
  for (size_t i = 0; digits > 0 && i < sizeof units / sizeof *units; i++) {
    if (strcmp(text + digits, units[i].unit) != 0) continue;
    if (lcd_proto_number(text, digits, &v) != 0 ||
        v > (uint64_t)(max_us / units[i].us) ||
        (int64_t)v * units[i].us < min_us)
      break;
    *out_us = (int64_t)v * units[i].us;
    return 0;
  }
  return usage_error("invalid duration '%s' for %s (digits with an optional "
                     "unit ms, s, m, h, d or w, e.g. 30d; %lld ms .. %lld s)",
                     text, opt, (long long)(min_us / 1000),
                     (long long)(max_us / 1000000));
}

/* Replication (either role) over mutual TLS: the data ports' files. */
int lcd_settings_repl_tls(const lcd_settings *set) {
  return (set->replication_listen || set->standby_of) && set->tls_cert &&
         set->tls_ca;
}

/* A listener at addr that is not loopback, without what proves its
 * peers (lacking): exit 2 saying so, or with --insecure-listen a WARNING. */
static int public_check(const lcd_settings *set, const char *addr,
                        const char *verb, const char *doing,
                        const char *lacking, const char *risk,
                        const char *fix) {
  char open_to[LCD_ADDR_TEXT];
  if (!lcd_auth_public(addr, open_to, sizeof open_to)) return 0;
  if (!set->insecure_listen)
    return usage_error("refusing to %s on '%s', not a loopback address, "
                       "without %s: anyone who reaches it could %s (give %s, "
                       "or --insecure-listen on a trusted network)",
                       verb, open_to, lacking, risk, fix);
  lcd_log(NULL, 0, "WARNING: %s on %s, not a loopback address, without %s "
                   "(--insecure-listen): anyone who reaches it can %s",
          doing, open_to, lacking, risk);
  return 0;
}

/* --socket-mode, --admin-socket-mode: octal permission bits. */
static int socket_mode(int *mode, const char *opt, const char *text) {
  char *end;
  errno = 0;
  long m = strtol(text, &end, 8);
  if (errno || !*text || *end || m < 0 || m > 0777)
    return usage_error("invalid mode '%s' for %s (octal, e.g. 0660)", text,
                       opt);
  *mode = (int)m;
  return 0;
}

/* --replication-secret-file: its first line (never an argument, so that
 * it stays out of process listings). */
static int read_secret(lcd_settings *set, const char *file) {
  FILE *f = fopen(file, "r");
  if (!f)
    return usage_error("cannot read --replication-secret-file '%s': %s", file,
                       strerror(errno));
  char err[512];
  if (lcd_auth_private(fileno(f), file, err, sizeof err) != 0) {
    fclose(f);
    return usage_error("--replication-secret-file: %s", err);
  }
  if (!fgets(set->repl_secret, sizeof set->repl_secret, f))
    set->repl_secret[0] = '\0';
  fclose(f);
  set->repl_secret[strcspn(set->repl_secret, "\r\n")] = '\0';
  if (!set->repl_secret[0])
    return usage_error("--replication-secret-file '%s' is empty", file);
  return 0;
}

int lcd_options_parse(lcd_settings *set, int argc, char **argv) {
  int opt, rc = 0, retain_interval = 0;
  const char *prefetch = getenv("LOGCOUNTER_PREFETCH");
  const char *prefetch_from = "LOGCOUNTER_PREFETCH";
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":l:s:t:c:vh", long_options, NULL)) !=
         -1) {
    switch (opt) {
    case 'l': set->listen = optarg; break;
    case 's': set->socket_path = optarg; break;
    case O_MC: set->memcached = optarg; break;
    case O_DB: set->db = optarg; break;
    case O_PID: set->pidfile = optarg; break;
    case 'v': set->verbose++; break;
    case O_NO_COALESCE: set->coalesce = 0; break;
    case O_AUTH_FILE: set->auth_file = optarg; break;
    case O_RIGHTS_FILE: set->rights_file = optarg; break;
    case O_INSECURE_LISTEN: set->insecure_listen = 1; break;
    case O_PREFETCH:
      prefetch = optarg;
      prefetch_from = "--prefetch";
      break;
    case 'h': usage(stdout); return -1;
    case O_VERSION: printf(LCD_PROG " %s\n", lc_version()); return -1;
    case O_MODE: rc = socket_mode(&set->socket_mode, "--socket-mode", optarg); break;
    case O_ADMIN:
      if (optarg[0] != '/')
        rc = usage_error("--admin-socket '%s': give an absolute path", optarg);
      set->admin_socket = optarg;
      break;
    case O_ADMIN_MODE:
      rc = socket_mode(&set->admin_mode, "--admin-socket-mode", optarg);
      break;
    case O_IDLE_EVICT:
      rc = parse_duration("--idle-evict", optarg, 0, 604800000000LL,
                          &set->idle_evict_us);
      if (!rc && set->idle_evict_us > 0 && set->idle_evict_us < 10000)
        rc = usage_error("--idle-evict %s: give 0 (never) or at least 10ms",
                         optarg);
      break;
    case O_RETAIN_AGE:
      rc = parse_duration("--retain-age", optarg, 1000, INT64_MAX,
                          &set->retain_age_us);
      break;
    case O_RETAIN_INTERVAL: {
      int64_t us = 0;
      rc = parse_duration("--retain-interval", optarg, 1000,
                          366LL * 86400000000LL, &us);
      set->retain_interval_ms = us / 1000;
      retain_interval = 1;
      break;
    }
    case O_REPL_LISTEN: set->replication_listen = optarg; break;
    case O_STANDBY_OF: set->standby_of = optarg; break;
    case O_REPL_SECRET: rc = read_secret(set, optarg); break;
    case O_METRICS:
      set->metrics_listen = optarg;
      if (!lcd_metrics_addr_ok(optarg))
        rc = usage_error("invalid address '%s' for --metrics-listen "
                         "(numeric [notls:]HOST:PORT, e.g. 127.0.0.1:9311 "
                         "or [::1]:9311; a bare PORT means 127.0.0.1)",
                         optarg);
      break;
    case O_TLS_CERT: set->tls_cert = optarg; break;
    case O_TLS_KEY: set->tls_key = optarg; break;
    case O_TLS_CA: set->tls_ca = optarg; break;
    case O_TLS_VERIFY:
      if (strcmp(optarg, "none") == 0)
        set->tls_verify = LCD_TLS_VERIFY_NONE;
      else if (strcmp(optarg, "request") == 0)
        set->tls_verify = LCD_TLS_VERIFY_REQUEST;
      else if (strcmp(optarg, "require") == 0)
        set->tls_verify = LCD_TLS_VERIFY_REQUIRE;
      else
        rc = usage_error("invalid mode '%s' for --tls-verify (none, request "
                         "or require)",
                         optarg);
      break;
    case O_STANDBY_MODE:
      if (strcmp(optarg, "required") == 0)
        set->standby_mode = LC_STANDBY_REQUIRED;
      else if (strcmp(optarg, "preferred") == 0)
        set->standby_mode = LC_STANDBY_PREFERRED;
      else
        rc = usage_error("invalid mode '%s' for --standby-mode (required or "
                         "preferred)",
                         optarg);
      break;
    case O_STANDBY_TIMEOUT:
      rc = parse_duration("--standby-timeout", optarg, 1000, 3600000000LL,
                          &set->standby_timeout_ms);
      set->standby_timeout_ms /= 1000;
      break;
    case O_DUR:
      if (lc_durability_parse(optarg, &set->durability) != 0)
        return usage_error("invalid durability '%s' for --durability (must "
                           "be default or sync)",
                           optarg);
      break;
    case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
    case '?':
      if (optopt) return usage_error("unknown option '-%c'", optopt);
      return usage_error("unknown option '%s'", argv[optind - 1]);
    default: rc = number_option(set, opt, optarg); break;
    }
    if (rc) return rc;
  }
  if (optind < argc)
    return usage_error("unexpected argument '%s'", argv[optind]);
  /* --no-coalesce is the per-request path: without prefetch unless one
   * is asked for */
  if (!set->coalesce && !(prefetch && *prefetch)) set->prefetch = 0;
  if (prefetch && *prefetch && lc_prefetch_parse(prefetch, &set->prefetch))
    return usage_error("invalid prefetch '%s' for %s (must be off, auto or "
                       "a segment size 1..%llu)",
                       prefetch, prefetch_from,
                       (unsigned long long)LC_BLOCK_MAX);
  if (!set->db || !*set->db)
    return usage_error("no log directory: give --db DIR or set "
                       "LOGCOUNTER_DB");
  if (retain_interval && !set->retain_records && !set->retain_age_us)
    return usage_error("--retain-interval needs --retain-records or "
                       "--retain-age");
  if (strcmp(set->listen, "none") == 0 && !set->socket_path)
    return usage_error("nothing to listen on: --listen none needs --socket");
  if (!set->listener_max || set->listener_max > set->max_connections)
    set->listener_max = set->max_connections; /* the default: all */
  if (!set->tls_cert != !set->tls_key)
    return usage_error("--tls-cert and --tls-key go together");
  if (!set->tls_cert && (set->tls_ca || set->tls_verify))
    return usage_error("--tls-ca and --tls-verify need --tls-cert");
  if (set->tls_verify && !set->tls_ca)
    return usage_error("--tls-verify %s needs --tls-ca (the CA that signs "
                       "client certificates)",
                       lcd_tls_verify_name(set->tls_verify));
  if (set->rights_file && !set->auth_file)
    return usage_error("--rights-file needs --auth-file (rights belong to "
                       "authenticated users)");
  int pub = 0;
  if (strcmp(set->listen, "none") != 0 && !set->auth_file)
    pub = public_check(set, set->listen, "listen", "listening", "--auth-file",
                      "allocate and flood names", "--auth-file FILE");
  /* /metrics has no auth file: off loopback only mutual TLS decides who
   * reads it (its figures hold no secret but show counter activity). */
  if (!pub && set->metrics_listen &&
      !(lcd_metrics_https(set) && set->tls_verify == LCD_TLS_VERIFY_REQUIRE))
    pub = public_check(set, set->metrics_listen, "serve /metrics",
                      "serving /metrics", "mutual TLS",
                      "watch counter activity",
                      "--tls-cert, --tls-key, --tls-ca and --tls-verify "
                      "require");
  /* replication: off loopback, the secret or mutual TLS proves the peer */
  if (!pub && set->replication_listen && !set->repl_secret[0] && !lcd_settings_repl_tls(set))
    pub = public_check(set, set->replication_listen, "serve replication",
                      "serving replication",
                      "--replication-secret-file or mutual TLS",
                      "follow the log",
                      "--replication-secret-file FILE, or --tls-cert, "
                      "--tls-key and --tls-ca");
  if (pub) return pub;
  if ((set->replication_listen || set->standby_of) && set->tls_cert &&
      !set->tls_ca)
    lcd_log(NULL, 0, "WARNING: replication is not encrypted: TLS on it "
                     "needs --tls-ca too (mutual TLS)");
  if (lcd_auth_init(set->auth_file, set->rights_file) != 0)
    return EXIT_USAGE;
  return 0;
}

