/*
 * lcd_auth.c - logcounterd's --auth-file table (users and the SHA-256
 * digests of their passwords), the constant-time check, SIGHUP reloads,
 * and the table of recent failures per peer address that slows repeated
 * failures down.
 *
 * Invariants:
 *  - the table is immutable once published; a reload builds a new one and
 *    swaps the pointer under mu (the old one is freed at once: a check
 *    holds mu for its whole lookup, and connections keep no pointer into
 *    it, only their authenticated flag and user name, so a connection
 *    authenticated before the reload stays authenticated);
 *  - a file that fails to load (unreadable, a malformed line, no user)
 *    leaves the table in force unchanged; at start it is an error;
 *  - passwords are hashed with SHA-256 at load and the clear text is
 *    wiped (OPENSSL_cleanse); the check hashes the offered password and
 *    compares the 32-byte digests with CRYPTO_memcmp (constant time, equal
 *    lengths), against every user's entry with the same name AND a dummy
 *    when none matches, so an unknown user costs the same as a wrong
 *    password; the names are not secret and are compared plainly;
 *  - failures: LCD_AUTH_FAIL_SLOTS slots of (address, count, last time,
 *    next turn); a failure from an address seen less than
 *    LCD_AUTH_FAIL_WINDOW s ago counts on, else it starts at 1; the
 *    oldest slot is reused when all are taken.  The n-th failure in a row
 *    waits 0 ms (n = 1), then 100 ms * 2^(n-2), at most
 *    LCD_AUTH_DELAY_MAX_MS; it also sets the address's next turn.  Once
 *    an address has failed, each of its handshakes waits for the
 *    address's next turn before its password is checked (lcd_auth_turn:
 *    one turn a time, the next one delay_of(count) later, whatever the
 *    number of connections), so parallel guesses are as slow as
 *    sequential ones and a right guess among them is not answered
 *    sooner.  A turn is taken only when due (no reservation: a
 *    connection that leaves while waiting costs the others nothing).  A
 *    success gives back the failure its turn counted ahead.  A delay
 *    holds only that connection (a timer; the loop serves everyone else
 *    meanwhile); log lines of failures are at most LCD_AUTH_LOG_PER_S a
 *    second per address (lcd_auth_log_ok).
 */
#include "lcd_auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "logcounterd"

typedef struct auth_user {
  char name[LCD_AUTH_USER_MAX + 1];
  unsigned char digest[SHA256_DIGEST_LENGTH];
  size_t line; /* in the file */
} auth_user;

typedef struct auth_table {
  auth_user *users;
  size_t n;
} auth_table;

/* 1 + the index of user u in t, or 0. */
static size_t find_user(const auth_table *t, const lcd_auth_span *u) {
  for (size_t i = 0; i < t->n; i++)
    if (strlen(t->users[i].name) == u->len &&
        memcmp(t->users[i].name, u->s, u->len) == 0)
      return i + 1;
  return 0;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static auth_table *table; /* NULL: no --auth-file */
static const char *auth_path, *rights_path;


int lcd_auth_private(int fd, const char *path, char *err, size_t errlen) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(err, errlen, "cannot stat '%s': %s", path, strerror(errno));
    return -1;
  }
  if (st.st_mode & 077) {
    snprintf(err, errlen,
             "'%s' is readable or writable by group or others (mode %04o): "
             "it holds secrets; chmod 600 it",
             path, (unsigned)(st.st_mode & 07777));
    return -1;
  }
  return 0;
}

/* Reads the whole of path (at most 1 MiB) into a NUL-terminated buffer;
 * private: refused if group or others may read it (lcd_auth_private). */
