/*
 * counter_ops.c - the operations on one counter that run alone, as its
 * leader (counter.c's lc__counter_acquire: nothing in flight, new
 * increments held back): lc_current, lc_restore, lc_advance, lc_release,
 * lc_adopt, promotion's failover (promote.c), and lc_void, which asks the
 * segments (segment.c) whether a value is still held before the ledger
 * (ledger.c) records it.  lc_reservation reads the log.
 *
 * Each runs through exclusive(): the counter found or made, loaded from
 * the log, claimed by this log where the operation changes it, then the
 * operation; counter.c's primitives (restore, skip, increment) do the
 * work that also serves allocation.
 */
#include "counter/counter.h"
#include "handle.h"

#include <string.h>

/* Runs op as the counter's leader, with its state loaded (and, when
 * claim, the counter claimed by this log). */
static int op_current(lc_t *h, lc__counter *c, int64_t arg, int64_t *out);
static int op_failover(lc_t *h, lc__counter *c, int64_t arg, int64_t *out);
static int exclusive(lc_t *h, const char *name, int64_t arg, int64_t *out,
                     int (*op)(lc_t *, lc__counter *, int64_t, int64_t *),
                     bool claim) {
  lc__detail_clear();
  if (h == NULL) return lc__fail(LC_EINVAL, "NULL handle");
  lc__counter *c;
  int rc = LC__LOCAL_ONLY(h);
  if (!rc && op != op_current && op != op_failover) rc = lc__follow_primary_only(h);
  if (rc) {
    LC__STAT(h, errors, 1);
    return rc;
  }
  LC__GATE_IN(h);
  rc = lc__counter_lookup(h, name, &c);
  if (!rc && op != op_current) rc = lc__log_ok(&h->log);
  if (!rc) {
    lc__counter_acquire(c);
    rc = lc__counter_load(h, c);
    if (!rc && claim && !c->claimed) rc = lc__counter_claim(h, c);
    if (!rc) rc = op(h, c, arg, out);
    lc__counter_release(c);
  }
  LC__GATE_OUT(h);
  if (rc) LC__STAT(h, errors, 1);
  return rc;
}

static int op_current(lc_t *h, lc__counter *c, int64_t arg, int64_t *out) {
  (void)arg;
  int64_t handed = lc__seg_current(c);
  if (handed) { /* memcached and floor run ahead of it */
    *out = handed;
    return 0;
  }
  uint64_t v = 0;
  int rc = lc__cache_get(&h->cache, c->key, c->klen, &v);
  if (rc < 0) return rc;
  int64_t cur = c->floor;
  if (rc == 0 && v > (uint64_t)cur)
    cur = v > (uint64_t)LC_VALUE_MAX ? LC_VALUE_MAX : (int64_t)v;
  *out = cur;
  return 0;
}

static int op_restore(lc_t *h, lc__counter *c, int64_t arg, int64_t *out) {
  (void)arg;
  return lc__counter_restore(h, c, out);
}

static int op_advance(lc_t *h, lc__counter *c, int64_t min_next, int64_t *out) {
  (void)out;
  int64_t target = min_next - 1; /* the value the counter must stand at */
  int rc;
  if (c->pending) { /* before anything is written: memcached must hold it
                       at or above what the log shows taken */
    uint64_t v = 0;
    rc = lc__cache_get(&h->cache, c->key, c->klen, &v);
    if (rc == LC__MISS)
      return lc__backup_behind(lc__counter_name(c), -1, c->proven);
    if (rc) return rc;
    if (v < (uint64_t)c->proven)
      return lc__backup_behind(lc__counter_name(c), (int64_t)v, c->proven);
  }
  rc = lc__seg_drop(h, c, target); /* held values below min_next */
  if (!rc && target > c->floor) {
    leveldb_writebatch_t *b = leveldb_writebatch_create();
    rc = lc__counter_skip(h, c, target, LC_GAP_ADVANCE, b);
    leveldb_writebatch_destroy(b);
  }
  int64_t now;
  if (!rc) rc = lc__counter_restore(h, c, &now); /* raises memcached to floor */
  if (!rc) lc__seg_advanced(c, target);
  return rc;
}

