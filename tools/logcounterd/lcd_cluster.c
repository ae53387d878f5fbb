/*
 * lcd_cluster.c - automatic failover on etcd (see lcd_cluster.h): the
 * leader key, the lease that holds it, the synchronous standby's name,
 * fencing, and role changes.
 *
 * Keys, under /logcounter/CLUSTER/:
 *   leader       {"node","data","replication"} of the primary, bound to
 *                its lease; created only in a transaction requiring it
 *                absent, so its create revision (the term) names one
 *                leadership;
 *   sync         the node that may take over: written by the primary (in
 *                a transaction requiring its own leader key) with its own
 *                name when it wins, and with a standby's name once that
 *                standby has every write, before the standby may
 *                acknowledge a floor (lc_replication_need_approval);
 *   member/NODE  each standby's {"node","data","replication","peer"},
 *                peer being its address on its replication connection
 *                (what the primary sees), bound to its own lease.
 *
 * Roles.  A node joins before it opens its log (lcd_cluster_join): with
 * a leader key naming another node it opens as that node's standby;
 * with none, it campaigns only if /sync names it (or nothing: a new
 * cluster) and its log allows it.  A running standby campaigns when the
 * leader key is gone and /sync names it, and promotes in place
 * (lc_promote) before it hands out anything.  Every other change (the
 * primary is another node now, or this primary lost its key or lease)
 * fences the handle and re-executes the daemon, which joins again: a
 * former primary then follows the new one and takes a full copy (its
 * log may hold records the new primary never saw; it never serves
 * them).
 *
 * Fencing: every renewal's send time + the granted TTL - a margin (a
 * quarter of the TTL) is the handle's lease deadline
 * (lc_set_lease_deadline); past it the library refuses every allocation
 * on its own, whether or not this thread runs.  The deadline is earlier
 * than etcd's expiry of the lease, which counts from etcd's receipt of
 * the renewal.  Uniqueness does not rest on it: a standby acknowledges
 * floors only of the primary it follows, and a promoted one none.
 *
 * Two threads talk to etcd after the start, each with its own handle:
 * the keeper renews the lease (only that, so nothing delays it), the run
 * thread reads the leader key every POLL_MS and acts on it.  The state
 * the figures read is atomics and the strings under mu.
 */
#include "lcd_cluster.h"
#include "lcd_etcd.h"

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 }; /* as logcounterd.c's */

#define POLL_MS 100
#define NAME_MAX_LEN 64
#define ADDR_MAX 256

enum { R_CANDIDATE, R_STANDBY, R_PRIMARY };

static struct {
  int on;
  const char *urls, *cluster, *node;
  lcd_etcd_auth auth; /* --etcd-cacert, -cert, -key, -user */
  char password[256]; /* --etcd-password-file's line (never printed) */
  int ttl_s; /* asked for */
  char **argv; /* as given, for the re-exec */
  const lcd_settings *set;
  lcd_settings *wset; /* the same, to set standby_of (lcd_cluster_join) */
  lcd_etcd *etcd; /* the run thread's (join's before it starts) */
  lcd_etcd *ka;   /* the keeper thread's: renewals only (and grants) */
  char kleader[200], ksync[200], kmembers[200], kmember[300];
  _Atomic int64_t lease;
  _Atomic int granted_s;         /* the TTL etcd granted */
  _Atomic int64_t renewed_us;    /* the last good renewal's send time */
  _Atomic int64_t deadline_us;   /* primary: the handle's deadline */
  _Atomic int role;
  _Atomic uint64_t term, failovers;
  int promote_pending; /* join won with a standby's copy */
  int fence_said;
  char own_repl[ADDR_MAX], standby_of[ADDR_MAX];
  char leader_data[ADDR_MAX]; /* a standby's: the primary's data port, ""
                                 when not one to forward to (set at join) */
  char registered[ADDR_MAX]; /* the peer last written to member/NODE */
  char approved[ADDR_MAX];   /* the standby address approved */
  pthread_mutex_t mu;        /* the strings below */
  char leader[NAME_MAX_LEN + 1], sync[NAME_MAX_LEN + 1];
  pthread_t thread, keeper;
  int started;
  atomic_bool stop;
  _Atomic time_t said_err; /* rate limit for etcd errors (both threads) */
} C = {.ttl_s = 5, .mu = PTHREAD_MUTEX_INITIALIZER};

static int64_t mono(void) { return lc_monotonic_us(); }

static volatile sig_atomic_t interrupted; /* lcd_cluster_interrupt */

void lcd_cluster_interrupt(void) { interrupted = 1; }

