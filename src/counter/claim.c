/*
 * claim.c - one owning log per counter, enforced.
 *
 * Each log has a random identity, made when the log is created and kept
 * under LC__ID_KEY.  Before a handle first increments, seeds, restores or
 * raises a counter, and again before it seeds the counter after memcached
 * lost it, it claims the counter: memcached `add` of "lo:" NAME, holding
 * "ID HOST PID", on the server of the counter's own key ("lc:" NAME, the
 * _by_key master).  The claim is never given an expiry.
 *
 *   - stored, or already holding this log's ID: the counter is this
 *     log's;
 *   - holding the ID of the log a restored log was copied from (backup.c:
 *     the copy took a new identity): LC_EOWNED as below, saying so, but
 *     lc_adopt (takeover) deletes that claim and adds this log's;
 *   - holding another ID: LC_EOWNED, naming that log, its host and pid.
 *     The refusal is also written (synced) to this log, under 'o' NAME
 *     ('R' and the claim's text), so the counter stays refused after a
 *     memcached loss wipes the claim, until lc_adopt.  lc_release writes
 *     the same key, marked released ('X' and the final value).
 *
 * What this cannot catch (memcached is not durable): a claim evicted or
 * lost with memcached lets a brand-new log, whose first use of the name
 * comes next, claim the counter; the real owner's next claim (at its next
 * seed or restart) then fails loudly with LC_EOWNED, but ids the intruder
 * handed out meanwhile may repeat the owner's.
 */
#include "counter/counter.h"
#include "handle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLAIM_PREFIX "lo:"
#define REFUSED 'R'
#define RELEASED 'X'
#define CLAIM_MAX 120 /* bytes of a claim's text kept */

void lc__claim_text(lc_t *h) {
  char host[64] = "?";
  if (gethostname(host, sizeof host) != 0) strcpy(host, "?");
  host[sizeof host - 1] = '\0';
  for (char *p = host; *p; p++)
    if (*p <= ' ' || *p > '~') *p = '?';
  snprintf(h->claim, sizeof h->claim, "%s %s %ld", h->log_id, host,
           (long)getpid());
}

/* The claim text that refused c (n bytes of text), kept on the heap: most
 * counters never need it. */
static int set_refused_by(lc__counter *c, const char *text, size_t n) {
  char *t = malloc(n + 1);
  if (t == NULL) return lc__fail(LC_ENOMEM, "cannot keep the claim text");
  memcpy(t, text, n);
  t[n] = '\0';
  free(c->refused_by);
  c->refused_by = t;
  return 0;
}

/* claimed is read under mu by lc_next_n's callers. */
static void set_claimed(lc__counter *c, bool claimed) {
  lc__counter_lock(c);
  c->claimed = claimed;
  lc__counter_unlock(c);
}

size_t lc__claim_key(char *buf, const lc__counter *c) {
  memcpy(buf, CLAIM_PREFIX, sizeof CLAIM_PREFIX - 1);
  memcpy(buf + sizeof CLAIM_PREFIX - 1, lc__counter_name(c), c->nlen);
  return sizeof CLAIM_PREFIX - 1 + c->nlen;
}

bool lc__claim_ours(const lc_t *h, const char *held) {
  return strncmp(held, h->log_id, LC__ID_LEN) == 0 &&
         (held[LC__ID_LEN] == ' ' || held[LC__ID_LEN] == '\0');
}

void lc__claim_mark(lc__counter *c) {
  set_claimed(c, true);
}

static size_t refusal_key(char *buf, const char *name, size_t nlen) {
  buf[0] = 'o';
  memcpy(buf + 1, name, nlen);
  return nlen + 1;
}

/* "log ID (host HOST, pid PID)" from a claim's text. */
static void describe(const char *claim, char *out, size_t size) {
  char id[LC__ID_LEN + 1] = "?", host[64] = "?";
  long pid = 0;
  if (sscanf(claim, "%16s %63s %ld", id, host, &pid) == 3)
    snprintf(out, size, "log %s (host %s, pid %ld)", id, host, pid);
  else
    snprintf(out, size, "log '%.40s'", claim);
}