int lc_current(lc_t *h, const char *name, int64_t *value) {
  if (value == NULL) return lc__fail(LC_EINVAL, "NULL result pointer");
  if (h && h->remote) {
    lc__detail_clear();
    int rc = lc_check_name(name);
    return rc ? lc__fail(rc, "invalid counter name")
              : lc__remote_current(h, name, value);
  }
  if (h == NULL) return exclusive(h, name, 0, value, op_current, false);
  lc__detail_clear();
  lc__counter *c;
  LC__GATE_IN(h); /* so that c, found, stays until exclusive finds it */
  int rc = lc__counter_find(h, name, &c);
  if (!rc && c) {
    rc = exclusive(h, name, 0, value, op_current, false);
    LC__GATE_OUT(h);
    return rc;
  }
  LC__GATE_OUT(h);
  if (!rc) {
    /* Not used by this handle: read it without keeping any state, so
     * that reading many names (a daemon's "get NAME") costs no memory. */
    if ((c = lc__counter_new(name, strlen(name))) == NULL) {
      rc = lc__fail(LC_ENOMEM, "cannot allocate counter state");
    } else {
      rc = lc__counter_load(h, c);
      if (atomic_load(&h->standby))
        c->floor = c->gap_low; /* a standby's: the primary's reservation
                                  runs ahead of what went out */
      if (!rc) rc = op_current(h, c, 0, value);
      lc__counter_free(c);
    }
  }
  if (rc) LC__STAT(h, errors, 1);
  return rc;
}

int lc_restore(lc_t *h, const char *name, int64_t *value) {
  if (value == NULL) return lc__fail(LC_EINVAL, "NULL result pointer");
  if (h && LC__ADMIN_WAY(h)) return lc__admin_op(h, "restore", name, NULL, value, 1);
  return exclusive(h, name, 0, value, op_restore, true);
}

int lc_advance(lc_t *h, const char *name, int64_t min_next) {
  if (min_next < 1)
    return lc__fail(LC_EINVAL, "advance to %lld", (long long)min_next);
  if (h && LC__ADMIN_WAY(h)) return lc__admin_op(h, "advance", name, &min_next, NULL, 0);
  return exclusive(h, name, min_next, NULL, op_advance, true);
}

/* The counter is this log's (claimed): no value goes out any more; the
 * final value (the highest handed out or taken from memcached) is
 * recorded with the release, and the claim dropped. */
/* Released already (a retry, say after memcached failed the first time):
 * the recorded final value (the reservation), the claim dropped again.
 * Refused: LC_EOWNED.  Else claimed here: no value goes out any more (the
 * held segments are given up, their values up to floor), and the final
 * value (the highest handed out or taken from memcached) is recorded with
 * the release, and the claim dropped. */
static int op_release(lc_t *h, lc__counter *c, int64_t arg, int64_t *out) {
  (void)arg;
  int refusal = atomic_load(&c->refusal);
  if (refusal == LC__RELEASED) {
    int rc = lc__claim_drop(h, c);
    if (!rc) *out = lc__claim_final(c);
    return rc;
  }
  int rc = refusal || c->claimed ? 0 : lc__claim(h, c, false);
  if (rc) return rc;
  if (refusal) return lc__claim_refused(h, c);
  lc__counter_lock(c);
  int64_t held_up_to = c->floor; /* segments lie below */
  lc__counter_unlock(c);
  rc = lc__seg_drop(h, c, held_up_to);
  int64_t final = 0;
  if (!rc) rc = op_restore(h, c, 0, &final); /* never below floor */
  if (!rc) rc = lc__claim_release(h, c, final);
  if (!rc) *out = final;
  return rc;
}

/* The refusal or release deleted and a pending counter reconciled, with
 * the values up to `above` skipped, in one synced write (claim.c). */
static int forget(lc_t *h, lc__counter *c, int64_t above, bool reconcile) {
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  lc__claim_forget_batch(b, c, above, reconcile);
  int rc = lc__counter_skip(h, c, above, LC_GAP_ADVANCE, b);
  leveldb_writebatch_destroy(b);
  if (!rc) {
    lc__claim_forgotten(c, reconcile);
  } else {
    lc__counter_lock(c);
    c->claimed = false; /* the next use reloads (lc__counter_next) */
    lc__counter_unlock(c);
    rc = lc__claim_unknown(c, rc, "adopt");
  }
  return rc;
}

