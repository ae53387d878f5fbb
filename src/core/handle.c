/*
 * handle.c - the handle: options, lc_open / lc_close, stats, version.
 *
 * lc_open copies the options, opens the log (waiting for it when asked),
 * then connects the memcached pool, and starts what the options ask for
 * (prefetcher, retention, replication or following, admin socket);
 * lc_close undoes it all and leaves every used counter's reservation
 * exact, so that a clean restart skips nothing.
 */
#include "core/core.h"
#include "handle.h"

#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MEMCACHED "--SERVER=127.0.0.1:11211"

const char *lc_version(void) {
  return LC_VERSION_STRING;
}

int lc_durability_parse(const char *s, lc_durability_t *out) {
  if (s && out && strcmp(s, "default") == 0)
    *out = LC_DURABILITY_DEFAULT;
  else if (s && out && strcmp(s, "sync") == 0)
    *out = LC_DURABILITY_SYNC;
  else
    return lc__fail(LC_EINVAL, "durability '%s': use default or sync",
                    s ? s : "(null)");
  return 0;
}

int lc_prefetch_parse(const char *s, uint64_t *out) {
  if (s == NULL || out == NULL)
    return lc__fail(LC_EINVAL, "prefetch: NULL argument");
  if (strcmp(s, "off") == 0 || strcmp(s, "0") == 0) {
    *out = 0;
  } else if (strcmp(s, "auto") == 0) {
    *out = LC_PREFETCH_AUTO;
  } else {
    uint64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9' && v <= LC_BLOCK_MAX; p++)
      v = v * 10 + (uint64_t)(*p - '0');
    if (p == s || *p || v < 1 || v > LC_BLOCK_MAX)
      return lc__fail(LC_EINVAL,
                      "prefetch '%s': use off, auto or a segment "
                      "size 1..%llu",
                      s, (unsigned long long)LC_BLOCK_MAX);
    *out = v;
  }
  return 0;
}

const char *lc_durability_name(lc_durability_t d) {
  return d == LC_DURABILITY_SYNC ? "sync" : "default";
}

void lc_options_init(lc_options *o) {
  memset(o, 0, sizeof *o);
  o->memcached = DEFAULT_MEMCACHED;
  o->durability = LC_DURABILITY_DEFAULT;
  o->timeout_ms = 1000;
  o->reserve = 1000;
  o->pool_size = 16;
  o->owner = "liblogcounter";
}

static char *dup_or_null(const char *s, bool *failed) {
  if (s == NULL) return NULL;
  char *d = strdup(s);
  if (d == NULL) *failed = true;
  return d;
}

static void free_handle(lc_t *h) {
  pthread_mutex_destroy(&h->promote_mu);
  free(h->server);
  if (h->repl_secret) {
    explicit_bzero(h->repl_secret, strlen(h->repl_secret));
    free(h->repl_secret);
  }
  for (int i = 0; i < 2; i++)
    if (h->repl_tls[i]) SSL_CTX_free(h->repl_tls[i]);
  free(h->memcached);
  free(h->db_path);
  free(h->owner);
  free(h);
}

/* Remote mode: only the pool, to the daemon. */
static int open_remote(lc_t *h) {
  int rc = lc__remote_open(h);
  if (!rc && h->server[0] == '/') rc = lc__admin_probe(h);
  h->admin_tls = !rc && h->tls[0] && h->opt.user && h->opt.user[0];
  return rc;
}

/* Undoes lc_open's steps from `started` down. */
static void unwind(lc_t *h, int started) {
  switch (started) {
  case 3:
    lc__follow_free(h);
    lc__repl_stop(h);
    /* fallthrough */
  case 2: lc__retain_stop(h); /* fallthrough */
  case 1:
    lc__evict_stop(h);
    lc__prefetcher_stop(h);
    lc__recover_stop(h);
    lc__log_close(&h->log);
    break;
  default: break;
  }
}

/* user and password: both or neither, remote mode only; the user a
 * printable word, the password without control bytes (it ends a line of
 * memcached's handshake). */