static void nap(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (!interrupted && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void set_str(char *dst, size_t size, const char *v) {
  size_t n = strlen(v);
  if (n >= size) n = size - 1; /* names are at most NAME_MAX_LEN */
  pthread_mutex_lock(&C.mu);
  memcpy(dst, v, n);
  dst[n] = '\0';
  pthread_mutex_unlock(&C.mu);
}

static int same_str(const char *a, const char *b) {
  pthread_mutex_lock(&C.mu);
  int same = strcmp(a, b) == 0;
  pthread_mutex_unlock(&C.mu);
  return same;
}

/* etcd errors, at most one line a second. */
static void etcd_err(const char *what, const char *err) {
  time_t now = lcd_now();
  if (atomic_exchange(&C.said_err, now) == now) return;
  lcd_log(C.set, 0, "cluster: %s: %s", what, err);
}

/* ---- options --------------------------------------------------------- */

static int bad(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, LCD_PROG ": ");
  fprintf(stderr, fmt, a, b);
  fprintf(stderr, "\n\nusage: " LCD_PROG " --db DIR [options]   (see '" LCD_PROG
                  " --help')\n");
  return EXIT_USAGE;
}

static int name_ok(const char *s) {
  size_t n = strlen(s);
  return n > 0 && n <= NAME_MAX_LEN &&
         strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   "0123456789._-") == n;
}

/* "5", "5s" or "5000ms": whole seconds 2..3600 (etcd's TTLs are seconds,
 * and it grants no lease shorter than 2 s with its default timing). */
static int ttl_parse(const char *t, int *out) {
  char *end;
  errno = 0;
  long v = strtol(t, &end, 10);
  if (errno || end == t || t[0] == '-' || t[0] == '+') return -1;
  if (strcmp(end, "ms") == 0) {
    if (v % 1000) return -1;
    v /= 1000;
  } else if (*end && strcmp(end, "s") != 0) {
    return -1;
  }
  if (v < 2 || v > 3600) return -1;
  *out = (int)v;
  return 0;
}

/* --etcd-password-file's first line into C.password. */
static int read_password(const char *file) {
  FILE *f = fopen(file, "r");
  if (f == NULL)
    return bad("cannot read --etcd-password-file '%s': %s", file,
               strerror(errno));
  int ok = fgets(C.password, sizeof C.password, f) != NULL;
  fclose(f);
  C.password[strcspn(C.password, "\r\n")] = '\0';
  if (!ok || !C.password[0])
    return bad("--etcd-password-file '%s' is empty%s", file, "");
  return 0;
}

int lcd_cluster_options(int *argc, char **argv) {
  static const char *const names[] = {
      "--etcd",        "--cluster",       "--node",
      "--leader-ttl",  "--etcd-cacert",   "--etcd-cert",
      "--etcd-key",    "--etcd-user",     "--etcd-password-file"};
  enum { NOPTS = sizeof names / sizeof *names };
  const char *pwfile = NULL;
  C.argv = calloc((size_t)*argc + 1, sizeof *C.argv);
  if (C.argv == NULL) return EXIT_RUNTIME;
  memcpy(C.argv, argv, (size_t)*argc * sizeof *argv);
  int out = 1;
  const char *ttl = NULL;
  for (int i = 1; i < *argc; i++) {
    if (strcmp(argv[i], "--") == 0) { /* getopt's end of options */
      while (i < *argc) argv[out++] = argv[i++];
      break;
    }
    int k = -1;
    const char *val = NULL;
    for (int j = 0; j < NOPTS && k < 0; j++) {
      size_t n = strlen(names[j]);
      if (strncmp(argv[i], names[j], n) == 0 &&
          (argv[i][n] == '\0' || argv[i][n] == '=')) {
        k = j;
        val = argv[i][n] == '=' ? argv[i] + n + 1 : NULL;
      }
    }
    if (k < 0) {
      argv[out++] = argv[i];
      continue;
    }
    if (val == NULL) {
      if (i + 1 >= *argc) return bad("option '%s' needs a value%s", names[k], "");
      val = argv[++i];
    }
    switch (k) {
    case 0: C.urls = val; break;
    case 1: C.cluster = val; break;
    case 2: C.node = val; break;
    case 3: ttl = val; break;
    case 4: C.auth.cacert = val; break;
    case 5: C.auth.cert = val; break;
    case 6: C.auth.key = val; break;
    case 7: C.auth.user = val; break;
    case 8: pwfile = val; break;
    }
  }
  argv[out] = NULL;
  *argc = out;
  if (ttl && ttl_parse(ttl, &C.ttl_s) != 0)
    return bad("invalid duration '%s' for --leader-ttl (whole seconds, "
               "2s .. 3600s, e.g. 5s)%s",
               ttl, "");
  if (!C.urls && (C.cluster || C.node || ttl || C.auth.cacert ||
                  C.auth.cert || C.auth.key || C.auth.user || pwfile))
    return bad("--cluster, --node, --leader-ttl and --etcd-* need --etcd%s%s",
               "", "");
  if (!C.auth.cert != !C.auth.key)
    return bad("--etcd-cert and --etcd-key go together%s%s", "", "");
  if (!C.auth.user != !pwfile)
    return bad("--etcd-user and --etcd-password-file go together%s%s", "",
               "");
  if (pwfile && read_password(pwfile) != 0) return EXIT_USAGE;
  if (pwfile) C.auth.password = C.password;
  if (!C.urls) return 0;
  if (!C.cluster || !name_ok(C.cluster))
    return bad("--etcd needs --cluster NAME (1-64 of A-Z a-z 0-9 . _ -)%s%s",
               "", "");
  if (!C.node || !name_ok(C.node))
    return bad("--etcd needs --node NAME (1-64 of A-Z a-z 0-9 . _ -), "
               "unique in the cluster%s%s",
               "", "");
  char err[LCD_ETCD_ERR];
  C.etcd = lcd_etcd_new(C.urls, 1000, NULL, err, sizeof err);
  if (C.etcd == NULL) return bad("invalid --etcd '%s': %s", C.urls, err);
  lcd_etcd_free(C.etcd); /* checked; made again with the real timeout */
  C.etcd = NULL;
  C.on = 1;
  return 0;
}

