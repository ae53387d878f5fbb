/*
 * identity.c - the log's identity: 16 random hex digits under
 * LC__ID_KEY, made and synced at a new log's first open and read at every
 * later one (claims, replication and restores compare it); a restored
 * backup takes a new one at its first open (backup.c), so that the copy
 * and its original never pass for each other in memcached's claims.
 */
#include "log/log.h"

#include <stdio.h>
#include <string.h>

/* 16 random hex digits. */
static void random_id(char id[LC__ID_LEN + 1]) {
  snprintf(id, LC__ID_LEN + 1, "%016llx", (unsigned long long)lc__random64());
}

int lc__log_identity(lc__log *l, char id[LC__ID_LEN + 1]) {
  char *err = NULL;
  size_t vlen = 0;
  const char *k = LC__ID_KEY;
  char *v = leveldb_get(l->db, l->read, k, strlen(k), &vlen, &err);
  if (err) {
    int rc = lc__fail(LC_ELOG, "read the log's identity: %s", err);
    leveldb_free(err);
    return rc;
  }
  if (v != NULL) {
    bool ok = vlen == LC__ID_LEN;
    if (ok) {
      memcpy(id, v, LC__ID_LEN);
      id[LC__ID_LEN] = '\0';
    }
    leveldb_free(v);
    return ok ? 0
              : lc__fail(LC_ECORRUPT, "the log's identity has %zu bytes", vlen);
  }
  return lc__log_identity_renew(l, id);
}

int lc__log_identity_renew(lc__log *l, char id[LC__ID_LEN + 1]) {
  char *err = NULL;
  const char *k = LC__ID_KEY;
  char fresh[LC__ID_LEN + 1];
  random_id(fresh);
  leveldb_put(l->db, l->sync, k, strlen(k), fresh, LC__ID_LEN, &err);
  if (err) {
    int rc = lc__fail(LC_ELOG, "write the log's identity: %s", err);
    leveldb_free(err);
    return rc;
  }
  memcpy(id, fresh, sizeof fresh);
  return 0;
}