static int check_credentials(const lc_options *o, bool remote) {
  if (!o->user && !o->password) return 0;
  if (!o->user || !o->password || !o->user[0] || !o->password[0])
    return lc__fail(LC_EINVAL, "give both user and password, or neither");
  if (!remote)
    return lc__fail(LC_EINVAL, "user and password are for remote mode "
                               "(lc_options.server)");
  for (const unsigned char *p = (const unsigned char *)o->user; *p; p++)
    if (*p <= ' ' || *p >= 0x7f)
      return lc__fail(LC_EINVAL, "the user must be printable ASCII without "
                                 "spaces");
  for (const unsigned char *p = (const unsigned char *)o->password; *p; p++)
    if (*p < ' ' || *p == 0x7f)
      return lc__fail(LC_EINVAL, "the password holds a control byte");
  return 0;
}

/* tls_cert and tls_key go together, and with tls_ca, in remote mode. */
static int check_tls(const lc_options *o, bool remote) {
  bool ca = o->tls_ca && o->tls_ca[0], cert = o->tls_cert && o->tls_cert[0],
       key = o->tls_key && o->tls_key[0];
  if (!ca && !cert && !key) return 0;
  if (!remote && !(ca && cert && key &&
                   ((o->replication_listen && o->replication_listen[0]) ||
                    (o->standby_of && o->standby_of[0]))))
    return lc__fail(LC_EINVAL, "TLS options are for remote mode "
                               "(lc_options.server), or for replication "
                               "(tls_ca, tls_cert and tls_key together, with "
                               "replication_listen or standby_of)");
  if (!remote) return 0;
  if (!ca) return lc__fail(LC_EINVAL, "a client certificate needs tls_ca");
  if (cert != key)
    return lc__fail(LC_EINVAL, "give both tls_cert and tls_key, or neither");
  if (o->server[0] == '/')
    return lc__fail(LC_EINVAL, "TLS is for a HOST:PORT server, not a unix "
                               "socket");
  return 0;
}