int lcd_cluster_check(const lcd_settings *set) {
  if (!C.on) return 0;
  if (!set->replication_listen)
    return bad("--etcd needs --replication-listen HOST:PORT (where its "
               "standbys follow it when it leads)%s%s",
               "", "");
  if (set->standby_of)
    return bad("--etcd and --standby-of exclude each other (etcd names the "
               "primary to follow)%s%s",
               "", "");
  if (set->standby_mode != LC_STANDBY_REQUIRED)
    return bad("--etcd needs --standby-mode required (a primary that goes "
               "on alone could hand out ids its successor never saw)%s%s",
               "", "");
  return 0;
}

/* ---- values ---------------------------------------------------------- */

static void own_value(char *out, size_t size, const char *peer) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "node", json_object_new_string(C.node));
  json_object_object_add(o, "data", json_object_new_string(C.set->listen));
  json_object_object_add(o, "replication",
                         json_object_new_string(C.set->replication_listen));
  if (peer) json_object_object_add(o, "peer", json_object_new_string(peer));
  snprintf(out, size, "%s",
           json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
  json_object_put(o);
}

/* A field of a JSON value into out ("" when absent). */
static void field(const char *json, const char *name, char *out, size_t size) {
  out[0] = '\0';
  json_object *o = json_tokener_parse(json), *v;
  if (o && json_object_is_type(o, json_type_object) &&
      json_object_object_get_ex(o, name, &v))
    snprintf(out, size, "%s", json_object_get_string(v));
  json_object_put(o);
}

/* ---- the lease --------------------------------------------------------- */

static int grant(void) {
  char err[LCD_ETCD_ERR];
  int granted = 0;
  int64_t t0 = mono(), id = 0;
  if (lcd_etcd_grant(C.ka, C.ttl_s, &id, &granted, err, sizeof err)) {
    etcd_err("cannot take a lease", err);
    return -1;
  }
  atomic_store(&C.granted_s, granted);
  atomic_store(&C.renewed_us, t0);
  atomic_store(&C.lease, id); /* the run thread registers again */
  return 0;
}

static int64_t margin_us(void) {
  return (int64_t)atomic_load(&C.granted_s) * 1000000 / 4;
}

/* The deadline a renewal sent at t0 gives. */
static int64_t deadline_of(int64_t t0) {
  return t0 + (int64_t)atomic_load(&C.granted_s) * 1000000 - margin_us();
}

static void fence(lcd_server *s) {
  atomic_store(&C.deadline_us, 1);
  if (s && s->lc) lc_set_lease_deadline(s->lc, 1);
}

/* Re-executes the daemon, which joins again (never returns).  The handle
 * is fenced first; nothing is closed (as after a crash, which the log
 * recovers from), every descriptor but 0-2 closed by the exec. */
static void reexec(lcd_server *s, const char *why) {
  fence(s);
  lcd_log(C.set, 0, "cluster: %s: fenced; re-executing to join again", why);
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      int fd = atoi(de->d_name);
      if (fd > 2) fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    closedir(d);
  }
  fflush(stdout);
  fflush(stderr);
  execv("/proc/self/exe", C.argv);
  lcd_log(C.set, 0, "cluster: cannot re-execute: %s; exiting", strerror(errno));
  _exit(EXIT_RUNTIME);
}

/* One renewal (the keeper's, or join's before the threads start).  0
 * renewed; 1 the lease is gone; -1 etcd not reached. */
