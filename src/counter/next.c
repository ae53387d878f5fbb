/*
 * next.c - lc_next_n and its kin: the allocation calls' way in.  A call
 * is checked and counted here and goes one of three ways: to a
 * logcounterd (remote.c), to the held segments (prefetch.c), or to the
 * counter's queue of callers, whose leader increments memcached and
 * writes the log (counter.c).  lc_next_quick tells an event loop which
 * of them will not wait on the log, and lc_try_next_n makes the call
 * only if it does not.
 */
#include "counter/counter.h"
#include "handle.h"

int lc__next_count_call(lc_t *h, int rc, uint64_t n) {
  if (rc) {
    LC__STAT(h, errors, 1);
  } else {
    struct lc__stripe *s = &h->calls[lc__stripe()];
    atomic_fetch_add_explicit(&s->allocations, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->ids, n, memory_order_relaxed);
  }
  return rc;
}

/* lc__next_n; wait false (lc_try_next_n, prefetch only): LC_EWOULDBLOCK,
 * not counted, for a counter not in use in this handle (no state is
 * made for it) or one whose held segments cannot serve the call. */
static int next_n(lc_t *h, const char *name, uint64_t n, bool wait,
                  int64_t *first) {
  if (n == 0 || n > LC_BLOCK_MAX)
    return lc__next_count_call(
        h, lc__fail(LC_ECOUNT, "count %llu", (unsigned long long)n), n);
  int rc;
  if (h->remote) {
    rc = lc_check_name(name);
    rc = rc ? lc__fail(rc, "invalid counter name")
            : lc__remote_next(h, name, n, first);
    return lc__next_count_call(h, rc, n);
  }
  lc__counter *c;
  if ((rc = lc__follow_primary_only(h)) != 0 || /* fenced, or a standby */
      (rc = wait ? lc__counter_lookup(h, name, &c)
                 : lc__counter_find(h, name, &c)) != 0)
    return lc__next_count_call(h, rc, n);
  if (c == NULL) return LC_EWOULDBLOCK; /* its first use reads the log */
  rc = h->opt.prefetch ? lc__prefetch_next(h, c, n, wait, first)
                       : lc__counter_next(h, c, n, first);
  return rc == LC_EWOULDBLOCK ? rc : lc__next_count_call(h, rc, n);
}

int lc__next_n(lc_t *h, const char *name, uint64_t n, int64_t *first) {
  return next_n(h, name, n, true, first);
}

int lc_next_n(lc_t *h, const char *name, uint64_t n, int64_t *first) {
  lc__detail_clear();
  if (h == NULL || first == NULL)
    return lc__fail(LC_EINVAL, "NULL handle or result pointer");
  LC__GATE_IN(h);
  int rc = lc__next_n(h, name, n, first);
  LC__GATE_OUT(h);
  return rc;
}

static int next_quick(lc_t *h, const char *name) {
  lc__counter *c = NULL;
  if (lc__counter_find(h, name, &c) != 0 || c == NULL) {
    lc__detail_clear();
    return 0;
  }
  int64_t next = atomic_load_explicit(&c->fast_next, memory_order_relaxed);
  if (next != LC__FAST_CLOSED &&
      next < atomic_load_explicit(&c->fast_limit, memory_order_relaxed))
    return 1; /* ids in the window: no lock taken (it would close it) */
  lc__counter_lock(c);
  /* pending: a synced write; busy: an exclusive operation (a batched
   * first use, first.c; a restore, raise or fetch), which ends in one.
   * With prefetch, a call that finds no segment held fetches one or waits
   * for the fetch under way: a synced write too (with a required standby,
   * its acknowledgement as well), which an event loop must not wait for */
  int quick = c->claimed && !c->pending && !c->busy &&
              (!h->opt.prefetch || c->nseg > 0);
  lc__counter_unlock(c);
  return quick;
}

int lc_next_quick(lc_t *h, const char *name) {
  if (h == NULL || h->remote || atomic_load(&h->standby)) return 0;
  if (h->opt.durability == LC_DURABILITY_SYNC && !h->opt.prefetch) return 0;
  LC__GATE_IN(h);
  int quick = next_quick(h, name);
  LC__GATE_OUT(h);
  return quick;
}

int lc_try_next_n(lc_t *h, const char *name, uint64_t n, int64_t *first) {
  lc__detail_clear();
  if (h == NULL || first == NULL)
    return lc__fail(LC_EINVAL, "NULL handle or result pointer");
  if (n == 0 || n > LC_BLOCK_MAX || lc_check_name(name) != 0)
    return lc_next_n(h, name, n, first); /* its error, at once */
  if (h->remote || atomic_load(&h->standby)) return LC_EWOULDBLOCK;
  if (!h->opt.prefetch) /* the hint decides */
    return lc_next_quick(h, name) ? lc_next_n(h, name, n, first)
                                  : LC_EWOULDBLOCK;
  LC__GATE_IN(h); /* the held segments decide, under the counter's lock */
  int rc = next_n(h, name, n, false, first);
  LC__GATE_OUT(h);
  return rc;
}

int lc_next(lc_t *h, const char *name, int64_t *value) {
  return lc_next_n(h, name, 1, value);
}
