/*
 * names.c - the hash table of names that counters (counter.c) and tallies
 * (tally.c) both keep: FNV-1a over the name, chains, and a bucket array
 * that doubles (from LC__NAMES_MIN buckets) once there are two entries a
 * bucket, so lookups stay O(1) with millions of names.  Intrusive: an
 * entry embeds an lc__named as its first member, which keeps its name's
 * hash (a lookup compares hashes before names; growth reads no name).
 * The caller locks.
 */
#include "base/base.h"

#include <stdlib.h>
#include <string.h>

#define LC__NAMES_MIN 256

static uint32_t hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

void lc__names_init(lc__names *t, size_t name_at) {
  *t = (lc__names){.name_at = name_at};
}

lc__named *lc__names_find(const lc__names *t, const char *name, size_t n) {
  if (t->nbuckets == 0) return NULL;
  uint32_t h = hash(name, n);
  lc__named *e = t->buckets[h & (t->nbuckets - 1)];
  /* the hash first: a chain's other names are passed over without
   * reading them (a first use's lookups all miss) */
  while (e && !(e->hash == h && e->nlen == n &&
                memcmp(lc__names_name(t, e), name, n) == 0))
    e = e->next;
  return e;
}

/* Doubles the buckets when due; a failed allocation keeps the old ones
 * (longer chains, still right).  False only when there are none at all. */
static bool grow(lc__names *t) {
  if (t->nbuckets && t->count < 2 * t->nbuckets) return true;
  size_t nb = t->nbuckets ? 2 * t->nbuckets : LC__NAMES_MIN;
  lc__named **b = calloc(nb, sizeof *b);
  if (b == NULL) return t->nbuckets > 0;
  for (size_t i = 0; i < t->nbuckets; i++) {
    for (lc__named *e = t->buckets[i], *next; e; e = next) {
      next = e->next;
      size_t j = e->hash & (nb - 1); /* kept: no name read again */
      e->next = b[j];
      b[j] = e;
    }
  }
  free(t->buckets);
  t->buckets = b;
  t->nbuckets = nb;
  return true;
}

bool lc__names_add(lc__names *t, lc__named *e) {
  if (!grow(t)) return false;
  e->hash = hash(lc__names_name(t, e), e->nlen);
  size_t j = e->hash & (t->nbuckets - 1);
  e->next = t->buckets[j];
  t->buckets[j] = e;
  t->count++;
  return true;
}

void lc__names_remove(lc__names *t, lc__named *e) {
  lc__named **link = &t->buckets[e->hash & (t->nbuckets - 1)];
  while (*link != e) link = &(*link)->next;
  *link = e->next;
  t->count--;
}

void lc__names_each(const lc__names *t, void (*fn)(lc__named *e, void *arg),
                    void *arg) {
  for (size_t i = 0; i < t->nbuckets; i++)
    for (lc__named *e = t->buckets[i], *next; e; e = next) {
      next = e->next; /* fn may free e */
      fn(e, arg);
    }
}

size_t lc__names_walk(const lc__names *t, size_t from, size_t budget,
                      bool (*fn)(lc__named *e, void *arg), void *arg) {
  size_t seen = 0;
  for (size_t i = from; i < t->nbuckets; i++) {
    for (lc__named *e = t->buckets[i]; e; e = e->next, seen++)
      if (!fn(e, arg)) return i;
    if (seen >= budget) return i + 1;
  }
  return t->nbuckets;
}

void lc__names_clear(lc__names *t) {
  free(t->buckets);
  t->buckets = NULL;
  t->nbuckets = 0;
  t->count = 0;
}
