/*
 * format.h - how liblogcounter lays its data out: the LevelDB keys and
 * values of records, reservations, ledger entries and tallies, the
 * memcached keys, and big-endian integers.  The one internal header that
 * the bench, chaos, fuzz and test programs use (to read, plant or damage
 * records); the rest of the library's internals stay in internal.h.
 *
 * Defined in keys.c (records), ledger.c (ledger entries) and tally_rec.c
 * (tallies).
 */
#ifndef LC_FORMAT_H
#define LC_FORMAT_H

#include "logcounter.h"

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define LC__MC_PREFIX "lc:"
#define LC__MC_KEY_MAX (sizeof(LC__MC_PREFIX) - 1 + LC_NAME_MAX)
#define LC__RECORD_VERSION 1
#define LC__RECORD_LEN 17 /* version, count, time */
#define LC__FORMAT_KEY "!logcounter-format"
#define LC__FORMAT_VALUE "1"
#define LC__ID_KEY "!logcounter-id" /* the log's identity (claim.c) */
#define LC__ID_LEN 16
/* The log is a restored backup (backup.c): "1 SRCID SNAPSHOT_US STATE",
 * STATE "partial" while lc_backup copies, "complete" once it is done (a
 * partial copy is refused at open). */
#define LC__RESTORED_KEY "!logcounter-restored"
/* A file (not a key) in a backup's directory from before LevelDB writes
 * anything there until the copy's last, synced write (backup.c): a
 * directory holding it is not a log unless its marker says complete. */
#define LC__BACKUP_MARK "BACKUP-INCOMPLETE"
/* In a restored log, 'k' NAME marks a counter reconciled since the
 * restore (its floor is above every id the original handed out); a
 * counter without it is pending.  Never copied by a backup. */
#define LC__RECONCILED 'k'

void lc__key_be64_put(unsigned char *p, uint64_t v);
uint64_t lc__key_be64_get(const unsigned char *p);
int64_t lc__clock_now_us(void);  /* wall clock */
int64_t lc__clock_mono_us(void); /* monotonic */
/* The wall-clock time ms from now, for pthread_cond_timedwait. */
struct timespec lc__clock_realtime_in(int ms);
/* LevelDB key prefixes: 'r' name '\0' for records (then 8 bytes of the
 * big-endian last value), 'v' name for the reservation.  buf must hold
 * LC_NAME_MAX + 10 bytes; returns the length. */
size_t lc__key_record_prefix(char *buf, const char *name, size_t nlen);
size_t lc__key_reservation(char *buf, const char *name, size_t nlen);
/* The ledger (ledger.c): 'g' NAME '\0' then be64(last); value: version,
 * cause, be64(count), be64(time), the reason's bytes. */
#define LC__LEDGER_HEAD 18 /* a ledger value: version, cause, count, time */
#define LC__LEDGER_VERSION 1
size_t lc__key_ledger_prefix(char *buf, const char *name, size_t nlen);
/* Decodes a ledger key (after its prefix of plen bytes) and value. */
int lc__key_ledger_decode(const char *key, size_t klen, size_t plen,
                      const char *val, size_t vlen, lc_gap *g);
void lc__key_record_encode(unsigned char out[LC__RECORD_LEN], uint64_t count,
                       int64_t time_us);
/* The be64 value after the prefix (plen bytes) of a record or ledger key:
 * 1..LC_VALUE_MAX, or 0 when the key has no valid one. */
int64_t lc__key_last(const char *key, size_t klen, size_t plen);
/* Decodes a record key (after its prefix of plen bytes) and value. */
int lc__key_record_decode(const char *key, size_t klen, size_t plen,
                      const char *val, size_t vlen, lc_record *rec);

/* Tallies: sums in memcached under these prefixes, records in LevelDB. */
#define LC__TALLY_MC_PLUS "lt+:"  /* sum of positive deltas */
#define LC__TALLY_MC_MINUS "lt-:" /* sum of |negative deltas| */
#define LC__TALLY_MC_MARK "lt@:"  /* window marker, expires */
#define LC__TALLY_REC 't'         /* 't' NAME -> record */
#define LC__TALLY_IDX 'T'         /* 'T' be64(total^2^63) NAME -> "" */
/* The index sorts totals as unsigned: total ^ LC__TALLY_BIAS. */
#define LC__TALLY_BIAS 0x8000000000000000ULL
/* 't' NAME; 'T' be64(total ^ 2^63) NAME.  buf: LC_NAME_MAX + 10 bytes. */
size_t lc__tally_rec_key(char *buf, const char *name, size_t nlen);
size_t lc__tally_idx_key(char *buf, int64_t total, const char *name,
                         size_t nlen);
/* Decodes a tally record's total and losses (either may be NULL). */
int lc__tally_decode(const char *v, size_t vlen, int64_t *total,
                     uint64_t *losses);

#endif