int lc_open(const lc_options *o, lc_t **out) {
  lc__detail_clear();
  if (o == NULL || out == NULL)
    return lc__fail(LC_EINVAL, "options and result pointer are required");
  bool remote = o->server != NULL && o->server[0] != '\0';
  if (!remote && (o->db_path == NULL || o->db_path[0] == '\0'))
    return lc__fail(LC_EINVAL, "db_path (or server) is required");
  if (o->durability != LC_DURABILITY_DEFAULT &&
      o->durability != LC_DURABILITY_SYNC)
    return lc__fail(LC_EINVAL, "unknown durability %d", (int)o->durability);
  if (o->timeout_ms < 0 || o->lock_wait_ms < 0 || o->pool_size < 0)
    return lc__fail(LC_EINVAL, "negative timeout, lock wait or pool size");
  if (o->idle_evict_ms < 0)
    return lc__fail(LC_EINVAL, "negative idle_evict_ms %lld",
                    (long long)o->idle_evict_ms);
  if (remote && o->admin_socket && o->admin_socket[0])
    return lc__fail(LC_EINVAL, "an admin socket is served where the log is, "
                               "not by a remote handle");
  if (o->prefetch > LC_BLOCK_MAX && o->prefetch != LC_PREFETCH_AUTO)
    return lc__fail(LC_EINVAL,
                    "prefetch %llu: at most %llu, or "
                    "LC_PREFETCH_AUTO",
                    (unsigned long long)o->prefetch,
                    (unsigned long long)LC_BLOCK_MAX);
  int rc = lc__retain_check(o, remote);
  if (rc) return rc;
  bool standby = o->standby_of && o->standby_of[0];
  if (remote && (standby || (o->replication_listen && o->replication_listen[0])))
    return lc__fail(LC_EINVAL, "replication is served where the log is, not "
                               "by a remote handle");
  if (o->standby_mode != LC_STANDBY_REQUIRED &&
      o->standby_mode != LC_STANDBY_PREFERRED)
    return lc__fail(LC_EINVAL, "unknown standby mode %d", o->standby_mode);
  if (o->standby_timeout_ms < 0)
    return lc__fail(LC_EINVAL, "negative standby timeout");
  if ((rc = check_credentials(o, remote)) != 0 ||
      (rc = check_tls(o, remote)) != 0)
    return rc;
  lc_t *h = calloc(1, sizeof *h);
  if (h == NULL) return lc__fail(LC_ENOMEM, "cannot allocate the handle");
  pthread_mutex_init(&h->promote_mu, NULL);
  static atomic_uint_fast64_t uids;
  h->uid = atomic_fetch_add(&uids, 1) + 1; /* 0: an empty cache slot */
  bool failed = false;
  h->opt = *o;
  h->memcached =
      dup_or_null(o->memcached ? o->memcached : DEFAULT_MEMCACHED, &failed);
  h->db_path = dup_or_null(o->db_path, &failed);
  h->owner = dup_or_null(o->owner ? o->owner : "liblogcounter", &failed);
  h->server = remote ? dup_or_null(o->server, &failed) : NULL;
  h->repl_secret = o->replication_secret && o->replication_secret[0]
                       ? dup_or_null(o->replication_secret, &failed)
                       : NULL;
  if (failed) {
    free_handle(h);
    return lc__fail(LC_ENOMEM, "cannot copy the options");
  }
  h->opt.memcached = h->memcached;
  h->opt.db_path = h->db_path;
  h->opt.owner = h->owner;
  h->opt.server = h->server;
  h->opt.replication_secret = h->repl_secret;
  h->remote = remote;
  atomic_store(&h->standby, standby);
  if (h->opt.timeout_ms == 0) h->opt.timeout_ms = 1000;
  if (h->opt.reserve == 0) h->opt.reserve = 1000;
  if (h->opt.pool_size == 0) h->opt.pool_size = 16;

  if (h->opt.max_counters == 0) h->opt.max_counters = LC_MAX_COUNTERS_DEFAULT;
  if (h->opt.max_tallies == 0) h->opt.max_tallies = LC_MAX_TALLIES_DEFAULT;
  lc__counter_table_init(&h->counters);
  h->counters.names.max = h->opt.max_counters;
  lc__tally_table_init(&h->tallies);
  h->tallies.names.max = h->opt.max_tallies;
  rc = remote ? open_remote(h)
                  : lc__cache_open(&h->cache, h->memcached, h->opt.timeout_ms,
                                   h->opt.pool_size);
  if (!rc && !remote && lc__repl_tls_on(&h->opt) &&
      (rc = lc__ssl_ctx(&h->opt, true, &h->repl_tls[0])) == 0)
    rc = lc__ssl_ctx(&h->opt, false, &h->repl_tls[1]); /* replication */
  h->opt.user = h->opt.password = NULL; /* copied into the caches */
  h->opt.tls_ca = h->opt.tls_cert = h->opt.tls_key = NULL; /* read */
  if (!rc && !remote) {
    rc = lc__log_open(&h->log, h->db_path, h->opt.lock_wait_ms, h->owner);
    if (!rc && ((rc = lc__log_identity(&h->log, h->log_id)) != 0 ||
                (rc = lc__backup_restored_load(h)) != 0 ||
                (!standby && ((rc = lc__follow_copy_check(h)) != 0 ||
                              (rc = lc__backup_identity(h)) != 0))))
      lc__log_close(&h->log);
    if (!rc) {
      atomic_store(&h->log.standby, standby); /* the follower writes */
      memcpy(h->log.id, h->log_id, sizeof h->log.id);
      lc__claim_text(h);
      lc__recover_init(h);
    }
  }
  /* what started, for the unwinding: 1 the log (and the prefetcher,
   * whose stop is safe unstarted), 2 retention, 3 replication or
   * following (each stop is safe after its own failed start) */
  int started = rc || remote ? 0 : 1;
  if (started && h->opt.prefetch) rc = lc__prefetcher_start(h);
  h->ev.on = started && h->opt.idle_evict_ms > 0;
  h->ev.tally_scan = lc__tally_evict_scan; /* the tallies' part of a pass */
  h->ev.tally_evict = lc__tally_evict_run;
  if (started && !rc) rc = lc__evict_start(h);
  if (started && !rc) {
    started = 2;
    rc = lc__retain_start(h);
  }
  if (started == 2 && !rc) {
    started = 3;
    rc = standby ? lc__follow_start(h) : lc__repl_start(h);
  }
  if (started == 3 && !rc && h->opt.admin_socket && h->opt.admin_socket[0])
    rc = lc__admin_srv_start(h);
  if (rc) { /* the log is closed already when its open failed */
    unwind(h, started);
    lc__counter_table_close(&h->counters, &h->log, &h->cache);
    lc__tally_table_close(&h->tallies);
    lc__remote_pools_close(h);
    free_handle(h);
    return rc;
  }
  *out = h;
  return 0;
}

