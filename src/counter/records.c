/*
 * records.c - lc_iter_open and lc_ledger_open: a counter's records or
 * ledger entries in order, through log/iter.c's iterator.  A counter in
 * use here is settled first, so that a live snapshot shows no hole that a
 * write under way would fill.
 */
#include "counter/counter.h"
#include "handle.h"

static int open_one(lc_t *h, const char *name, bool ledger, lc_iter **out) {
  lc__detail_clear();
  if (h == NULL || out == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  int rc = lc_check_name(name);
  if (rc) return lc__fail(rc, "invalid counter name");
  if (LC__ADMIN_WAY(h)) return lc__iter_remote(h, name, ledger, out);
  if ((rc = LC__LOCAL_ONLY(h)) != 0) return rc;
  /* settled before the log's gate is entered (the counter's own calls
   * take that gate under its mutex); c stays until released (evict.c) */
  lc__counter *c = NULL;
  LC__GATE_IN(h);
  if (lc__counter_find(h, name, &c) == 0 && c) lc__counter_settle(c);
  rc = lc__iter_make(h, name, ledger, out, NULL);
  if (c) lc__counter_release(c);
  LC__GATE_OUT(h);
  return rc;
}

int lc_iter_open(lc_t *h, const char *name, lc_iter **out) {
  return open_one(h, name, false, out);
}

int lc_ledger_open(lc_t *h, const char *name, lc_iter **out) {
  return open_one(h, name, true, out);
}
