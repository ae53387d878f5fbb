/*
 * fuzz_name.c - libFuzzer target: counter and tally name validation,
 * lc_check_name (src/base/keys.c: the library, the CLI and tallies use it),
 * lcd_proto_check_name and lcd_proto_tally_name (src/proto.c:
 * logcounterd's names and "tally:" keys, which arrive as bytes that are
 * not NUL-terminated).
 *
 * Properties checked:
 *  - both agree with a reference: 1..LC_NAME_MAX bytes, each 0x21..0x7e
 *    (lc_check_name sees the C string up to its first NUL;
 *    lcd_proto_check_name refuses a NUL anywhere), and refuse with
 *    LC_ENAME; lc_check_name(NULL) is LC_EINVAL;
 *  - logcounterd's tally keys: lcd_proto_tally_name recognizes exactly the
 *    keys that start with "tally:" and gives the rest as the name, which
 *    is checked like any other;
 *  - a valid name makes valid memcached keys ("lc:" NAME for counters,
 *    "lt+:", "lt-:", "lt@:" NAME for tallies, and the daemon's own
 *    "tally:" NAME): at most 250 bytes, no space, control character or
 *    DEL;
 *  - with two names in the input (split at the first '\n'), the LevelDB
 *    record prefix 'r' NAME '\0' of one is never a prefix of a record key
 *    of the other: a counter's records never mix with another's.
 */
#include "fuzz.h"

#include "internal.h"
#include "lcd_proto.h"
#include "tally/tally.h"

static int ref_valid(const unsigned char *s, size_t n) {
  if (n == 0 || n > LC_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] < 0x21 || s[i] > 0x7e) return 0;
  return 1;
}

static void check_mc_key(const char *key, size_t len) {
  FUZZ_CHECK(len >= 1 && len <= 250);
  for (size_t i = 0; i < len; i++)
    FUZZ_CHECK((unsigned char)key[i] > 0x20 && (unsigned char)key[i] < 0x7f);
}

/* Validates data[0..size) both ways; returns 1 if it is a name. */
static int check_one(const uint8_t *data, size_t size) {
  char *cstr = fuzz_dup(data, size, 1);
  size_t clen = strlen(cstr);
  int rc = lc_check_name(cstr);
  FUZZ_CHECK(rc == 0 || rc == LC_ENAME);
  FUZZ_CHECK((rc == 0) == ref_valid((const unsigned char *)cstr, clen));
  free(cstr);

  char *bytes = fuzz_dup(data, size, 0);
  lcd_proto_token t = {bytes, size};
  int prc = lcd_proto_check_name(&t);
  int valid = ref_valid(data, size);
  FUZZ_CHECK(prc == 0 || prc == LC_ENAME);
  FUZZ_CHECK((prc == 0) == valid);

  /* The daemon's tally keys: "tally:" NAME, NAME checked the same way. */
  lcd_proto_token tname = {NULL, 0};
  int is_tally = lcd_proto_tally_name(&t, &tname);
  FUZZ_CHECK(is_tally == (size >= 6 && memcmp(data, "tally:", 6) == 0));
  if (is_tally) {
    FUZZ_CHECK(tname.s == bytes + 6 && tname.len == size - 6);
    int tvalid = lcd_proto_check_name(&tname) == 0;
    FUZZ_CHECK(tvalid == ref_valid(data + 6, size - 6));
    if (tvalid) /* the whole key is a valid memcached key */
      check_mc_key(bytes, size);
  } else {
    FUZZ_CHECK(tname.s == NULL);
  }
  if (valid) {
    char key[LC__MC_KEY_MAX + 8];
    memcpy(key, LC__MC_PREFIX, strlen(LC__MC_PREFIX));
    memcpy(key + strlen(LC__MC_PREFIX), bytes, size);
    check_mc_key(key, strlen(LC__MC_PREFIX) + size);

    lc__tally *tl = calloc(1, sizeof *tl + size + 1);
    FUZZ_CHECK(tl != NULL);
    memcpy(tl->name, bytes, size);
    tl->nlen = size;
    static const char *const pfx[] = {LC__TALLY_MC_PLUS, LC__TALLY_MC_MINUS,
                                      LC__TALLY_MC_MARK};
    for (size_t i = 0; i < 3; i++)
      check_mc_key(key, lc__tally_mc_key(key, pfx[i], tl));
    free(tl);
  }
  free(bytes);
  return valid;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) FUZZ_CHECK(lc_check_name(NULL) == LC_EINVAL);
  int whole = check_one(data, size);
  const uint8_t *nl = memchr(data, '\n', size);
  if (whole || !nl) return 0;
  size_t alen = (size_t)(nl - data), blen = size - alen - 1;
  if (!check_one(data, alen) || !check_one(nl + 1, blen)) return 0;
  if (alen == blen && memcmp(data, nl + 1, alen) == 0) return 0;
  char a[LC_NAME_MAX + 10], b[LC_NAME_MAX + 10], an[LC_NAME_MAX + 1],
      bn[LC_NAME_MAX + 1];
  memcpy(an, data, alen);
  memcpy(bn, nl + 1, blen);
  size_t ap = lc__key_record_prefix(a, an, alen);
  size_t bp = lc__key_record_prefix(b, bn, blen);
  memset(b + bp, 0, 8); /* b's record key for value 0..: any */
  FUZZ_CHECK(ap > bp + 8 || memcmp(a, b, ap) != 0);
  memset(b + bp, 0xff, 8);
  FUZZ_CHECK(ap > bp + 8 || memcmp(a, b, ap) != 0);
  return 0;
}