int lc_close(lc_t *h) {
  if (h == NULL) return 0;
  lc__detail_clear();
  lc__admin_srv_stop(h); /* first: its calls use everything below */
  lc__follow_free(h); /* a standby's writer */
  if (!h->remote) lc__retain_stop(h); /* it uses the log and the table */
  lc__evict_stop(h);
  lc__prefetcher_stop(h);
  if (!h->remote) {
    /* a failed log gets one more reopen, so that the exact reservations
     * below can be written; if it fails they are not, which is safe */
    if (atomic_load(&h->log.state) == LC__LOG_FAILED) lc__recover(h);
    lc__recover_stop(h);
  }
  int rc = lc__counter_table_close(&h->counters, &h->log, &h->cache);
  if (!h->remote) lc__tally_table_carry(h);
  lc__tally_table_close(&h->tallies);
  lc__repl_stop(h); /* after the last writes: the standby gets them */
  if (!h->remote) lc__log_close(&h->log);
  lc__remote_pools_close(h);
  free_handle(h);
  return rc;
}

int lc_get_stats(lc_t *h, lc_stats *s) {
  if (h == NULL || s == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  s->allocations = s->ids = 0;
  for (int i = 0; i < LC__STRIPES; i++) {
    s->allocations += atomic_load_explicit(&h->calls[i].allocations,
                                           memory_order_relaxed);
    s->ids += atomic_load_explicit(&h->calls[i].ids, memory_order_relaxed);
  }
#define LC__LOAD(f) s->f = atomic_load_explicit(&h->st.f, memory_order_relaxed)
  LC__LOAD(increments);
  LC__LOAD(restores);
  LC__LOAD(backwards);
  LC__LOAD(log_writes);
  LC__LOAD(log_syncs);
  LC__LOAD(errors);
  LC__LOAD(segments);
  LC__LOAD(segment_waits);
  LC__LOAD(tally_adds);
  LC__LOAD(tally_flushes);
  LC__LOAD(tally_schedules);
  LC__LOAD(tally_schedule_failures);
  LC__LOAD(tally_losses);
  LC__LOAD(tally_seeds);
  LC__LOAD(tally_lost_amount);
#undef LC__LOAD
  pthread_mutex_lock(&h->counters.mu);
  s->counters = h->counters.names.count;
  pthread_mutex_unlock(&h->counters.mu);
  s->evictions = atomic_load_explicit(&h->ev.evictions, memory_order_relaxed);
  s->eviction_skips = atomic_load_explicit(&h->ev.skips, memory_order_relaxed);
  s->tally_evictions =
      atomic_load_explicit(&h->ev.tally_evictions, memory_order_relaxed);
  pthread_mutex_lock(&h->tallies.mu);
  s->tallies = h->tallies.names.count;
  pthread_mutex_unlock(&h->tallies.mu);
  return 0;
}

int lc_get_latency(lc_t *h, lc_latency *out) {
  if (h == NULL || out == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  lc__lat_snapshot(&h->lat[LC__LAT_RESERVATION], &out->reservation);
  lc__lat_snapshot(&h->lat[LC__LAT_SEGMENT], &out->segment);
  return 0;
}
