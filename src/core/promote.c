/*
 * promote.c - high availability's calls: lc_promote (a standby becomes
 * the primary, in place) and lc_get_replication_status.
 *
 * Promotion stops the follower first, so nothing more arrives from the
 * old primary; a stale standby (follow.c) goes back to following unless
 * forced.  Then, with allocations still refused, the log takes back its
 * own identity (the primary's, copied), every counter in it is raised
 * above its last floor, memcached's value and the operator's above (a
 * gap of cause failover, counter_ops.c's op_failover), and only then does
 * the handle hand out ids.  The old primary needs this standby's
 * acknowledgment for every floor, and it gets none any more: whatever it
 * hands out lies under a floor counted here.
 */
#include "core/core.h"
#include "handle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lc_role_name(lc_role_t role) {
  switch (role) {
  case LC_ROLE_PRIMARY: return "primary";
  case LC_ROLE_STANDBY: return "standby";
  case LC_ROLE_ALONE: break;
  }
  return "alone";
}

int lc_get_replication_status(lc_t *h, lc_replication_status *out) {
  if (h == NULL || out == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  memset(out, 0, sizeof *out);
  /* no lock: a promotion of many counters must not hold up stats; the
   * follower lives until lc_close, repl is set before standby is cleared */
  if (atomic_load(&h->standby)) {
    if (h->follow) lc__follow_status(h->follow, out);
    out->role = LC_ROLE_STANDBY;
  } else if (h->repl) {
    lc__repl_status(h->repl, out);
  } else {
    snprintf(out->state, sizeof out->state, "none");
  }
  return 0;
}

int lc_replication_standbys(lc_t *h, int *n) {
  if (h == NULL || n == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  *n = 0;
  if (!atomic_load(&h->standby) && h->repl) *n = lc__repl_standbys(h->repl);
  return 0;
}

/* The follower's last word: its position key goes, the identity it
 * copied becomes the handle's. */
static int take_over(lc_t *h) {
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  leveldb_writebatch_delete(b, LC__STANDBY_KEY, strlen(LC__STANDBY_KEY));
  int rc = lc__log_write(&h->log, b, true);
  leveldb_writebatch_destroy(b);
  if (!rc) rc = lc__log_identity(&h->log, h->log_id);
  if (!rc) {
    memcpy(h->log.id, h->log_id, sizeof h->log.id);
    lc__claim_text(h);
    rc = lc__backup_restored_load(h);
  }
  return rc;
}

static int raise_all(lc_t *h, int64_t above, uint64_t *raised) {
  char *names = NULL;
  uint64_t count = 0;
  int rc = lc__log_counter_names(h, &names, &count);
  const char *name = names;
  for (uint64_t i = 0; !rc && i < count; i++, name += strlen(name) + 1) {
    int64_t to = 0;
    rc = lc__counter_failover(h, name, above, &to);
    if (!rc) (*raised)++;
  }
  free(names);
  return rc;
}

int lc_promote(lc_t *h, const lc_promote_opts *o, uint64_t *counters) {
  lc__detail_clear();
  if (h == NULL) return lc__fail(LC_EINVAL, "NULL handle");
  lc_promote_opts opts = {0};
  if (o) opts = *o;
  if (opts.above < 0 || opts.above >= LC_VALUE_MAX)
    return lc__fail(LC_EINVAL, "promote above %lld", (long long)opts.above);
  if (LC__ADMIN_WAY(h)) return lc__admin_promote(h, &opts, counters);
  int rc = LC__LOCAL_ONLY(h);
  if (rc) return rc;
  uint64_t raised = 0;
  pthread_mutex_lock(&h->promote_mu);
  if (!atomic_load(&h->standby)) {
    pthread_mutex_unlock(&h->promote_mu);
    return lc__fail(LC_EINVAL, "this log is not a standby (no standby_of)");
  }
  if (!h->promoting) { /* not on a retry after a failed raise */
    lc__follow_stop(h);
    char why[LC__DETAIL_MAX];
    if (lc__follow_stale(h, why, sizeof why) && !opts.force) {
      rc = lc__follow_start(h);
      pthread_mutex_unlock(&h->promote_mu);
      return rc ? rc : lc__fail(LC_ESTALE, "%s", why);
    }
    h->promoting = true;
    atomic_store(&h->log.standby, false); /* allocations stay refused */
  }
  /* the stream first, going on from where this log stands in the old
   * primary's: the promotion's writes reach the standbys that resume */
  if (!h->repl && h->opt.replication_listen && h->opt.replication_listen[0]) {
    lc__repl_fork fork;
    lc__follow_fork(h, &fork);
    rc = lc__repl_start_fork(h, &fork);
  }
  if (!rc) rc = take_over(h);
  if (!rc) rc = raise_all(h, opts.above, &raised);
  if (!rc && h->repl) lc__repl_collected(h->repl);
  if (!rc) atomic_store(&h->standby, false);
  pthread_mutex_unlock(&h->promote_mu);
  if (counters) *counters = raised;
  return rc;
}