static int renew(lcd_server *s) {
  char err[LCD_ETCD_ERR];
  int ttl = 0;
  int64_t t0 = mono();
  if (lcd_etcd_keepalive(C.ka, atomic_load(&C.lease), &ttl, err,
                         sizeof err)) {
    etcd_err("cannot renew the lease", err);
    return -1;
  }
  if (ttl <= 0) return 1;
  atomic_store(&C.granted_s, ttl);
  atomic_store(&C.renewed_us, t0);
  if (atomic_load(&C.role) == R_PRIMARY) {
    int64_t d = deadline_of(t0);
    atomic_store(&C.deadline_us, d);
    if (s && s->lc) lc_set_lease_deadline(s->lc, d);
    if (C.fence_said) {
      lcd_log(C.set, 0, "cluster: lease renewed again: serving (term %llu)",
              (unsigned long long)atomic_load(&C.term));
      C.fence_said = 0;
    }
  }
  return 0;
}

/* ---- joining ------------------------------------------------------------ */

static int log_kind(const lcd_settings *set, int *kind) {
  if (lc_log_kind(set->db, kind) != 0) {
    lcd_log(set, 0, "cluster: cannot read the log '%s': %s", set->db,
            lc_last_detail());
    return -1;
  }
  return 0;
}

/* Whether this node may take the leader key now that it is absent: sync
 * names it (or nothing, a new cluster) and its log is one to serve from. */
static int may_campaign(const lcd_etcd_kv *sync, int kind, char *why,
                        size_t size) {
  if (sync->found && strcmp(sync->value, C.node) != 0) {
    snprintf(why, size, "only %.64s may take over (/sync)", sync->value);
    return 0;
  }
  if (sync->found && kind == LC_LOG_KIND_NONE) {
    snprintf(why, size,
             "/sync names this node but its log is gone: an operator must "
             "decide (see docs/operations.md)");
    return 0;
  }
  return 1;
}

/* The leader key's value, to follow: its node and replication address. */
static int leader_of(const lcd_etcd_kv *kv, char *node, char *repl) {
  field(kv->value, "node", node, NAME_MAX_LEN + 1);
  field(kv->value, "replication", repl, ADDR_MAX);
  return node[0] && repl[0] ? 0 : -1;
}

/* join's end when this node holds the leader key (term). */
static int join_won(lcd_settings *set, int64_t term, const lcd_etcd_kv *sync,
                    int kind) {
  atomic_store(&C.term, (uint64_t)term);
  atomic_store(&C.deadline_us, deadline_of(atomic_load(&C.renewed_us)));
  atomic_store(&C.role, R_PRIMARY);
  lcd_forward_enable(0);
  set_str(C.leader, sizeof C.leader, C.node);
  if (sync->found) set_str(C.sync, sizeof C.sync, sync->value);
  if (kind == LC_LOG_KIND_STANDBY) { /* promoted in lcd_cluster_start */
    snprintf(C.standby_of, sizeof C.standby_of, "%s", C.own_repl);
    set->standby_of = C.standby_of;
    C.promote_pending = 1;
  }
  lcd_log(set, 0, "cluster: won the leader key (term %lld)%s",
          (long long)term,
          C.promote_pending ? ": promoting this standby's copy" : "");
  return 0;
}

