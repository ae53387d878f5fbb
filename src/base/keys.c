/*
 * keys.c - counter names and how they become keys.
 *
 * A counter NAME is 1..LC_NAME_MAX bytes of printable ASCII without space,
 * so that "lc:" NAME is always a valid memcached key (at most 250 bytes, no
 * whitespace or control characters) and never contains '\0'.
 *
 * In LevelDB, a counter's records sit under the prefix 'r' NAME '\0',
 * followed by the block's last value as 8 big-endian bytes: keys sort
 * bytewise, so a counter's records are contiguous and in value order, and
 * the newest is found by one reverse seek.  Because NAME has no '\0', one
 * name's prefix is never a prefix of another's.  The reservation is under
 * 'v' NAME.  Record values: version byte (what the record is: a block, an
 * open or a finished prefetched segment, LC_RECORD_*), count, time.
 */
#include "base/base.h"

#include <string.h>
#include <time.h>

int lc_check_name(const char *name) {
  if (name == NULL) return LC_EINVAL;
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)name; *p; p++, n++) {
    if (*p < 0x21 || *p > 0x7e || n >= LC_NAME_MAX) return LC_ENAME;
  }
  return n == 0 ? LC_ENAME : 0;
}

void lc__key_be64_put(unsigned char *p, uint64_t v) {
  for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (unsigned char)(v & 0xff);
}

uint64_t lc__key_be64_get(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
  return v;
}

size_t lc__key_record_prefix(char *buf, const char *name, size_t nlen) {
  buf[0] = 'r';
  memcpy(buf + 1, name, nlen);
  buf[nlen + 1] = '\0';
  return nlen + 2;
}

size_t lc__key_reservation(char *buf, const char *name, size_t nlen) {
  buf[0] = 'v';
  memcpy(buf + 1, name, nlen);
  return nlen + 1;
}

void lc__key_record_encode(unsigned char out[LC__RECORD_LEN], uint64_t count,
                       int64_t time_us) {
  out[0] = LC__RECORD_VERSION;
  lc__key_be64_put(out + 1, count);
  lc__key_be64_put(out + 9, (uint64_t)time_us);
}

int64_t lc__key_last(const char *key, size_t klen, size_t plen) {
  if (klen != plen + 8) return 0;
  uint64_t last = lc__key_be64_get((const unsigned char *)key + plen);
  return last > (uint64_t)LC_VALUE_MAX ? 0 : (int64_t)last;
}

int lc__key_record_decode(const char *key, size_t klen, size_t plen,
                      const char *val, size_t vlen, lc_record *rec) {
  memset(rec, 0, sizeof *rec);
  int64_t last = lc__key_last(key, klen, plen);
  if (last == 0)
    return lc__fail(LC_ECORRUPT, "record key of %zu bytes or out of range",
                    klen);
  rec->last = last;
  const unsigned char *v = (const unsigned char *)val;
  if (vlen < 1 || v[0] < LC_RECORD_BLOCK || v[0] > LC_RECORD_SEGMENT)
    return lc__fail(LC_ECORRUPT, "record %lld: unknown format version %d",
                    (long long)last, vlen ? v[0] : -1);
  if (vlen != LC__RECORD_LEN)
    return lc__fail(LC_ECORRUPT, "record %lld: %zu bytes, expected %d",
                    (long long)last, vlen, LC__RECORD_LEN);
  uint64_t count = lc__key_be64_get(v + 1);
  if (count == 0 || count > (uint64_t)last)
    return lc__fail(LC_ECORRUPT, "record %lld: bad count %llu", (long long)last,
                    (unsigned long long)count);
  rec->count = count;
  rec->first = (int64_t)(last - count + 1);
  rec->time_us = (int64_t)lc__key_be64_get(v + 9);
  rec->version = v[0];
  return 0;
}

/* The ledger (counter/ledger.c writes it). */
size_t lc__key_ledger_prefix(char *buf, const char *name, size_t nlen) {
  buf[0] = 'g';
  memcpy(buf + 1, name, nlen);
  buf[nlen + 1] = '\0';
  return nlen + 2;
}

int lc__key_ledger_decode(const char *key, size_t klen, size_t plen,
                      const char *val, size_t vlen, lc_gap *g) {
  memset(g, 0, sizeof *g);
  int64_t last = lc__key_last(key, klen, plen);
  if (last == 0)
    return lc__fail(LC_ECORRUPT, "ledger key of %zu bytes or out of range",
                    klen);
  g->last = last;
  const unsigned char *v = (const unsigned char *)val;
  if (vlen < LC__LEDGER_HEAD || vlen > LC__LEDGER_HEAD + LC_REASON_MAX ||
      v[0] != LC__LEDGER_VERSION)
    return lc__fail(LC_ECORRUPT, "ledger entry %lld: %zu bytes, version %d",
                    (long long)last, vlen, vlen ? v[0] : -1);
  uint64_t count = lc__key_be64_get(v + 2);
  if (count == 0 || count > (uint64_t)last || v[1] < LC_GAP_BURNED ||
      v[1] > LC_GAP_CAUSE_MAX)
    return lc__fail(LC_ECORRUPT, "ledger entry %lld: count %llu, cause %d",
                    (long long)last, (unsigned long long)count, v[1]);
  g->first = (int64_t)(last - count + 1);
  g->cause = v[1];
  g->time_us = (int64_t)lc__key_be64_get(v + 10);
  memcpy(g->reason, v + LC__LEDGER_HEAD, vlen - LC__LEDGER_HEAD);
  g->reason[vlen - LC__LEDGER_HEAD] = '\0';
  return 0;
}
