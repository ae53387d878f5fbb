/* zz_pending.c - TEMPORARY stubs until the retention and backup branches merge. */
#include "internal.h"
int lc_backup(lc_t *h, const char *dir, const lc_backup_opts *o, lc_backup_result *r) { (void)h; (void)dir; (void)o; (void)r; return lc__fail(LC_EINVAL, "not yet"); }
int lc_list_counters(lc_t *h, int (*fn)(void *, const char *), void *arg, uint64_t *count) { (void)h; (void)fn; (void)arg; (void)count; return lc__fail(LC_EINVAL, "not yet"); }
