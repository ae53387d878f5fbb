/*
 * stripe.c - each thread's stripe: an index below LC__STRIPES, handed out
 * round-robin at a thread's first call and kept, so that per-call counts
 * (struct lc's calls[]) go to a cache line few other threads write.
 */
#include "base/base.h"

unsigned lc__stripe(void) {
  static atomic_uint next;
  static _Thread_local unsigned mine; /* 0: none yet, else stripe + 1 */
  if (mine == 0)
    mine = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) %
               LC__STRIPES + 1;
  return mine - 1;
}