int lcd_cluster_join(lcd_settings *set) {
  if (!C.on) return 0;
  C.set = C.wset = set;
  snprintf(C.kleader, sizeof C.kleader, "/logcounter/%s/leader", C.cluster);
  snprintf(C.ksync, sizeof C.ksync, "/logcounter/%s/sync", C.cluster);
  snprintf(C.kmembers, sizeof C.kmembers, "/logcounter/%s/member/", C.cluster);
  snprintf(C.kmember, sizeof C.kmember, "%s%s", C.kmembers, C.node);
  snprintf(C.own_repl, sizeof C.own_repl, "%s", set->replication_listen);
  int req_ms = C.ttl_s * 1000 / 4;
  if (req_ms > 1000) req_ms = 1000;
  char err[LCD_ETCD_ERR];
  C.etcd = lcd_etcd_new(C.urls, req_ms, &C.auth, err, sizeof err);
  if (C.etcd) C.ka = lcd_etcd_new(C.urls, req_ms, &C.auth, err, sizeof err);
  if (C.etcd == NULL || C.ka == NULL) {
    lcd_log(set, 0, "cluster: %s", err);
    return EXIT_RUNTIME;
  }
  lc_replication_need_approval(); /* before lc_open: see cluster.c */
  atomic_store(&C.role, R_CANDIDATE);
  lcd_forward_enable(0);
  lcd_log(set, 0, "cluster: node %s of cluster %s joining through %s "
                  "(leader TTL %d s)",
          C.node, C.cluster, C.urls, C.ttl_s);
  while (!interrupted && grant() != 0) nap(500);
  char said[300] = "";
  for (;;) {
    if (interrupted) return 0; /* the caller sees the stop */
    lcd_etcd_kv kv, sync;
    int kind;
    if (lcd_etcd_get(C.etcd, C.kleader, &kv, err, sizeof err)) {
      etcd_err("cannot read the leader key", err);
      nap(200);
      continue;
    }
    if (renew(NULL) == 1) {
      while (!interrupted && grant() != 0) nap(500);
    }
    char node[NAME_MAX_LEN + 1], repl[ADDR_MAX];
    if (kv.found) {
      if (leader_of(&kv, node, repl) != 0) {
        etcd_err("the leader key", "a value without node and replication");
      } else if (strcmp(node, C.node) == 0 &&
                 kv.lease == atomic_load(&C.lease)) {
        /* our campaign below won though its answer was lost: take it */
        if (lcd_etcd_get(C.etcd, C.ksync, &sync, err, sizeof err) == 0 &&
            log_kind(set, &kind) == 0)
          return join_won(set, kv.create_rev, &sync, kind);
      } else if (strcmp(node, C.node) == 0) {
        if (strcmp(said, "self") != 0)
          lcd_log(set, 0, "cluster: the leader key names this node (an "
                          "earlier run's lease): waiting for it to expire");
        snprintf(said, sizeof said, "self");
      } else {
        snprintf(C.standby_of, sizeof C.standby_of, "%s", repl);
        set->standby_of = C.standby_of;
        /* allocations go on to the primary's data port, plain TCP and
         * without authentication only (see lcd_cluster_forward) */
        field(kv.value, "data", C.leader_data, sizeof C.leader_data);
        if (set->auth_file || set->tls_cert || !strchr(C.leader_data, ':') ||
            strchr(C.leader_data, ','))
          C.leader_data[0] = '\0';
        set_str(C.leader, sizeof C.leader, node);
        atomic_store(&C.term, (uint64_t)kv.create_rev);
        atomic_store(&C.role, R_STANDBY);
        lcd_forward_set(C.leader_data);
        lcd_forward_enable(1);
        lcd_log(set, 0, "cluster: STANDBY of %s (%s, term %lld)", node, repl,
                (long long)kv.create_rev);
        return 0;
      }
      nap(200);
      continue;
    }
    if (lcd_etcd_get(C.etcd, C.ksync, &sync, err, sizeof err)) {
      etcd_err("cannot read the sync key", err);
      nap(200);
      continue;
    }
    if (log_kind(set, &kind) != 0) return EXIT_RUNTIME;
    char why[200];
    if (!may_campaign(&sync, kind, why, sizeof why)) {
      if (strcmp(said, why) != 0)
        lcd_log(set, 0, "cluster: no primary; waiting: %s", why);
      snprintf(said, sizeof said, "%s", why);
      nap(200);
      continue;
    }
    char value[512];
    own_value(value, sizeof value, NULL);
    int won = 0;
    int64_t term = 0;
    if (renew(NULL) != 0 ||
        lcd_etcd_create(C.etcd, C.kleader, value, atomic_load(&C.lease),
                        &won, &term, err, sizeof err) != 0) {
      etcd_err("cannot campaign", err);
      nap(200);
      continue;
    }
    if (!won) continue; /* another node won: follow it */
    return join_won(set, term, &sync, kind);
  }
}

/* ---- running ------------------------------------------------------------ */

/* Names sync in etcd (this primary's key still its own): 0 done. */
static int name_sync(const char *node) {
  char err[LCD_ETCD_ERR];
  int ok = 0;
  if (lcd_etcd_put_if(C.etcd, C.kleader, (int64_t)atomic_load(&C.term),
                      C.ksync, node, 0, &ok, err, sizeof err) != 0) {
    etcd_err("cannot write the sync key", err);
    return -1;
  }
  if (!ok) return -1; /* the leader key is not ours: the next poll sees it */
  set_str(C.sync, sizeof C.sync, node);
  lcd_log(C.set, 0, "cluster: the synchronous standby is now %s", node);
  return 0;
}

