/*
 * lcd_settings.h - logcounterd's settings (every option, with its default
 * in lcd_settings_init), the limits of the command line, and the log
 * line writer (logcounterd.c).  Read-only once the daemon has started:
 * any thread reads them without a lock.
 */
#ifndef LCD_SETTINGS_H
#define LCD_SETTINGS_H

#include "logcounter.h"

#include <stdint.h>
#include <time.h>

#define LCD_PROG "logcounterd"
/* The memcached version whose text protocol is spoken (first in the
 * "version" reply). */
#define LCD_PROTOCOL_VERSION "1.6.0"
#define LCD_THREADS_MAX 64
#define LCD_LISTEN_MAX 8 /* TCP addresses in --listen */

/* Every setting, with its default in lcd_settings_init. */
/* --max-counters' default: with --idle-evict bounding what stays, room
 * for a million counters in use at once (about 1.3 GB at most). */
#define LCD_COUNTERS_DEFAULT 1000000ULL

typedef struct lcd_settings {
  const char *listen;         /* TCP ADDR:PORT[,ADDR:PORT...] (at most
                               LCD_LISTEN_MAX), each TLS when --tls-cert is
                               given unless written notls:ADDR:PORT;
                               "none": no TCP listener
                               (default 127.0.0.1:11311) */
  const char *socket_path;    /* a unix socket too; NULL: none */
  int socket_mode;            /* its permissions (default 0660) */
  const char *admin_socket;   /* lc_options.admin_socket; NULL: none */
  int admin_mode;             /* its permissions (default 0600) */
  const char *memcached;      /* libmemcached config (default $LOGCOUNTER_
                               MEMCACHED, else --SERVER=127.0.0.1:11211) */
  const char *db;             /* the log directory (required: --db or
                               $LOGCOUNTER_DB) */
  lc_durability_t durability; /* default LC_DURABILITY_DEFAULT */
  uint64_t prefetch;          /* lc_options.prefetch (default
                               $LOGCOUNTER_PREFETCH, else 0: off) */
  int timeout_ms;             /* memcached timeout (default 1000) */
  int threads;                /* event-loop threads (default: the CPUs the
                               process may use, at most LCD_THREADS_MAX) */
  int workers;                /* worker threads for slow calls (default 4) */
  int max_connections;        /* open client connections (default 1024) */
  int listener_max;           /* of them on one listener (default: the
                                 same as max_connections) */
  int max_unfinished;         /* of them, unfinished (a TLS or auth
                                 handshake to come; lcd_admit.h), in all
                                 (default LCD_UNFINISHED_DEFAULT) */
  int max_unfinished_addr;    /* the same from one peer address (default
                                 LCD_UNFINISHED_ADDR_DEFAULT) */
  int idle_timeout;           /* seconds; close idle clients; 0: never
                               (default 0, as memcached) */
  int line_timeout;           /* seconds a request may stay unfinished
                               (default 10) */
  int drain_timeout;          /* seconds SIGTERM waits for replies to be
                               read before closing anyway (default 10) */
  int reply_timeout;          /* seconds a client may leave its replies
                               unread (no progress) before it is closed
                               (default 10) */
  int backlog;                /* listen backlog (default 1024) */
  int verbose;                /* 0: start/stop/errors, 1: connections,
                               2: every failed request (default 0) */
  const char *pidfile;        /* NULL: none */
  int coalesce;               /* merge concurrent incr of one counter into
                               one memcached increment; 0 (--no-coalesce):
                               one increment per request, for comparison
                               (default 1) */
  uint64_t max_counters;      /* lc_options.max_counters (default
                               LCD_COUNTERS_DEFAULT: with idle eviction the
                               counters in use at once, ~1.3 KB each) */
  int64_t idle_evict_us;      /* lc_options.idle_evict_ms; 0: never
                               (default 600 s) */
  uint64_t max_tallies;       /* lc_options.max_tallies (the same) */
  int flush_interval;         /* seconds between tally flushes; 0: none
                               while running, only at shutdown (default 1) */
  int sweep_interval;         /* seconds between sweeps of every tally in the
                               log (recovers what a crash left pending);
                               one also runs at startup; 0: only then
                               (default 60) */
  uint64_t retain_records;    /* retention (lc_options.retain_*): keep this
                               many newest records per counter; 0: no such
                               limit (default 0) */
  int64_t retain_age_us;      /* delete records older than this; 0: no age
                               limit (default 0: retention off unless
                               retain_records is set) */
  int64_t retain_interval_ms; /* between retention runs (default 60000) */
  const char *replication_listen; /* lc_options.replication_listen */
  const char *standby_of;         /* lc_options.standby_of */
  char repl_secret[256];          /* --replication-secret-file's line */
  int standby_mode;               /* LC_STANDBY_REQUIRED (default) */
  int64_t standby_timeout_ms;     /* default 2000 */
  const char *metrics_listen;     /* [notls:]HOST:PORT (PORT: 127.0.0.1) of
                                     the Prometheus /metrics; NULL: none */
  int metrics_max;                /* open /metrics connections (default
                                     LCD_METRICS_MAX_DEFAULT) */
  int metrics_max_addr;           /* of them from one peer address
                                     (LCD_METRICS_MAX_ADDR_DEFAULT) */
  const char *auth_file;   /* --auth-file: user:password lines; NULL: no
                              authentication (lcd_auth.c) */
  const char *rights_file; /* --rights-file (lcd_rights.c); NULL: none */
  int insecure_listen;     /* --insecure-listen: a non-loopback TCP address
                              without --auth-file (default 0: refused) */
  const char *tls_cert;   /* PEM certificate chain; NULL: no TLS */
  const char *tls_key;    /* its PEM private key (with tls_cert) */
  const char *tls_ca;     /* CA file for client certificates; NULL: none */
  int tls_verify;         /* LCD_TLS_VERIFY_* (lcd_tls.h; default none) */
} lcd_settings;

/* logcounterd.c */
void lcd_log(const lcd_settings *set, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
time_t lcd_now(void); /* monotonic seconds */

/* lcd_options.c: the defaults; the command line over them (0; -1 after
 * --help or --version, printed; or the exit status of a usage error,
 * said on stderr); whether replication runs over mutual TLS. */
void lcd_settings_init(lcd_settings *set);
int lcd_options_parse(lcd_settings *set, int argc, char **argv);
int lcd_settings_repl_tls(const lcd_settings *set);

#endif /* LCD_SETTINGS_H */
