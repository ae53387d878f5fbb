/*
 * rare.c - the parts of a counter's state most counters never fill (the
 * overlap check's accepted ranges, the ledger's blocks taken ahead and
 * pending gaps, finished segments waiting for their records), allocated
 * on first need and freed as soon as they are empty again, so that a
 * counter in memory costs a few hundred bytes, not a kilobyte.  A leaf:
 * the counter's own mu (or its exclusive owner) guards them.
 */
#include "counter/counter.h"

#include <stdlib.h>

lc__rare *lc__counter_rare(lc__counter *c) {
  if (c->rare == NULL) c->rare = malloc(sizeof *c->rare);
  return c->rare;
}

void lc__counter_rare_trim(lc__counter *c) {
  if (c->rare && c->naccepted == 0 && c->nahead == 0 && c->ngaps == 0 &&
      c->nburned == 0 && c->nclose == 0) {
    free(c->rare);
    c->rare = NULL;
  }
}
