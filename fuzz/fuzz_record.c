/*
 * fuzz_record.c - libFuzzer target: the decoders of what logcounter reads
 * back from its LevelDB log (src/base/keys.c, src/tally/tally_rec.c): a counter's
 * record (key 'r' NAME '\0' be64(last), value version|count|time) and a
 * tally's record (33 bytes of version 1: version, total, applied+,
 * applied-, losses; 65 of version 2: then lost+, lost-, carry+, carry-).
 *
 * Input: byte 0 is the key length k, byte 1 the prefix length p (both
 * reduced to fit), then k bytes of key, the rest is the value.  Key and
 * value are exact-size heap copies, so a read past either is caught.
 *
 * Properties checked:
 *  - lc__key_record_decode accepts exactly a key of p + 8 bytes whose value is
 *    1..LC_VALUE_MAX and a 17-byte value of version 1..3 (a block, an
 *    open or a finished segment) whose count is 1..last, and then
 *    first = last - count + 1 >= 1, the version as given;
 *    re-encoding count and time gives the value bytes back;
 *  - a refusal is LC_ECORRUPT with a detail text;
 *  - lc__tally_decode accepts exactly 33 bytes starting with version 1 or
 *    65 starting with version 2 and returns the big-endian total and
 *    losses at their offsets, also when asked for only one of them;
 *  - lc__tally_rec_read (the tally's read path: LevelDB's own copy of the
 *    value, which is exactly vlen bytes) takes the record if and only if
 *    it decodes, with every field from its offset, and otherwise leaves
 *    the tally zeroed; the value is stored in a scratch LevelDB made in
 *    $TMPDIR (or /tmp) and removed at exit;
 *  - through the same scratch LevelDB, the log's readers agree with the
 *    decoders: the record iterator (dump, verify) returns the record or
 *    LC_ECORRUPT, the reverse seek (restore) finds the record's value or
 *    refuses one above LC_VALUE_MAX, and the reservation reader accepts
 *    exactly 9 bytes of version 1 with a value up to LC_VALUE_MAX;
 *  - the record and tally key builders round-trip the name and value.
 */
#include "fuzz.h"

#include "internal.h"
#include "tally/tally.h"

#include <stdbool.h>
#include <unistd.h>

/* The scratch log for lc__tally_rec_read: a handle with just a log. */
static struct lc *scratch;
static lc__tally *scratch_tally;
static char scratch_dir[256];