int lc__claim_load(lc_t *h, lc__counter *c) {
  char key[LC_NAME_MAX + 2];
  size_t klen = refusal_key(key, lc__counter_name(c), c->nlen);
  char *v;
  size_t vlen;
  int rc = lc__log_get(&h->log, key, klen, &v, &vlen, "claim");
  if (rc) return rc;
  if (v == NULL) { /* none (a reread: an adopt's deletion landed) */
    atomic_store(&c->refusal, 0);
    free(c->refused_by);
    c->refused_by = NULL;
    return 0;
  }
  if (vlen >= 1 && (v[0] == REFUSED || v[0] == RELEASED)) {
    rc = set_refused_by(c, v + 1, vlen - 1 < CLAIM_MAX ? vlen - 1 : CLAIM_MAX);
    if (!rc)
      atomic_store(&c->refusal, v[0] == REFUSED ? LC__REFUSED : LC__RELEASED);
  }
  leveldb_free(v);
  return rc;
}

int lc__claim_reread(lc_t *h, lc__counter *c) {
  int64_t res = 0;
  bool pending = false;
  int rc = lc__log_get_reservation(&h->log, lc__counter_name(c), c->nlen, &res);
  if (!rc)
    rc = lc__backup_pending_load(h, lc__counter_name(c), c->nlen, &pending);
  if (!rc) rc = lc__claim_load(h, c);
  if (rc) return rc;
  lc__counter_lock(c);
  c->pending = pending;
  if (res > c->reserved) c->reserved = res;
  if (res > c->floor) c->floor = res;
  lc__counter_unlock(c);
  atomic_store(&c->unknown, false);
  return 0;
}

int lc__claim_unknown(lc__counter *c, int rc, const char *what) {
  atomic_store(&c->unknown, true);
  char why[LC__DETAIL_MAX];
  snprintf(why, sizeof why, "%s", lc_last_detail());
  return lc__fail(rc,
                  "counter %s: the %s's log write failed and may still have "
                  "reached the log (the outcome is unknown; it takes effect "
                  "if it did): the counter's ownership is reread from the "
                  "log before its next use, and the same call again is "
                  "safe: %s",
                  lc__counter_name(c), what, why);
}

/* Whether a claim's text is the log this restored log was copied from. */
static bool the_original(const lc_t *h, const char *held) {
  return h->restored_from[0] != '\0' &&
         strncmp(held, h->restored_from, LC__ID_LEN) == 0 &&
         (held[LC__ID_LEN] == ' ' || held[LC__ID_LEN] == '\0');
}

int lc__claim_refused(const lc_t *h, const lc__counter *c) {
  int r = atomic_load(&c->refusal);
  if (r == LC__RELEASED)
    return lc__fail(LC_EOWNED,
                    "counter %s was released from this log "
                    "(logcounter adopt takes it back)",
                    lc__counter_name(c));
  char who[160];
  describe(c->refused_by ? c->refused_by : "", who, sizeof who);
  if (c->refused_by && the_original(h, c->refused_by))
    return lc__fail(LC_EOWNED,
                    "counter %s is claimed by %s, the original this "
                    "restored log was copied from: the two must never both "
                    "allocate it; stop the original, then 'logcounter "
                    "adopt %s' takes it over",
                    lc__counter_name(c), who, lc__counter_name(c));
  return lc__fail(LC_EOWNED,
                  "counter %s is owned by %s; this log refuses "
                  "it until 'logcounter adopt'",
                  lc__counter_name(c), who);
}

/* Writes the refusal or release of c to the log (synced), with the
 * reservation too when reservation > 0. */
