/*
 * lcd_rights.c - logcounterd's --rights-file: which names each user may
 * use, how many names it may use since start, and its admin right.
 *
 * A line per user: "USER [prefix=P]... [names=N] [admin]".
 *  - prefix=P: the user may use every counter whose name starts with P,
 *    and every tally whose NAME (after "tally:") starts with P; prefix=*
 *    is every name; a user with no prefix= word, or with no line at all,
 *    may use no name;
 *  - names=N: the user may use at most N distinct keys (counters and
 *    tallies together) for incr, ma and tally changes since the daemon
 *    started; a key counts once per user, when the first request of it is
 *    accepted, whether or not it existed before (the daemon cannot tell
 *    cheaply whether the library will create it) and whether or not that
 *    request then succeeds.  Reads (get, gets, mg, stats tally) never
 *    count.  No names=: no limit of its own (--max-counters still holds);
 *  - admin: the user may send "admin" on a TLS connection and run the
 *    admin commands there (lcd_relay.c relays it to --admin-socket).
 *
 * Invariants: a published table is never changed nor freed before exit
 * (a reload publishes a new one and bumps gen; connections cache a
 * pointer to their user's entry and look it up again when gen changes),
 * so checks on the loops take no lock; the names counted per user live
 * apart from the tables (they survive reloads) in one hash set under
 * use_mu, bounded by the sum of the users' limits (only limited users
 * are counted).
 */
#include "lcd_auth.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lcd_rights_user {
  char name[LCD_AUTH_USER_MAX + 1];
  char *prefix[LCD_RIGHTS_PREFIX_MAX];
  size_t plen[LCD_RIGHTS_PREFIX_MAX];
  size_t nprefix;
  int any, has_limit, admin;
  uint64_t limit;
};

typedef struct rights_table {
  struct rights_table *older; /* kept until exit */
  lcd_rights_user *users;
  size_t n;
} rights_table;

static pthread_mutex_t rmu = PTHREAD_MUTEX_INITIALIZER;
static rights_table *_Atomic current;
static atomic_uint gen = 1;

static void table_free(rights_table *t) {
  for (size_t i = 0; i < t->n; i++)
    for (size_t k = 0; k < t->users[i].nprefix; k++) free(t->users[i].prefix[k]);
  free(t->users);
  free(t);
}

int lcd__rights_load(const char *path, char *err, size_t errlen) {
  size_t len;
  char *buf = lcd__read_file(path, &len, err, errlen, 0);
  if (!buf) return -1;
  rights_table *t = calloc(1, sizeof *t);
  size_t cap = 0, lineno = 0;
  int ok = t != NULL;
  for (size_t i = 0; ok && i < len;) {
    const char *nl = memchr(buf + i, '\n', len - i);
    size_t l = nl ? (size_t)(nl - (buf + i)) : len - i;
    lineno++;
    lcd_rights_line r;
    const char *why = "";
    int rc = lcd_rights_line_parse(buf + i, l, &r, &why);
    i += l + 1;
    if (rc == 0) continue;
    if (rc < 0) {
      snprintf(err, errlen, "'%s' line %zu: %s", path, lineno, why);
      ok = 0;
      break;
    }
    for (size_t k = 0; k < t->n; k++)
      if (strlen(t->users[k].name) == r.user.len &&
          memcmp(t->users[k].name, r.user.s, r.user.len) == 0) {
        snprintf(err, errlen, "'%s' line %zu: a second line for user '%s'",
                 path, lineno, t->users[k].name);
        ok = 0;
      }
    if (!ok) break;
    if (t->n == cap) {
      cap = cap ? cap * 2 : 16;
      lcd_rights_user *nu = realloc(t->users, cap * sizeof *nu);
      if (!nu) {
        snprintf(err, errlen, "'%s': out of memory", path);
        ok = 0;
        break;
      }
      t->users = nu;
    }
    lcd_rights_user *u = &t->users[t->n++];
    memset(u, 0, sizeof *u);
    memcpy(u->name, r.user.s, r.user.len);
    u->any = r.any;
    u->has_limit = r.has_limit;
    u->limit = r.limit;
    u->admin = r.admin;
    for (size_t k = 0; k < r.nprefix; k++) {
      u->prefix[k] = strndup(r.prefix[k].s, r.prefix[k].len);
      if (!u->prefix[k]) {
        snprintf(err, errlen, "'%s': out of memory", path);
        ok = 0;
        break;
      }
      u->plen[k] = r.prefix[k].len;
      u->nprefix++;
    }
  }
  free(buf);
  if (!ok) {
    if (t) table_free(t);
    return -1;
  }
  pthread_mutex_lock(&rmu);
  t->older = atomic_load(&current);
  atomic_store(&current, t);
  atomic_fetch_add(&gen, 1);
  pthread_mutex_unlock(&rmu);
  return 0;
}