/* The promotion of this standby in place, its leadership just won. */
static int promote(lcd_server *s, int64_t since_us) {
  lc_set_lease_deadline(s->lc, atomic_load(&C.deadline_us));
  lc_set_term(s->lc, atomic_load(&C.term)); /* its failover gaps say it */
  uint64_t raised = 0;
  int64_t t0 = mono();
  int rc = lc_promote(s->lc, NULL, &raised);
  if (rc) {
    char err[LCD_ETCD_ERR];
    int ok;
    lcd_log(C.set, 0, "cluster: cannot promote (term %llu): %s (%s): giving "
                      "the leadership up",
            (unsigned long long)atomic_load(&C.term), lc_strerror(rc),
            lc_last_detail());
    fence(s);
    atomic_store(&C.role, R_STANDBY);
    lcd_forward_enable(1);
    lcd_etcd_delete_if(C.etcd, C.kleader, (int64_t)atomic_load(&C.term), &ok,
                       err, sizeof err);
    return -1;
  }
  atomic_store(&C.role, R_PRIMARY);
  lcd_forward_enable(0);
  atomic_fetch_add(&C.failovers, 1);
  set_str(C.leader, sizeof C.leader, C.node);
  C.approved[0] = '\0';
  if (lc_record_term(s->lc, atomic_load(&C.term), C.node) != 0)
    lcd_log(C.set, 0, "cluster: cannot write the term into the log: %s",
            lc_last_detail());
  char since[64] = "";
  if (since_us)
    snprintf(since, sizeof since, "; %lld ms after the leader key was seen "
                                  "gone",
             (long long)((mono() - since_us) / 1000));
  lcd_log(C.set, 0, "cluster: PRIMARY: promoted (term %llu, %llu counters "
                    "raised above their replicated floors, %lld ms%s)",
          (unsigned long long)atomic_load(&C.term),
          (unsigned long long)raised, (long long)((mono() - t0) / 1000),
          since);
  name_sync(C.node); /* nobody else may take over until one is in sync */
  return 0;
}

/* This standby holds the leader key (term): it promotes. */
static void lead_won(lcd_server *s, int64_t term, int64_t gone_us,
                     const char *how) {
  atomic_store(&C.term, (uint64_t)term);
  atomic_store(&C.deadline_us, deadline_of(atomic_load(&C.renewed_us)));
  lcd_log(C.set, 0, "cluster: %s (term %lld), promoting", how,
          (long long)term);
  if (promote(s, gone_us) != 0) nap(1000);
}

/* A standby with no leader key in etcd: campaign if /sync names it. */
static void campaign(lcd_server *s, int64_t gone_us) {
  char err[LCD_ETCD_ERR];
  lcd_etcd_kv sync;
  if (lcd_etcd_get(C.etcd, C.ksync, &sync, err, sizeof err)) {
    etcd_err("cannot read the sync key", err);
    return;
  }
  set_str(C.sync, sizeof C.sync, sync.found ? sync.value : "");
  if (!sync.found || strcmp(sync.value, C.node) != 0) return;
  /* the keeper renews every sixth of the TTL: its last renewal is fresh */
  if (mono() >= deadline_of(atomic_load(&C.renewed_us))) return;
  char value[512];
  own_value(value, sizeof value, NULL);
  int won = 0;
  int64_t term = 0;
  if (lcd_etcd_create(C.etcd, C.kleader, value, atomic_load(&C.lease), &won,
                      &term, err, sizeof err) != 0) {
    etcd_err("cannot campaign", err);
    return;
  }
  if (won) lead_won(s, term, gone_us, "the leader key was gone and /sync "
                                       "names this node: won it");
}

typedef struct finding {
  const char *peer;
  char node[NAME_MAX_LEN + 1];
} finding;

static int find_peer(void *arg, const char *key, const lcd_etcd_kv *kv) {
  (void)key;
  finding *f = arg;
  char peer[ADDR_MAX];
  field(kv->value, "peer", peer, sizeof peer);
  if (strcmp(peer, f->peer) != 0) return 0;
  field(kv->value, "node", f->node, sizeof f->node);
  return 1;
}

/* The primary: the standby connected now may go in sync once /sync names
 * it; it is named only when it holds every write (acked == seq, no floor
 * being written meanwhile: none can be without a standby in sync). */
static void keep_sync(lcd_server *s) {
  char peer[ADDR_MAX], err[LCD_ETCD_ERR];
  int in_sync = 0;
  if (lc_replication_peer(s->lc, peer, sizeof peer, &in_sync) != 0 ||
      !peer[0] || strcmp(peer, C.approved) == 0)
    return;
  finding f = {.peer = peer};
  if (lcd_etcd_scan(C.etcd, C.kmembers, find_peer, &f, err, sizeof err)) {
    etcd_err("cannot read the members", err);
    return;
  }
  if (!f.node[0]) return; /* not registered yet */
  if (!same_str(C.sync, f.node)) {
    lc_replication_status st;
    if (lc_get_replication_status(s->lc, &st) != 0 || !st.connected ||
        st.acked != st.seq)
      return; /* catching up: named once it has everything */
    if (name_sync(f.node) != 0) return;
  }
  if (lc_replication_approve(s->lc, peer) == 0) {
    snprintf(C.approved, sizeof C.approved, "%s", peer);
    lcd_log(C.set, 1, "cluster: standby %s (%s) approved", f.node, peer);
  }
}

