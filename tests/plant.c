/*
 * plant.c - tu_plant (plant.h): records written straight into a closed
 * log with the library's own encoders.
 */
#include "plant.h"

#include "internal.h"

#include <string.h>

int tu_plant(const char *path, const char *name, int64_t from, int64_t to,
             int64_t time_us, int64_t reservation, char **err) {
  *err = NULL;
  leveldb_options_t *lo = leveldb_options_create();
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  leveldb_t *db = leveldb_open(lo, path, err);
  if (*err) {
    leveldb_writeoptions_destroy(wo);
    leveldb_options_destroy(lo);
    return -1;
  }
  char key[LC_NAME_MAX + 10];
  size_t plen = lc__key_record_prefix(key, name, strlen(name));
  unsigned char val[LC__RECORD_LEN];
  lc__key_record_encode(val, 1, time_us);
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  for (int64_t i = from; i <= to && !*err; i++) {
    lc__key_be64_put((unsigned char *)key + plen, (uint64_t)i);
    leveldb_writebatch_put(b, key, plen + 8, (const char *)val, sizeof val);
    if ((i - from) % 10000 == 9999) {
      leveldb_write(db, wo, b, err);
      leveldb_writebatch_clear(b);
    }
  }
  if (!*err && reservation > 0)
    lc__log_batch_reservation(b, name, strlen(name), reservation);
  if (!*err) {
    leveldb_writeoptions_set_sync(wo, 1);
    leveldb_write(db, wo, b, err);
  }
  leveldb_writebatch_destroy(b);
  leveldb_close(db);
  leveldb_writeoptions_destroy(wo);
  leveldb_options_destroy(lo);
  return *err ? -1 : 0;
}
