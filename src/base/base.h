/*
 * base/base.h - the bottom layer, which every folder above may use and
 * which calls none of them: the error table's helpers and the calling
 * thread's failure detail (errors.c), the key and record formats
 * (keys.c, declared in format.h, which tests and tools read too), the
 * clocks (keys.c) and random bits (random.c), the hash table of names
 * (names.c) and the histograms of write latency (latency.c).
 */
#ifndef LC_BASE_H
#define LC_BASE_H

#include "base/format.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Positive "not an error" results of internal calls. */
#define LC__MISS 1   /* memcached does not have the key */
#define LC__EXISTS 2 /* memcached add found the key present */

/* ---- errors.c ---- */
#define LC__DETAIL_MAX 256
/* Sets the calling thread's failure detail (printf-style) and returns err. */
int lc__fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void lc__detail_clear(void);
void lc__detail_set(const char *text);

/* ---- stripe.c ---- */
#define LC__STRIPES 16
/* The calling thread's stripe, 0 .. LC__STRIPES - 1 (the same every call). */
unsigned lc__stripe(void);

/* ---- random.c ---- */
/* 64 random bits from /dev/urandom (the time and pid if that fails, which
 * only weakens the randomness). */
uint64_t lc__random64(void);

/* ---- names.c: the name table of counters and tallies ---- */
/* An entry's name is not pointed to: it lies at the table's name_at
 * bytes from the entry's start (in the entry's own allocation), which
 * saves every entry a pointer. */
typedef struct lc__named { /* the first member of an entry */
  struct lc__named *next;  /* hash chain */
  uint32_t nlen;
  uint32_t hash; /* of the name, set by lc__names_add */
} lc__named;
typedef struct lc__names {
  lc__named **buckets; /* nbuckets (a power of two, doubling) */
  size_t nbuckets;
  uint64_t count, max; /* entries; the limit (kept by callers) */
  size_t name_at;      /* where an entry's name lies (lc__names_init) */
} lc__names;
/* An empty table whose entries keep their names name_at bytes from
 * their start. */
void lc__names_init(lc__names *t, size_t name_at);
/* e's name (nlen bytes, then a NUL) in t. */
static inline const char *lc__names_name(const lc__names *t,
                                         const lc__named *e) {
  return (const char *)e + t->name_at;
}
/* The entry named name (n bytes), or NULL. */
lc__named *lc__names_find(const lc__names *t, const char *name, size_t n);
/* Adds e (its name and nlen set, not present; sets its hash); false when
 * out of memory. */
bool lc__names_add(lc__names *t, lc__named *e);
/* Takes e (present) out of the table. */
void lc__names_remove(lc__names *t, lc__named *e);
/* Calls fn on every entry (fn may free it). */
void lc__names_each(const lc__names *t, void (*fn)(lc__named *e, void *arg),
                    void *arg);
/* Calls fn on the entries of whole buckets from `from` on, until at least
 * budget entries were seen (returns the next bucket) or fn returns false
 * (returns fn's bucket, to be walked again); nbuckets at the end.  fn may
 * not free the entry.  A walk over a table that grew meanwhile may miss
 * entries. */
size_t lc__names_walk(const lc__names *t, size_t from, size_t budget,
                      bool (*fn)(lc__named *e, void *arg), void *arg);
/* Forgets every entry (free them first, with lc__names_each). */
void lc__names_clear(lc__names *t);

/* ---- latency.c: one histogram of write latency, buckets as in
 * lc_latency_bound_us; every field a relaxed atomic ---- */
enum { LC__LAT_RESERVATION, LC__LAT_SEGMENT, LC__LAT_KINDS };
typedef struct lc__hist {
  atomic_uint_fast64_t n[LC_LATENCY_BUCKETS];
  atomic_uint_fast64_t sum_us;
} lc__hist;
/* Counts into t one write that started at start_us (lc__clock_mono_us). */
void lc__lat_record(lc__hist *t, int64_t start_us);
/* What t holds now; count is the sum of the buckets read. */
void lc__lat_snapshot(const lc__hist *t, lc_latency_hist *out);

#endif