/* A standby: its member key says where its replication connection is. */
static void register_peer(lcd_server *s) {
  static int64_t lease_registered;
  char peer[ADDR_MAX], err[LCD_ETCD_ERR], value[512];
  int in_sync = 0;
  int64_t lease = atomic_load(&C.lease);
  if (lc_replication_peer(s->lc, peer, sizeof peer, &in_sync) != 0 ||
      (strcmp(peer, C.registered) == 0 && lease == lease_registered))
    return;
  own_value(value, sizeof value, peer);
  if (lcd_etcd_put(C.etcd, C.kmember, value, lease, err, sizeof err)) {
    etcd_err("cannot register this standby", err);
    return;
  }
  snprintf(C.registered, sizeof C.registered, "%s", peer);
  lease_registered = lease;
}

/* The keeper thread: renewals only, every sixth of the TTL (so that
 * nothing else the cluster asks etcd delays them); a primary whose lease
 * is gone re-executes, a standby takes a new one. */
static void *keeper(void *arg) {
  lcd_server *s = arg;
  while (!atomic_load(&C.stop)) {
    int r = renew(s);
    if (r == 1 && atomic_load(&C.role) == R_PRIMARY)
      reexec(s, "the lease expired");
    if (r == 1) grant();
    if (atomic_load(&C.role) == R_PRIMARY && !C.fence_said &&
        mono() >= atomic_load(&C.deadline_us)) {
      lcd_log(C.set, 0, "cluster: FENCED: the lease was not renewed in time "
                        "(etcd at %s unreachable?): handing out nothing",
              lcd_etcd_endpoint(C.ka));
      C.fence_said = 1;
    }
    nap(r == 0 ? atomic_load(&C.granted_s) * 1000 / 6 : POLL_MS);
  }
  return NULL;
}

/* The run thread: the leader key every POLL_MS, and what follows. */
static void *run(void *arg) {
  lcd_server *s = arg;
  int64_t gone_us = 0;
  unsigned polls = 0;
  while (!atomic_load(&C.stop)) {
    int role = atomic_load(&C.role);
    char err[LCD_ETCD_ERR];
    lcd_etcd_kv kv;
    if (lcd_etcd_get(C.etcd, C.kleader, &kv, err, sizeof err) != 0) {
      etcd_err("cannot read the leader key", err);
    } else if (role == R_PRIMARY) {
      if (!kv.found || (uint64_t)kv.create_rev != atomic_load(&C.term))
        reexec(s, kv.found ? "the leader key is another node's"
                           : "the leader key is gone");
      keep_sync(s);
    } else if (kv.found && kv.lease == atomic_load(&C.lease)) {
      /* our own campaign won though its answer was lost (timed out) */
      lead_won(s, kv.create_rev, gone_us ? gone_us : mono(),
               "the leader key holds this node's lease (a campaign whose "
               "answer was lost)");
    } else if (kv.found) {
      gone_us = 0;
      char node[NAME_MAX_LEN + 1], repl[ADDR_MAX];
      if (leader_of(&kv, node, repl) == 0 && strcmp(node, C.node) != 0 &&
          (!same_str(C.leader, node) || strcmp(repl, C.standby_of) != 0)) {
        char why[200];
        snprintf(why, sizeof why, "the primary is now %s", node);
        reexec(s, why);
      }
      register_peer(s);
      lcd_etcd_kv sync;
      if (++polls % 10 == 0 && /* for stats: who may take over */
          lcd_etcd_get(C.etcd, C.ksync, &sync, err, sizeof err) == 0)
        set_str(C.sync, sizeof C.sync, sync.found ? sync.value : "");
    } else {
      if (!gone_us) gone_us = mono();
      set_str(C.leader, sizeof C.leader, "");
      campaign(s, gone_us);
      if (atomic_load(&C.role) != R_PRIMARY) register_peer(s);
    }
    nap(POLL_MS);
  }
  return NULL;
}

