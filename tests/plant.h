/*
 * plant.h - writing records straight into a closed log, exactly as the
 * library encodes them, for the tests and tools that need many records
 * (one lc_next per record would spend minutes on memcached round trips).
 */
#ifndef LC_TESTS_PLANT_H
#define LC_TESTS_PLANT_H

#include <stdint.h>

/* Records [from, to] of counter name (one value each, time time_us), in
 * batches of 10,000, and when reservation > 0 the reservation, into the
 * LevelDB log at path (closed; made by the library before).  0, or -1
 * with LevelDB's reason in *err (free it with leveldb_free). */
int tu_plant(const char *path, const char *name, int64_t from, int64_t to,
             int64_t time_us, int64_t reservation, char **err);

#endif