static void scratch_close(void) {
  if (!scratch) return;
  leveldb_close(scratch->log.db);
  char *err = NULL;
  leveldb_destroy_db(scratch->log.options, scratch_dir, &err);
  leveldb_free(err);
  rmdir(scratch_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *tmp = getenv("TMPDIR");
  snprintf(scratch_dir, sizeof scratch_dir, "%s/lc-fuzz-record-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  FUZZ_CHECK(mkdtemp(scratch_dir) != NULL);
  scratch = calloc(1, sizeof *scratch);
  FUZZ_CHECK(scratch != NULL);
  scratch->log.options = leveldb_options_create();
  leveldb_options_set_create_if_missing(scratch->log.options, 1);
  char *err = NULL;
  scratch->log.db = leveldb_open(scratch->log.options, scratch_dir, &err);
  FUZZ_CHECK(err == NULL && scratch->log.db != NULL);
  scratch->log.read = leveldb_readoptions_create();
  scratch->log.nosync = leveldb_writeoptions_create();
  scratch_tally = calloc(1, sizeof *scratch_tally + 2);
  FUZZ_CHECK(scratch_tally != NULL);
  pthread_mutex_init(&scratch_tally->mu, NULL);
  memcpy(scratch_tally->name, "t", 2);
  scratch_tally->nlen = 1;
  atexit(scratch_close);
  return 0;
}

/* The tally record rule: 33 bytes of version 1, or 65 of version 2. */
static bool tally_ok(const unsigned char *v, size_t vlen) {
  return (vlen == 33 && v[0] == 1) || (vlen == 65 && v[0] == 2);
}

static void check_tally_read(const char *val, size_t vlen) {
  if (!scratch || vlen > 64) return;
  char key[8], *err = NULL;
  size_t klen = lc__tally_rec_key(key, "t", 1);
  leveldb_put(scratch->log.db, scratch->log.nosync, key, klen, val, vlen, &err);
  FUZZ_CHECK(err == NULL);
  lc__tally *t = scratch_tally;
  t->total = 1;
  t->ap = t->am = t->losses = 1;
  t->lost_p = t->lost_m = t->carry_p = t->carry_m = 1;
  int rc = lc__tally_rec_read(scratch, t);
  const unsigned char *v = (const unsigned char *)val;
  FUZZ_CHECK((rc == 0) == tally_ok(v, vlen));
  FUZZ_CHECK(t->has_record == (rc == 0));
  if (rc == 0) {
    FUZZ_CHECK((uint64_t)t->total == lc__key_be64_get(v + 1));
    FUZZ_CHECK(t->ap == lc__key_be64_get(v + 9) && t->am == lc__key_be64_get(v + 17) &&
               t->losses == lc__key_be64_get(v + 25));
    bool v2 = vlen == 65;
    FUZZ_CHECK(t->lost_p == (v2 ? lc__key_be64_get(v + 33) : 0) &&
               t->lost_m == (v2 ? lc__key_be64_get(v + 41) : 0) &&
               t->carry_p == (v2 ? lc__key_be64_get(v + 49) : 0) &&
               t->carry_m == (v2 ? lc__key_be64_get(v + 57) : 0));
  } else {
    FUZZ_CHECK(t->total == 0 && t->ap == 0 && t->am == 0 && t->losses == 0 &&
               t->lost_p == 0 && t->lost_m == 0);
  }
}

static void check_record(const char *key, size_t klen, size_t plen,
                         const char *val, size_t vlen) {
  lc_record rec;
  int rc = lc__key_record_decode(key, klen, plen, val, vlen, &rec);
  const unsigned char *k = (const unsigned char *)key;
  const unsigned char *v = (const unsigned char *)val;
  uint64_t last = klen == plen + 8 ? lc__key_be64_get(k + plen) : 0;
  uint64_t count = vlen == LC__RECORD_LEN ? lc__key_be64_get(v + 1) : 0;
  int ok = klen == plen + 8 && last >= 1 && last <= (uint64_t)LC_VALUE_MAX &&
           vlen == LC__RECORD_LEN && v[0] >= LC_RECORD_BLOCK &&
           v[0] <= LC_RECORD_SEGMENT && count >= 1 && count <= last;
  FUZZ_CHECK((rc == 0) == ok);
  if (rc) {
    FUZZ_CHECK(rc == LC_ECORRUPT && lc_last_detail()[0] != '\0');
    return;
  }
  FUZZ_CHECK(rec.last == (int64_t)last && rec.count == count);
  FUZZ_CHECK(rec.first >= 1 && rec.first <= rec.last &&
             (uint64_t)(rec.last - rec.first) + 1 == rec.count);
  FUZZ_CHECK(rec.version == v[0]);
  unsigned char again[LC__RECORD_LEN];
  lc__key_record_encode(again, rec.count, rec.time_us);
  again[0] = (unsigned char)rec.version;
  FUZZ_CHECK(memcmp(again, val, LC__RECORD_LEN) == 0);
}

static void check_tally(const char *val, size_t vlen) {
  int64_t total = 0;
  uint64_t losses = 0;
  int rc = lc__tally_decode(val, vlen, &total, &losses);
  const unsigned char *v = (const unsigned char *)val;
  FUZZ_CHECK((rc == 0) == tally_ok(v, vlen));
  if (rc) {
    FUZZ_CHECK(rc == LC_ECORRUPT);
    return;
  }
  FUZZ_CHECK((uint64_t)total == lc__key_be64_get(v + 1));
  FUZZ_CHECK(losses == lc__key_be64_get(v + 25));
  int64_t t2 = 0;
  uint64_t l2 = 0;
  FUZZ_CHECK(lc__tally_decode(val, vlen, &t2, NULL) == 0 && t2 == total);
  FUZZ_CHECK(lc__tally_decode(val, vlen, NULL, &l2) == 0 && l2 == losses);
}

/* The log's own readers over a record 'r' "t" '\0' KEY -> val and a
 * reservation 'v' "t" -> val in the scratch LevelDB: the iterator (dump,
 * verify), the reverse seek for the largest value (restore) and the
 * reservation reader agree with the decoders.  Both keys are deleted
 * afterwards, so every input starts from an empty log. */
static void check_log_read(const char *key, size_t klen, const char *val,
                           size_t vlen) {
  if (!scratch || vlen > 64) return;
  char rkey[300], vkey[8], *err = NULL;
  size_t plen = lc__key_record_prefix(rkey, "t", 1);
  memcpy(rkey + plen, key, klen);
  size_t rlen = plen + klen, vklen = lc__key_reservation(vkey, "t", 1);
  leveldb_writeoptions_t *wo = scratch->log.nosync;
  leveldb_put(scratch->log.db, wo, rkey, rlen, val, vlen, &err);
  FUZZ_CHECK(err == NULL);
  leveldb_put(scratch->log.db, wo, vkey, vklen, val, vlen, &err);
  FUZZ_CHECK(err == NULL);

  lc_record want, got;
  int drc = lc__key_record_decode(rkey, rlen, plen, val, vlen, &want);
  lc_iter *it = NULL;
  FUZZ_CHECK(lc_iter_open(scratch, "t", &it) == 0);
  int rc = lc_iter_next(it, &got);
  FUZZ_CHECK(rc == (drc == 0 ? 1 : LC_ECORRUPT));
  if (rc == 1)
    FUZZ_CHECK(want.first == got.first && want.last == got.last &&
               want.count == got.count && want.time_us == got.time_us &&
               want.version == got.version);
  FUZZ_CHECK(lc_iter_next(it, &got) == 0); /* the only record */
  lc_iter_close(it);

  int64_t max = -1;
  uint64_t last = klen == 8 ? lc__key_be64_get((const unsigned char *)key) : 0;
  rc = lc__log_max(&scratch->log, "t", 1, &max);
  if (klen == 8 && last > (uint64_t)LC_VALUE_MAX)
    FUZZ_CHECK(rc == LC_ECORRUPT);
  else
    FUZZ_CHECK(rc == 0 && max == (int64_t)last);

  int64_t res = -1;
  const unsigned char *v = (const unsigned char *)val;
  uint64_t r = vlen == 9 ? lc__key_be64_get(v + 1) : 0;
  rc = lc__log_get_reservation(&scratch->log, "t", 1, &res);
  if (vlen == 9 && v[0] == LC__RECORD_VERSION && r <= (uint64_t)LC_VALUE_MAX)
    FUZZ_CHECK(rc == 0 && res == (int64_t)r);
  else
    FUZZ_CHECK(rc == LC_ECORRUPT);

  leveldb_delete(scratch->log.db, wo, rkey, rlen, &err);
  FUZZ_CHECK(err == NULL);
  leveldb_delete(scratch->log.db, wo, vkey, vklen, &err);
  FUZZ_CHECK(err == NULL);
  /* Deletions leave tombstones that every seek would step over: drop
   * them now and then. */
  static unsigned inputs;
  if (++inputs % 32 == 0)
    leveldb_compact_range(scratch->log.db, NULL, 0, NULL, 0);
}

/* The key builders: a name (the key bytes, if it is one) and a value. */
static void check_keys(const char *key, size_t klen, const char *val,
                       size_t vlen) {
  char name[LC_NAME_MAX + 1];
  if (klen == 0 || klen > LC_NAME_MAX) return;
  memcpy(name, key, klen);
  name[klen] = '\0';
  if (lc_check_name(name) != 0) return;
  uint64_t value = vlen >= 8 ? lc__key_be64_get((const unsigned char *)val) : 1;
  char buf[LC_NAME_MAX + 10];
  size_t plen = lc__key_record_prefix(buf, name, klen);
  FUZZ_CHECK(plen == klen + 2 && buf[0] == 'r' && buf[plen - 1] == '\0' &&
             memcmp(buf + 1, name, klen) == 0);
  lc__key_be64_put((unsigned char *)buf + plen, value);
  FUZZ_CHECK(lc__key_be64_get((unsigned char *)buf + plen) == value);
  size_t n = lc__key_reservation(buf, name, klen);
  FUZZ_CHECK(n == klen + 1 && buf[0] == 'v' && !memcmp(buf + 1, name, klen));
  n = lc__tally_rec_key(buf, name, klen);
  FUZZ_CHECK(n == klen + 1 && buf[0] == 't' && !memcmp(buf + 1, name, klen));
  n = lc__tally_idx_key(buf, (int64_t)value, name, klen);
  FUZZ_CHECK(n == klen + 9 && buf[0] == 'T' && !memcmp(buf + 9, name, klen));
  FUZZ_CHECK((lc__key_be64_get((unsigned char *)buf + 1) ^ 0x8000000000000000ULL) ==
             value);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  size_t rest = size - 2;
  size_t klen = data[0] <= rest ? data[0] : rest;
  size_t plen = data[1] <= klen ? data[1] : klen;
  size_t vlen = rest - klen;
  char *key = fuzz_dup(data + 2, klen, 0);
  char *val = fuzz_dup(data + 2 + klen, vlen, 0);
  check_record(key, klen, plen, val, vlen);
  check_tally(val, vlen);
  check_tally_read(val, vlen);
  check_log_read(key, klen, val, vlen);
  check_keys(key, klen, val, vlen);
  free(key);
  free(val);
  return 0;
}
