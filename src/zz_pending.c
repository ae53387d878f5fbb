/* zz_pending.c - TEMPORARY stub until the retention branch merges. */
#include "internal.h"
int lc_list_counters(lc_t *h, int (*fn)(void *, const char *), void *arg, uint64_t *count) { (void)h; (void)fn; (void)arg; (void)count; return lc__fail(LC_EINVAL, "not yet"); }