static int put_refusal(lc_t *h, lc__counter *c, char kind, const char *text,
                       int64_t reservation) {
  char key[LC_NAME_MAX + 2], val[1 + CLAIM_MAX];
  size_t klen = refusal_key(key, lc__counter_name(c), c->nlen);
  size_t tlen = strlen(text);
  if (tlen > CLAIM_MAX) tlen = CLAIM_MAX;
  val[0] = kind;
  memcpy(val + 1, text, tlen);
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  leveldb_writebatch_put(b, key, klen, val, tlen + 1);
  if (reservation > 0)
    lc__log_batch_reservation(b, lc__counter_name(c), c->nlen, reservation);
  int rc = lc__log_write(&h->log, b, true);
  leveldb_writebatch_destroy(b);
  LC__STAT(h, log_syncs, 1);
  if (rc)
    return lc__claim_unknown(c, rc, kind == REFUSED ? "refusal" : "release");
  rc = set_refused_by(c, text, tlen);
  if (!rc)
    atomic_store(&c->refusal, kind == REFUSED ? LC__REFUSED : LC__RELEASED);
  return rc;
}

/* ---- the burned note: "lb:" NAME, "ID FIRST-LAST ...": the counter's
 * pending burned gaps, set after a log write failed (so that a run that
 * dies before it can write them, or closes with the log still failed,
 * leaves them where the next run of this log finds them) ---- */

#define NOTE_PREFIX "lb:"
#define NOTE_MAX (LC__ID_LEN + LC__GAPS * 42 + 1)

static size_t note_key(char *buf, const lc__counter *c) {
  memcpy(buf, NOTE_PREFIX, sizeof NOTE_PREFIX - 1);
  memcpy(buf + sizeof NOTE_PREFIX - 1, lc__counter_name(c), c->nlen);
  return sizeof NOTE_PREFIX - 1 + c->nlen;
}

void lc__claim_note_burned(lc_t *h, lc__counter *c) {
  char why[LC__DETAIL_MAX], key[LC_NAME_MAX + 8];
  size_t klen = note_key(key, c);
  lc__counter_lock(c);
  if (c->noting) { /* the thread at it sets it again, with ours */
    c->note_again = true;
    lc__counter_unlock(c);
    return;
  }
  c->noting = true; /* one at a time: the last set holds the latest */
  snprintf(why, sizeof why, "%s", lc_last_detail()); /* the caller's */
  do {
    c->note_again = false;
    lc__span s[LC__GAPS];
    int n = c->ngaps ? lc__ledger_burned_pending(c, s) : 0;
    lc__counter_unlock(c);
    char text[NOTE_MAX];
    size_t len = (size_t)snprintf(text, sizeof text, "%s", h->log_id);
    for (int i = 0; i < n && len < sizeof text; i++)
      len += (size_t)snprintf(text + len, sizeof text - len, " %lld-%lld",
                              (long long)s[i].first, (long long)s[i].last);
    if (n > 0 && len < sizeof text) /* best effort: without it, as before */
      lc__cache_set_text(&h->cache, c->key, c->klen, key, klen, text, len);
    lc__counter_lock(c);
  } while (c->note_again);
  c->noting = false;
  lc__counter_unlock(c);
  lc__detail_set(why);
}

size_t lc__claim_note_key(char *buf, const lc__counter *c) {
  return note_key(buf, c);
}

void lc__claim_note_read(lc_t *h, lc__counter *c, const char *text,
                         bool cut) {
  if (strncmp(text, h->log_id, LC__ID_LEN) != 0) return; /* not ours */
  lc__counter_lock(c);
  for (const char *p = text + LC__ID_LEN; *p == ' ';) {
    char *end;
    long long first = strtoll(p + 1, &end, 10);
    if (*end != '-') break;
    long long last = strtoll(end + 1, &end, 10);
    if ((*end != ' ' && (*end != '\0' || cut)) || first < 1 ||
        last < first || last > LC_VALUE_MAX)
      break; /* the last range of a cut text is not read */
    lc__ledger_known_burned(c, first, last);
    if (last > c->floor) c->floor = last; /* burned: never handed out */
    p = end;
  }
  lc__counter_unlock(c);
}