/* The refusal (if any) is forgotten together with a reservation at
 * `above`, in one synced write: even if the claim then fails, no restore
 * starts below it.  A pending counter (a restored log) is reconciled only
 * by an adopt above a value (the operator's word that no id above it went
 * out); adopted without one it stays pending (its first increment
 * reconciles it through memcached, or is LC_EBEHIND).  The claim takes
 * over one held by the log a restored log was copied from. */
static int op_adopt(lc_t *h, lc__counter *c, int64_t above, int64_t *out) {
  (void)out;
  bool reconcile = c->pending && above > 0;
  int rc = atomic_load(&c->refusal) || above > c->reserved || reconcile
               ? forget(h, c, above, reconcile)
               : 0;
  if (!rc) rc = lc__claim(h, c, true);
  if (!rc && above > 0) rc = op_advance(h, c, above + 1, NULL);
  return rc;
}

/* Promotion (promote.c): the counter goes on above the largest of its
 * floor (the last replicated reservation or segment, its records and
 * ledger), memcached's value and above; what lies between its highest
 * record or ledger entry and that is one gap, cause LC_GAP_FAILOVER
 * (some of it may have gone out of the old primary, unreplicated). */
static int op_failover(lc_t *h, lc__counter *c, int64_t above, int64_t *out) {
  int64_t target = c->floor > above ? c->floor : above;
  uint64_t v = 0;
  int rc = lc__cache_get(&h->cache, c->key, c->klen, &v);
  if (rc < 0) return rc;
  if (rc == 0 && v > (uint64_t)target)
    target = v > (uint64_t)LC_VALUE_MAX ? LC_VALUE_MAX : (int64_t)v;
  *out = target;
  lc__counter_lock(c);
  int64_t low = c->gap_low; /* nothing is in use: the handle serves none */
  c->floor = c->restart_to = low;
  lc__counter_unlock(c);
  if (target <= low) return 0;
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  rc = lc__counter_skip(h, c, target, LC_GAP_FAILOVER, b);
  leveldb_writebatch_destroy(b);
  return rc;
}

int lc__counter_failover(lc_t *h, const char *name, int64_t above,
                         int64_t *to) {
  return exclusive(h, name, above, to, op_failover, false);
}

int lc_release(lc_t *h, const char *name, int64_t *final) {
  if (final == NULL) return lc__fail(LC_EINVAL, "NULL result pointer");
  if (h && LC__ADMIN_WAY(h)) return lc__admin_op(h, "release", name, NULL, final, 1);
  return exclusive(h, name, 0, final, op_release, false);
}

int lc_adopt(lc_t *h, const char *name, int64_t above) {
  if (above < 0 || above >= LC_VALUE_MAX)
    return lc__fail(LC_EINVAL, "adopt above %lld", (long long)above);
  if (h && LC__ADMIN_WAY(h)) return lc__admin_op(h, "adopt", name, &above, NULL, 0);
  return exclusive(h, name, above, NULL, op_adopt, false);
}

int lc_reservation(lc_t *h, const char *name, int64_t *value) {
  lc__detail_clear();
  if (h == NULL || value == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  if (LC__ADMIN_WAY(h)) return lc__admin_op(h, "reservation", name, NULL, value, 1);
  int rc = LC__LOCAL_ONLY(h);
  if (!rc && (rc = lc_check_name(name)) != 0)
    return lc__fail(rc, "invalid counter name");
  return rc ? rc : lc__log_get_reservation(&h->log, name, strlen(name), value);
}

/* Whether this handle holds value of name in a segment, not handed out. */
static bool held_unissued(lc_t *h, const char *name, int64_t value) {
  if (h == NULL || h->remote || LC__ADMIN_WAY(h) || lc_check_name(name) != 0)
    return false; /* lc__ledger_void refuses or relays it */
  lc__counter *c = NULL;
  LC__GATE_IN(h);
  bool held = lc__counter_find(h, name, &c) == 0 && c && lc__seg_holds(c, value);
  LC__GATE_OUT(h);
  return held;
}

int lc_void(lc_t *h, const char *name, int64_t value, const char *reason) {
  return lc__ledger_void(h, name, value, reason,
                         held_unissued(h, name, value));
}
