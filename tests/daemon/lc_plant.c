/*
 * lc_plant.c - writes many records into a closed log quickly, as the
 * library encodes them, for the admin suite's and bench's large dumps and
 * prunes (one lc_next per record would spend minutes on memcached round
 * trips).
 *
 *   lc_plant DIR NAME FIRST N
 *     Records of one id each, FIRST .. FIRST+N-1, for counter NAME in the
 *     log DIR (made by the library before: its format and identity keys),
 *     with the current time; then the reservation at the last.  Exit 0, or
 *     1 with the reason.
 */
#include "internal.h"

#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: lc_plant DIR NAME FIRST N\n");
    return 2;
  }
  const char *dir = argv[1], *name = argv[2];
  long long first = atoll(argv[3]), n = atoll(argv[4]);
  if (lc_check_name(name) || first < 1 || n < 1) {
    fprintf(stderr, "lc_plant: bad name, FIRST or N\n");
    return 2;
  }
  char *err = NULL;
  leveldb_options_t *lo = leveldb_options_create();
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  leveldb_t *db = leveldb_open(lo, dir, &err);
  if (err) {
    fprintf(stderr, "lc_plant: open %s: %s\n", dir, err);
    return 1;
  }
  char key[LC_NAME_MAX + 10];
  size_t plen = lc__record_prefix(key, name, strlen(name));
  unsigned char val[LC__RECORD_LEN];
  lc__record_encode(val, 1, lc__now_us());
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  for (long long i = 0; i < n && !err; i++) {
    lc__be64_put((unsigned char *)key + plen, (uint64_t)(first + i));
    leveldb_writebatch_put(b, key, plen + 8, (const char *)val, sizeof val);
    if ((i + 1) % 10000 == 0 || i + 1 == n) {
      leveldb_write(db, wo, b, &err);
      leveldb_writebatch_clear(b);
    }
  }
  if (!err) {
    lc__log_batch_reservation(b, name, strlen(name), first + n - 1);
    leveldb_writeoptions_set_sync(wo, 1);
    leveldb_write(db, wo, b, &err);
  }
  if (err) fprintf(stderr, "lc_plant: write: %s\n", err);
  leveldb_writebatch_destroy(b);
  leveldb_close(db);
  leveldb_writeoptions_destroy(wo);
  leveldb_options_destroy(lo);
  return err ? 1 : 0;
}