/* The note of this log's last run, if any: its ranges known burned. */
static void read_note(lc_t *h, lc__counter *c) {
  char text[NOTE_MAX], key[LC_NAME_MAX + 8];
  int rc = lc__cache_get_text(&h->cache, c->key, c->klen, key, note_key(key, c),
                              text, sizeof text);
  lc__detail_clear();
  if (rc == 0) lc__claim_note_read(h, c, text, strlen(text) == NOTE_MAX - 1);
}

int lc__claim(lc_t *h, lc__counter *c, bool takeover) {
  if (atomic_load(&c->refusal)) return lc__claim_refused(h, c);
  char key[LC_NAME_MAX + 8], held[CLAIM_MAX + 1];
  size_t klen = lc__claim_key(key, c);
  for (int attempt = 0; attempt < 3; attempt++) {
    int rc = lc__cache_add_text(&h->cache, c->key, c->klen, key, klen, h->claim,
                                strlen(h->claim), 0);
    if (rc == 0) {
      set_claimed(c, true);
      return 0;
    }
    if (rc != LC__EXISTS) return rc;
    rc = lc__cache_get_text(&h->cache, c->key, c->klen, key, klen, held,
                            sizeof held);
    if (rc == LC__MISS) continue; /* released meanwhile: again */
    if (rc) return rc;
    if (lc__claim_ours(h, held)) {
      read_note(h, c); /* ours (an earlier process): what it burned */
      set_claimed(c, true);
      return 0;
    }
    if (takeover && the_original(h, held)) { /* lc_adopt in a restored log */
      rc = lc__cache_delete(&h->cache, c->key, c->klen, key, klen);
      if (rc < 0) return rc;
      continue; /* add ours */
    }
    set_claimed(c, false); /* waiting calls fail too */
    rc = put_refusal(h, c, REFUSED, held, 0);
    return rc ? rc : lc__claim_refused(h, c);
  }
  return lc__fail(LC_EAGAIN, "the claim of %s kept changing",
                  lc__counter_name(c));
}

int lc__claim_drop(lc_t *h, lc__counter *c) {
  char key[LC_NAME_MAX + 8], held[CLAIM_MAX + 1];
  size_t klen = lc__claim_key(key, c);
  int rc = lc__cache_get_text(&h->cache, c->key, c->klen, key, klen, held,
                              sizeof held);
  if (rc == LC__MISS) return 0;
  if (rc) return rc;
  if (strncmp(held, h->log_id, LC__ID_LEN) != 0) return 0; /* not ours */
  rc = lc__cache_delete(&h->cache, c->key, c->klen, key, klen);
  return rc < 0 ? rc : 0;
}

int lc__claim_release(lc_t *h, lc__counter *c, int64_t final) {
  set_claimed(c, false); /* calls waiting on c fail from now on */
  char text[24];
  snprintf(text, sizeof text, "%lld", (long long) final);
  int rc = put_refusal(h, c, RELEASED, text, final); /* exact, as close */
  if (rc) return rc;
  lc__counter_lock(c);
  c->reserved = final;
  if (final > c->floor) c->floor = final;
  lc__counter_unlock(c);
  return lc__claim_drop(h, c);
}

int64_t lc__claim_final(const lc__counter *c) {
  return c->refused_by ? strtoll(c->refused_by, NULL, 10) : 0;
}

void lc__claim_forget_batch(leveldb_writebatch_t *b, const lc__counter *c,
                            int64_t reservation, bool reconcile) {
  char key[LC_NAME_MAX + 2];
  size_t klen = refusal_key(key, lc__counter_name(c), c->nlen);
  leveldb_writebatch_delete(b, key, klen);
  /* a pending counter (backup.c) is reconciled by this write: the
   * operator vouches that no id above `reservation` went out */
  if (reconcile)
    lc__backup_reconciled(b, lc__counter_name(c), c->nlen, reservation);
}

void lc__claim_forgotten(lc__counter *c, bool reconciled) {
  if (reconciled && c->pending) {
    lc__counter_lock(c);
    c->pending = false;
    lc__counter_unlock(c);
  }
  atomic_store(&c->refusal, 0);
  free(c->refused_by);
  c->refused_by = NULL;
}
