/*
 * repl/cluster.c - what automatic failover (logcounterd --etcd, its
 * lcd_cluster.c) needs of the library: a lease deadline after which the
 * handle hands out nothing (fencing), the address of the standby a
 * primary serves (so the coordinator can name it in etcd) and the
 * approval without which that standby never goes in sync, a probe of
 * what a log directory holds (before lc_open), and the term record.
 *
 * Fencing is one relaxed atomic and a monotonic clock read in
 * lc__follow_primary_only, which every allocation passes before any window or
 * segment serves it (next.c, first.c, tally.c), so a primary whose
 * deadline passed hands out nothing, whichever thread asks and whether or
 * not the coordinator's thread runs at all (a frozen process resumed).
 */
#include "repl/repl.h"
#include "handle.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define TERM_KEY "!logcounter-term"

static atomic_bool need_approval;

bool lc__cluster_lease_expired(lc_t *h) {
  int64_t d = atomic_load_explicit(&h->lease_deadline_us, memory_order_relaxed);
  return d != 0 && lc__clock_mono_us() >= d;
}

bool lc__cluster_approval(void) { return atomic_load(&need_approval); }

int64_t lc_monotonic_us(void) { return lc__clock_mono_us(); }

int lc_set_lease_deadline(lc_t *h, int64_t mono_us) {
  if (h == NULL || mono_us < 0)
    return lc__fail(LC_EINVAL, "NULL handle or negative deadline");
  if (h->remote) return lc__fail(LC_EREMOTE, "a lease deadline is local");
  atomic_store(&h->lease_deadline_us, mono_us);
  return 0;
}

void lc_replication_need_approval(void) { atomic_store(&need_approval, true); }

int lc_replication_peer(lc_t *h, char *out, size_t size, int *in_sync) {
  if (h == NULL || out == NULL || size == 0 || in_sync == NULL)
    return lc__fail(LC_EINVAL, "NULL argument");
  char peer[LC__PEER_MAX] = "";
  bool sync = false;
  /* as lc_get_replication_status: repl is set before standby is cleared */
  if (atomic_load(&h->standby)) {
    if (h->follow) lc__follow_local(h->follow, peer, sizeof peer);
  } else if (h->repl) {
    lc__repl_peer(h->repl, peer, sizeof peer, &sync);
  }
  snprintf(out, size, "%s", peer);
  *in_sync = sync;
  return 0;
}

int lc_replication_approve(lc_t *h, const char *peer) {
  if (h == NULL || peer == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  if (atomic_load(&h->standby) || h->repl == NULL)
    return lc__fail(LC_EINVAL, "not a primary serving replication");
  lc__repl_approve(h->repl, peer);
  return 0;
}

int lc_log_kind(const char *db_path, int *kind) {
  if (db_path == NULL || kind == NULL)
    return lc__fail(LC_EINVAL, "NULL argument");
  *kind = LC_LOG_KIND_NONE;
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, 0);
  char *err = NULL;
  leveldb_t *db = leveldb_open(o, db_path, &err);
  leveldb_options_destroy(o);
  if (err) { /* missing (a new node), or in use: lc_open will say which */
    bool missing = strstr(err, "does not exist") != NULL;
    leveldb_free(err);
    if (missing) return 0;
    *kind = LC_LOG_KIND_PRIMARY; /* not known: lc_open says why */
    return 0;
  }
  leveldb_readoptions_t *r = leveldb_readoptions_create();
  size_t vlen = 0;
  int rc = 0;
  *kind = LC_LOG_KIND_PRIMARY;
  char *v = leveldb_get(db, r, LC__STANDBY_KEY, strlen(LC__STANDBY_KEY),
                        &vlen, &err);
  if (err) {
    rc = lc__fail(LC_ELOG, "reading '%s': %s", db_path, err);
    leveldb_free(err);
  } else if (v) {
    *kind = LC_LOG_KIND_STANDBY;
    leveldb_free(v);
  }
  leveldb_readoptions_destroy(r);
  leveldb_close(db);
  return rc;
}

int lc_set_term(lc_t *h, uint64_t term) {
  if (h == NULL) return lc__fail(LC_EINVAL, "NULL handle");
  atomic_store(&h->term, term);
  return 0;
}

int lc_record_term(lc_t *h, uint64_t term, const char *node) {
  if (h == NULL || node == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  int rc = LC__LOCAL_ONLY(h);
  if (rc) return rc;
  if (atomic_load(&h->standby))
    return lc__fail(LC_ESTANDBY, "a term is the primary's");
  char v[320];
  int n = snprintf(v, sizeof v, "1 %llu %lld %.255s", (unsigned long long)term,
                   (long long)(lc__clock_now_us() / 1000000), node);
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  leveldb_writebatch_put(b, TERM_KEY, strlen(TERM_KEY), v, (size_t)n);
  rc = lc__log_write(&h->log, b, false);
  leveldb_writebatch_destroy(b);
  return rc;
}