char *lcd__read_file(const char *path, size_t *len, char *err, size_t errlen,
                     int private) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  if (private && lcd_auth_private(fileno(f), path, err, errlen) != 0) {
    fclose(f);
    return NULL;
  }
  size_t cap = 1 << 20;
  char *buf = malloc(cap + 1);
  size_t n = buf ? fread(buf, 1, cap + 1, f) : 0;
  int bad = !buf || ferror(f);
  fclose(f);
  if (bad || n > cap) {
    snprintf(err, errlen, "cannot read '%s': %s", path,
             bad ? "read error" : "larger than 1 MiB");
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

static void table_free(auth_table *t) {
  if (!t) return;
  OPENSSL_cleanse(t->users, t->n * sizeof *t->users);
  free(t->users);
  free(t);
}

static auth_table *table_load(const char *path, char *err, size_t errlen) {
  size_t len;
  char *buf = lcd__read_file(path, &len, err, errlen, 1);
  if (!buf) return NULL;
  auth_table *t = calloc(1, sizeof *t);
  size_t cap = 0, lineno = 0, dup;
  int ok = t != NULL;
  for (size_t i = 0; ok && i < len;) {
    const char *nl = memchr(buf + i, '\n', len - i);
    size_t l = nl ? (size_t)(nl - (buf + i)) : len - i;
    lineno++;
    lcd_auth_span u, p;
    const char *why = "";
    int r = lcd_auth_line_parse(buf + i, l, &u, &p, &why);
    if (r < 0) {
      snprintf(err, errlen, "'%s' line %zu: %s", path, lineno, why);
      ok = 0;
    } else if (r > 0 && (dup = find_user(t, &u)) != 0) {
      snprintf(err, errlen, "'%s' line %zu: user '%.*s' again (first on line "
               "%zu)", path, lineno, (int)u.len, u.s, t->users[dup - 1].line);
      ok = 0;
    } else if (r > 0) {
      if (t->n == cap) {
        cap = cap ? cap * 2 : 16;
        auth_user *nu = realloc(t->users, cap * sizeof *nu);
        if (!nu) {
          snprintf(err, errlen, "'%s': out of memory", path);
          ok = 0;
          break;
        }
        t->users = nu;
      }
      auth_user *e = &t->users[t->n++];
      memcpy(e->name, u.s, u.len);
      e->name[u.len] = '\0';
      e->line = lineno;
      SHA256((const unsigned char *)p.s, p.len, e->digest);
    }
    i += l + 1;
  }
  OPENSSL_cleanse(buf, len);
  free(buf);
  if (ok && t->n == 0) {
    snprintf(err, errlen, "'%s': no user:password line", path);
    ok = 0;
  }
  if (!ok) {
    table_free(t);
    return NULL;
  }
  return t;
}

/* --rights-file holds no secret (who may do what): group or others
 * reading it is warned about, not refused.  Into out, or "". */
static void rights_mode(char *out, size_t n) {
  struct stat st;
  out[0] = '\0';
  if (rights_path && stat(rights_path, &st) == 0 && (st.st_mode & 077))
    snprintf(out, n, "'%s' is readable or writable by group or others "
             "(mode %04o); chmod 600 it", rights_path,
             (unsigned)(st.st_mode & 07777));
}

int lcd_auth_init(const char *auth_file, const char *rights_file) {
  char err[512];
  auth_path = auth_file;
  rights_path = rights_file;
  if (auth_file) {
    table = table_load(auth_file, err, sizeof err);
    if (!table) {
      fprintf(stderr, PROG ": --auth-file: %s\n", err);
      return -1;
    }
  }
  if (rights_file && lcd__rights_load(rights_file, err, sizeof err) != 0) {
    fprintf(stderr, PROG ": --rights-file: %s\n", err);
    return -1;
  }
  rights_mode(err, sizeof err);
  if (err[0]) fprintf(stderr, PROG ": warning: --rights-file: %s\n", err);
  return 0;
}

/* lcd_log without the settings (the reload runs on loop 0). */
static void log_line(const char *fmt, const char *a, const char *b) {
  char when[32];
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  fprintf(stderr, "%s " PROG "[%ld]: ", when, (long)getpid());
  fprintf(stderr, fmt, a, b);
  fputc('\n', stderr);
}

void lcd_auth_reload(void) {
  char err[512];
  if (!auth_path && !rights_path) {
    log_line("SIGHUP: nothing to reload (no --auth-file or --rights-file)%s%s",
             "", "");
    return;
  }
  if (auth_path) {
    auth_table *t = table_load(auth_path, err, sizeof err);
    if (!t) {
      log_line("SIGHUP: --auth-file not reloaded, the old one stays: %s%s", err,
               "");
    } else {
      pthread_mutex_lock(&mu);
      auth_table *old = table;
      table = t;
      pthread_mutex_unlock(&mu);
      table_free(old);
      log_line("SIGHUP: --auth-file '%s' reloaded%s", auth_path, "");
    }
  }
  if (rights_path) {
    if (lcd__rights_load(rights_path, err, sizeof err) != 0)
      log_line("SIGHUP: --rights-file not reloaded, the old one stays: %s%s",
               err, "");
    else
      log_line("SIGHUP: --rights-file '%s' reloaded%s", rights_path, "");
    rights_mode(err, sizeof err);
    if (err[0]) log_line("warning: --rights-file: %s%s", err, "");
  }
}

int lcd_auth_enabled(void) { return auth_path != NULL; }

int lcd_auth_check(const lcd_auth_span *user, const lcd_auth_span *pass) {
  static const unsigned char dummy[SHA256_DIGEST_LENGTH] = {0};
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256((const unsigned char *)pass->s, pass->len, d);
  int match = 0, seen = 0;
  pthread_mutex_lock(&mu);
  for (size_t i = 0; table && i < table->n; i++) {
    const auth_user *e = &table->users[i];
    if (strlen(e->name) != user->len || memcmp(e->name, user->s, user->len))
      continue;
    seen = 1;
    if (CRYPTO_memcmp(e->digest, d, sizeof d) == 0) match = 1;
  }
  pthread_mutex_unlock(&mu);
  if (!seen) (void)CRYPTO_memcmp(dummy, d, sizeof d); /* the same work */
  OPENSSL_cleanse(d, sizeof d);
  return match;
}

/* ---- failures per address ---------------------------------------------- */

typedef struct fail_slot {
  char addr[64];
  unsigned count;
  time_t last, last_before; /* the last failure; before the last turn */
  int64_t next_ms; /* the address's next turn: no attempt before it */
  time_t log_sec;  /* failure log lines of this second */
  unsigned logged, unlogged;
} fail_slot;

static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;
static fail_slot fails[LCD_AUTH_FAIL_SLOTS];
static _Atomic uint64_t delayed;

/* The address part of "host:port", "[v6]:port" or "unix". */
static void peer_addr(const char *peer, char out[64]) {
  snprintf(out, 64, "%s", peer);
  char *colon = strrchr(out, ':');
  if (colon && (out[0] != '[' || colon > strchr(out, ']'))) *colon = '\0';
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* fail_mu held: addr's slot (a new one, the oldest reused, when absent;
 * NULL with create 0), its count restarted after LCD_AUTH_FAIL_WINDOW s
 * of quiet. */
static fail_slot *slot_of(const char *addr, int64_t ms, int create) {
  time_t now = (time_t)(ms / 1000);
  fail_slot *hit = NULL, *oldest = &fails[0];
  for (size_t i = 0; i < LCD_AUTH_FAIL_SLOTS; i++) {
    fail_slot *f = &fails[i];
    if (f->count && strcmp(f->addr, addr) == 0) {
      hit = f;
      break;
    }
    if (!f->count || f->last < oldest->last) oldest = f;
  }
  if (hit && now - hit->last >= LCD_AUTH_FAIL_WINDOW && hit->next_ms <= ms)
    hit->count = 0;
  if (!hit && !create) return NULL;
  if (!hit) {
    hit = oldest;
    memset(hit, 0, sizeof *hit);
    snprintf(hit->addr, sizeof hit->addr, "%s", addr);
  }
  return hit;
}

/* The delay of the n-th failure in a row: 0 for the first, then 100 ms
 * doubling, at most LCD_AUTH_DELAY_MAX_MS. */
static int64_t delay_of(unsigned n) {
  if (n <= 1) return 0;
  int64_t d = 100;
  for (unsigned k = 2; k < n && d < LCD_AUTH_DELAY_MAX_MS; k++) d *= 2;
  return d > LCD_AUTH_DELAY_MAX_MS ? LCD_AUTH_DELAY_MAX_MS : d;
}

unsigned lcd_auth_fail(const char *peer) {
  char addr[64];
  peer_addr(peer, addr);
  int64_t ms = now_ms();
  pthread_mutex_lock(&fail_mu);
  fail_slot *f = slot_of(addr, ms, 1);
  if (f->count < 1000) f->count++;
  f->last = (time_t)(ms / 1000);
  int64_t d = delay_of(f->count);
  if (f->next_ms < ms + d) f->next_ms = ms + d;
  pthread_mutex_unlock(&fail_mu);
  if (d) atomic_fetch_add(&delayed, 1);
  return (unsigned)d;
}

unsigned lcd_auth_turn(const char *peer, int *taken) {
  char addr[64];
  peer_addr(peer, addr);
  int64_t ms = now_ms();
  unsigned wait = 0;
  *taken = 0;
  pthread_mutex_lock(&fail_mu);
  fail_slot *f = slot_of(addr, ms, 0);
  if (f && f->count && f->next_ms > ms) {
    wait = (unsigned)(f->next_ms - ms);
  } else if (f && f->count) { /* the turn: counted as a failure, ahead */
    *taken = 1;
    if (f->count < 1000) f->count++;
    f->last_before = f->last; /* a success does not keep the window open */
    f->last = (time_t)(ms / 1000);
    f->next_ms = ms + delay_of(f->count);
  }
  pthread_mutex_unlock(&fail_mu);
  if (wait) atomic_fetch_add(&delayed, 1);
  return wait;
}

void lcd_auth_passed(const char *peer) {
  char addr[64];
  peer_addr(peer, addr);
  pthread_mutex_lock(&fail_mu);
  fail_slot *f = slot_of(addr, now_ms(), 0);
  if (f && f->count > 1) { /* the failure counted ahead */
    f->count--;
    f->last = f->last_before;
  }
  pthread_mutex_unlock(&fail_mu);
}

int lcd_auth_log_ok(const char *peer, unsigned *dropped) {
  char addr[64];
  peer_addr(peer, addr);
  int64_t ms = now_ms();
  time_t sec = (time_t)(ms / 1000);
  pthread_mutex_lock(&fail_mu);
  fail_slot *f = slot_of(addr, ms, 1);
  if (f->log_sec != sec) {
    f->log_sec = sec;
    f->logged = 0;
  }
  int ok = f->logged < LCD_AUTH_LOG_PER_S;
  *dropped = 0;
  if (ok) {
    f->logged++;
    *dropped = f->unlogged;
    f->unlogged = 0;
  } else {
    f->unlogged++;
  }
  pthread_mutex_unlock(&fail_mu);
  return ok;
}

uint64_t lcd_auth_delayed(void) { return atomic_load(&delayed); }

void lcd_auth_free(void) {
  pthread_mutex_lock(&mu);
  table_free(table);
  table = NULL;
  pthread_mutex_unlock(&mu);
  lcd__rights_free();
}

/* ---- the safe default --------------------------------------------------- */

int lcd_auth_loopback(const char *addr) {
  struct sockaddr_storage ss;
  int len = sizeof ss;
  memset(&ss, 0, sizeof ss);
  if (evutil_parse_sockaddr_port(addr, (struct sockaddr *)&ss, &len) != 0)
    return -1;
  if (ss.ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (ss.ss_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)&ss)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a)) return 1;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
  }
  return 0;
}

int lcd_auth_public(const char *list, char *out, size_t n) {
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    char one[LCD_ADDR_TEXT];
    snprintf(one, sizeof one, "%.*s", (int)len, p);
    const char *addr = strncmp(one, "notls:", 6) == 0 ? one + 6 : one;
    if (lcd_auth_loopback(addr) == 0) { /* one that does not parse is
                                           lcd_listen's usage error */
      snprintf(out, n, "%s", addr);
      return 1;
    }
    p += len;
    if (*p == ',') p++;
  }
  return 0;
}