int lcd_rights_enabled(void) { return atomic_load(&current) != NULL; }

unsigned lcd_rights_gen(void) { return atomic_load(&gen); }

const lcd_rights_user *lcd_rights_lookup(const char *user) {
  rights_table *t = atomic_load(&current);
  for (size_t i = 0; t && i < t->n; i++)
    if (strcmp(t->users[i].name, user) == 0) return &t->users[i];
  return NULL;
}

const char *lcd_rights_prefix(const lcd_rights_user *u, const char *name,
                              size_t len) {
  if (!u) return "permission denied: this user has no line in the rights file";
  if (u->any) return NULL;
  for (size_t k = 0; k < u->nprefix; k++)
    if (len >= u->plen[k] && memcmp(name, u->prefix[k], u->plen[k]) == 0)
      return NULL;
  return "permission denied: no prefix right for this name";
}

int lcd_rights_admin(const lcd_rights_user *u) { return u && u->admin; }

/* ---- names used per user ----------------------------------------------- */

typedef struct used {
  struct used *next;
  size_t len;
  char key[]; /* user '\0' key */
} used;

typedef struct user_count {
  struct user_count *next;
  uint64_t n;
  char name[LCD_AUTH_USER_MAX + 1];
} user_count;

static pthread_mutex_t use_mu = PTHREAD_MUTEX_INITIALIZER;
static used **buckets;
static size_t nbuckets, nused;
static user_count *counts;

static uint64_t hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return h;
}

static int grow(void) {
  size_t nb = nbuckets ? nbuckets * 2 : 1024;
  used **b = calloc(nb, sizeof *b);
  if (!b) return -1;
  for (size_t i = 0; i < nbuckets; i++)
    for (used *e = buckets[i], *n; e; e = n) {
      n = e->next;
      size_t h = hash(e->key, e->len) & (nb - 1);
      e->next = b[h];
      b[h] = e;
    }
  free(buckets);
  buckets = b;
  nbuckets = nb;
  return 0;
}

const char *lcd_rights_new_name(const lcd_rights_user *u, const char *key,
                                size_t len) {
  if (!u) return "permission denied: this user has no line in the rights file";
  if (!u->has_limit) return NULL;
  size_t ulen = strlen(u->name), klen = ulen + 1 + len;
  char tmp[LCD_AUTH_USER_MAX + 2 + 256 + 8];
  if (klen > sizeof tmp) return "permission denied: key too long";
  memcpy(tmp, u->name, ulen + 1);
  memcpy(tmp + ulen + 1, key, len);
  const char *why = NULL;
  pthread_mutex_lock(&use_mu);
  if (!nbuckets && grow() != 0) {
    why = "permission denied: out of memory";
    goto out;
  }
  size_t h = hash(tmp, klen) & (nbuckets - 1);
  for (used *e = buckets[h]; e; e = e->next)
    if (e->len == klen && memcmp(e->key, tmp, klen) == 0) goto out;
  user_count *c = counts;
  while (c && strcmp(c->name, u->name) != 0) c = c->next;
  if (!c) {
    if (!(c = calloc(1, sizeof *c))) {
      why = "permission denied: out of memory";
      goto out;
    }
    memcpy(c->name, u->name, ulen + 1);
    c->next = counts;
    counts = c;
  }
  if (c->n >= u->limit) {
    why = "permission denied: names limit of this user reached (names= in "
          "the rights file)";
    goto out;
  }
  used *e = malloc(sizeof *e + klen);
  if (!e) {
    why = "permission denied: out of memory";
    goto out;
  }
  e->len = klen;
  memcpy(e->key, tmp, klen);
  e->next = buckets[h];
  buckets[h] = e;
  c->n++;
  if (++nused > nbuckets) grow(); /* failure: longer chains, still right */
out:
  pthread_mutex_unlock(&use_mu);
  return why;
}

void lcd__rights_free(void) {
  for (rights_table *t = atomic_load(&current), *o; t; t = o) {
    o = t->older;
    table_free(t);
  }
  atomic_store(&current, NULL);
  for (size_t i = 0; i < nbuckets; i++)
    for (used *e = buckets[i], *n; e; e = n) {
      n = e->next;
      free(e);
    }
  free(buckets);
  buckets = NULL;
  nbuckets = nused = 0;
  for (user_count *c = counts, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  counts = NULL;
}