int lcd_cluster_start(lcd_server *s) {
  if (!C.on) return 0;
  if (atomic_load(&C.role) == R_PRIMARY) {
    if (C.promote_pending) {
      atomic_store(&C.role, R_STANDBY); /* until promoted */
      lcd_forward_enable(1);
      if (promote(s, 0) != 0) return EXIT_RUNTIME;
      C.wset->standby_of = NULL; /* before the loops: nobody reads it yet */
    } else {
      lc_set_lease_deadline(s->lc, atomic_load(&C.deadline_us));
      if (lc_record_term(s->lc, atomic_load(&C.term), C.node) != 0)
        lcd_log(C.set, 0, "cluster: cannot write the term into the log: %s",
                lc_last_detail());
      lcd_log(C.set, 0, "cluster: PRIMARY (term %llu)",
              (unsigned long long)atomic_load(&C.term));
      if (!same_str(C.sync, C.node)) name_sync(C.node);
    }
  }
  if (pthread_create(&C.keeper, NULL, keeper, s) != 0) {
    lcd_log(C.set, 0, "cluster: cannot start its threads");
    return EXIT_RUNTIME;
  }
  if (pthread_create(&C.thread, NULL, run, s) != 0) {
    atomic_store(&C.stop, 1);
    pthread_join(C.keeper, NULL);
    lcd_log(C.set, 0, "cluster: cannot start its threads");
    return EXIT_RUNTIME;
  }
  C.started = 1;
  return 0;
}

void lcd_cluster_stop(lcd_server *s) {
  (void)s;
  if (!C.on || !C.started) return;
  atomic_store(&C.stop, 1);
  pthread_join(C.thread, NULL);
  pthread_join(C.keeper, NULL);
  C.started = 0;
}

void lcd_cluster_leave(void) {
  if (!C.on || !C.etcd) return;
  char err[LCD_ETCD_ERR];
  int64_t lease = atomic_load(&C.lease);
  if (lease && lcd_etcd_revoke(C.etcd, lease, err, sizeof err) != 0)
    etcd_err("cannot revoke the lease (it expires by itself)", err);
  lcd_etcd_free(C.etcd);
  lcd_etcd_free(C.ka);
  C.etcd = C.ka = NULL;
}

/* ---- figures --------------------------------------------------------- */

void lcd_cluster_figures(lcd_server *s, lcd_fig_fn fn, void *arg) {
  (void)s;
  if (!C.on) return;
  static const char *const roles[] = {"candidate", "standby", "primary"};
  int role = atomic_load(&C.role);
  int64_t now = mono(), left;
  const char *name = roles[role];
  if (role == R_PRIMARY) {
    left = atomic_load(&C.deadline_us) - now;
    if (left <= 0) name = "fenced";
  } else {
    left = atomic_load(&C.renewed_us) +
           (int64_t)atomic_load(&C.granted_s) * 1000000 - now;
  }
  char leader[NAME_MAX_LEN + 1], sync[NAME_MAX_LEN + 1];
  uint64_t fwd_n, fwd_err;
  lcd_forward_counts(&fwd_n, &fwd_err);
  pthread_mutex_lock(&C.mu);
  snprintf(leader, sizeof leader, "%s", C.leader);
  snprintf(sync, sizeof sync, "%s", C.sync);
  pthread_mutex_unlock(&C.mu);
  lcd_fig f[] = {
      {.name = "cluster_role", .kind = LCD_FIG_TEXT, .type = 's', .s = name,
       .help = "This node's role: primary, standby, candidate or fenced "
               "(a primary past its lease deadline)."},
      {.name = "cluster_node", .kind = LCD_FIG_TEXT, .type = 's',
       .s = C.node, .help = "This node's name (--node)."},
      {.name = "cluster_leader", .kind = LCD_FIG_TEXT, .type = 's',
       .s = leader[0] ? leader : NULL,
       .help = "The node the leader key names, as last seen."},
      {.name = "cluster_term", .kind = LCD_FIG_GAUGE, .type = 'u',
       .u = atomic_load(&C.term),
       .help = "The leadership term: the leader key's create revision."},
      {.name = "cluster_sync_standby", .kind = LCD_FIG_TEXT, .type = 's',
       .s = sync[0] ? sync : NULL,
       .help = "The node /sync names: the only one that may take over."},
      {.name = "cluster_lease_remaining_ms", .kind = LCD_FIG_GAUGE,
       .type = 'i', .i = left > 0 ? left / 1000 : 0,
       .help = "Primary: until its lease deadline (it fences then); "
               "others: until their own lease would expire."},
      {.name = "cluster_failovers", .kind = LCD_FIG_COUNTER, .type = 'u',
       .u = atomic_load(&C.failovers),
       .help = "Promotions of this node by the cluster since it started."},
      {.name = "cluster_forwarded", .kind = LCD_FIG_COUNTER, .type = 'u',
       .u = fwd_n,
       .help = "Allocations this standby forwarded to the primary and "
               "answered with its ids."},
      {.name = "cluster_forward_errors", .kind = LCD_FIG_COUNTER,
       .type = 'u', .u = fwd_err,
       .help = "Forwarded allocations the primary refused or did not "
               "answer (answered with its error or ESTANDBY)."},
  };
  for (size_t i = 0; i < sizeof f / sizeof *f; i++) fn(arg, &f[i]);
}
