/*
 * backup.c - lc_backup: a consistent copy of the log into a new LevelDB
 * directory while the handle goes on serving; and what a restored copy
 * knows about itself (lc_is_restored, its pending counters).
 *
 * The copy reads one LevelDB snapshot (iter.c's whole-log iterator) and
 * writes it to the new directory in batches of at most BATCH_BYTES or
 * BATCH_KEYS, unsynced but for the last.  The log's gate is held only
 * while a batch is read from the snapshot, never across the whole copy:
 * a reopen after a failed write waits at most for one batch.  A reopen
 * kills the iterator (its snapshot belonged to the closed LevelDB); the
 * backup then fails as incomplete.
 *
 * Invariants:
 *  - DIR appears holding LC__BACKUP_MARK (make_marked: made under another
 *    name, the mark synced, renamed), which goes only after the copy's
 *    last, synced write; lc_open refuses a directory with the mark
 *    (lc__backup_mark_check) unless its marker says complete.  So a crash
 *    at any point, even before LevelDB wrote anything, leaves nothing
 *    that opens as a new log.
 *  - the first batch holds the marker LC__RESTORED_KEY ("partial"), the
 *    last, synced one rewrites it "complete": whatever part of a copy
 *    reaches the disk is marked restored, and lc_open refuses a partial
 *    one (a crash mid-copy included).  A failed backup leaves its
 *    directory as it is (nothing is deleted, neither there nor in the
 *    source); the error says it is incomplete.
 *  - every key is copied, the identity (LC__ID_KEY) too, except the
 *    source's own marker and its LC__RECONCILED keys: in the copy every
 *    counter is pending again.  The marker names the source's identity;
 *    the copy's first open (lc__backup_identity) replaces an identity
 *    equal to it with a new one, so memcached's claims tell the copy from
 *    its original: a counter the original claimed is refused (LC_EOWNED,
 *    saying so) until lc_adopt, which takes over the original's claim.
 *    The copy and its original can then never both allocate one counter
 *    through their claims (a claim lost with memcached excepted, as for
 *    any two logs: claim.c).
 *
 * A restored log is behind: ids may have gone out of the original after
 * the snapshot.  So a pending counter (no 'k' NAME) never seeds memcached
 * from the log (counter.c: seed, lc__counter_claim, restore): memcached
 * must still hold it at or above the highest value the log shows taken
 * (its records and ledger: the reservation, which runs ahead of them,
 * only raises it further), and the first
 * increment that finds it so writes its block with a reservation at or
 * above memcached's answer and 'k' NAME in one synced write (reconciled:
 * from then on the log is above everything the original handed out).
 * Otherwise LC_EBEHIND until lc_adopt NAME --above V.
 */
#include "log/log.h"
#include "handle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BATCH_BYTES (4u << 20) /* keys and values per write batch */
#define BATCH_KEYS 50000u      /* and entries (progress at least this often) */
#define MARKER_MAX 96

static void sync_dir(const char *path);

static void marker_text(char *buf, size_t size, const char *src_id,
                        int64_t snap_us, bool complete) {
  snprintf(buf, size, "1 %s %lld %s", src_id, (long long)snap_us,
           complete ? "complete" : "partial");
}

/* Whether the marker's text ends in "complete". */
static bool marker_complete(const char *v, size_t vlen) {
  return vlen >= 8 && memcmp(v + vlen - 8, "complete", 8) == 0;
}

int lc__backup_mark_check(const char *path) {
  size_t plen = strlen(path);
  char *mark = malloc(plen + sizeof "/" LC__BACKUP_MARK);
  if (mark == NULL) return lc__fail(LC_ENOMEM, "cannot copy a path");
  memcpy(mark, path, plen);
  memcpy(mark + plen, "/" LC__BACKUP_MARK, sizeof "/" LC__BACKUP_MARK);
  struct stat st;
  if (lstat(mark, &st) != 0) {
    int rc = errno == ENOENT
                 ? 0
                 : lc__fail(LC_ELOG, "cannot stat %s: %s", mark,
                            strerror(errno));
    free(mark);
    return rc;
  }
  char why[256];
  const char *state = why;
  bool complete = false;
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, 0);
  char *err = NULL;
  leveldb_t *db = leveldb_open(o, path, &err);
  leveldb_options_destroy(o);
  snprintf(why, sizeof why,
           "no LevelDB that opens (%.120s): it stopped before its first "
           "write, or is still being written",
           err ? err : "?");
  leveldb_free(err);
  if (db != NULL) {
    leveldb_readoptions_t *ro = leveldb_readoptions_create();
    size_t vlen = 0;
    err = NULL;
    char *v = leveldb_get(db, ro, LC__RESTORED_KEY, strlen(LC__RESTORED_KEY),
                          &vlen, &err);
    leveldb_readoptions_destroy(ro);
    if (err)
      state = "its marker cannot be read";
    else if (v == NULL)
      state = "no restored marker: it stopped before its first synced write";
    else if (!(complete = marker_complete(v, vlen)))
      state = "a partial marker: it stopped before it finished";
    leveldb_free(err);
    leveldb_free(v);
    leveldb_close(db);
  }
  int rc = 0;
  if (complete) { /* stopped after its last write: complete */
    if (unlink(mark) == 0) sync_dir(path);
  } else {
    rc = lc__fail(LC_ELOG,
                  "%s is an incomplete backup (it holds %s, %s): it cannot "
                  "be opened as a log; remove it and make a new one",
                  path, LC__BACKUP_MARK, state);
  }
  free(mark);
  return rc;
}

int lc__backup_restored_load(lc_t *h) {
  char *err = NULL;
  size_t vlen = 0;
  const char *k = LC__RESTORED_KEY;
  char *v = leveldb_get(h->log.db, h->log.read, k, strlen(k), &vlen, &err);
  if (err) {
    int rc = lc__fail(LC_ELOG, "read the restored marker: %s", err);
    leveldb_free(err);
    return rc;
  }
  h->restored = v != NULL;
  h->restored_from[0] = '\0';
  if (v == NULL) return 0;
  char text[MARKER_MAX];
  snprintf(text, sizeof text, "%.*s", (int)(vlen < 95 ? vlen : 95), v);
  bool complete = marker_complete(v, vlen);
  leveldb_free(v);
  char src[LC__ID_LEN + 1] = "";
  if (sscanf(text, "1 %16s", src) == 1 && strlen(src) == LC__ID_LEN)
    memcpy(h->restored_from, src, sizeof src);
  if (!complete)
    return lc__fail(LC_ELOG,
                    "%s is an incomplete backup (the copy stopped before "
                    "it finished: '%s'); make a new one",
                    h->log.path, text);
  return 0;
}

int lc__backup_identity(lc_t *h) {
  if (!h->restored || h->restored_from[0] == '\0' ||
      strcmp(h->log_id, h->restored_from) != 0)
    return 0;
  return lc__log_identity_renew(&h->log, h->log_id);
}

static size_t reconciled_key(char *buf, const char *name, size_t nlen) {
  buf[0] = LC__RECONCILED;
  memcpy(buf + 1, name, nlen);
  return nlen + 1;
}

int lc__backup_pending_load(lc_t *h, const char *name, size_t nlen, bool *pending) {
  *pending = false;
  if (!h->restored) return 0;
  char key[LC_NAME_MAX + 2];
  size_t klen = reconciled_key(key, name, nlen);
  char *v;
  size_t vlen;
  int rc = lc__log_get(&h->log, key, klen, &v, &vlen, "reconciled mark");
  if (rc) return rc;
  *pending = v == NULL;
  leveldb_free(v);
  return 0;
}

void lc__backup_reconciled(leveldb_writebatch_t *b, const char *name,
                          size_t nlen, int64_t value) {
  char key[LC_NAME_MAX + 2];
  unsigned char val[17];
  size_t klen = reconciled_key(key, name, nlen);
  val[0] = 1;
  lc__key_be64_put(val + 1, (uint64_t)value);
  lc__key_be64_put(val + 9, (uint64_t)lc__clock_now_us());
  leveldb_writebatch_put(b, key, klen, (const char *)val, sizeof val);
}

int lc__backup_behind(const char *name, int64_t held, int64_t floor) {
  char what[96];
  if (held < 0)
    snprintf(what, sizeof what, "memcached does not hold it");
  else
    snprintf(what, sizeof what,
             "memcached holds %lld, below the %lld the log shows taken "
             "(it went back)",
             (long long)held, (long long)floor);
  return lc__fail(LC_EBEHIND,
                  "counter %s: this log is a restored backup and %s; ids "
                  "may have gone out after the backup: run 'logcounter "
                  "adopt %s --above V' with V at least the last id handed "
                  "out",
                  name, what, name);
}

int lc_is_restored(lc_t *h) {
  lc__detail_clear();
  if (h == NULL) return lc__fail(LC_EINVAL, "NULL handle");
  int rc = LC__LOCAL_ONLY(h);
  if (rc) return rc;
  return h->restored ? 1 : 0;
}

/* dir must not exist and its parent must be a directory; *parent
 * receives the parent's path (free it). */
static int check_dir(const char *dir, char **parent_out) {
  struct stat st;
  if (lstat(dir, &st) == 0)
    return lc__fail(LC_EINVAL,
                    "backup directory %s exists: a backup goes to a new "
                    "directory",
                    dir);
  if (errno != ENOENT)
    return lc__fail(LC_EINVAL, "backup directory %s: %s", dir,
                    strerror(errno));
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  while (n > 0 && dir[n - 1] != '/') n--;
  char *parent = n == 0 ? strdup(".") : strndup(dir, n);
  if (parent == NULL) return lc__fail(LC_ENOMEM, "cannot copy a path");
  int rc = 0;
  if (stat(parent, &st) != 0)
    rc = lc__fail(LC_EINVAL, "the parent of backup directory %s (%s): %s", dir,
                  parent, strerror(errno));
  else if (!S_ISDIR(st.st_mode))
    rc = lc__fail(LC_EINVAL, "the parent of backup directory %s (%s) is not "
                  "a directory", dir, parent);
  if (rc)
    free(parent);
  else
    *parent_out = parent;
  return rc;
}

/* Best effort: the new directory's entry survives a power cut. */
static void sync_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  if (fsync(fd) != 0) { /* the copy itself is synced; nothing to do */
  }
  close(fd);
}

/* DIR/LC__BACKUP_MARK, malloc'd (NULL: no memory). */
static char *mark_path(const char *dir) {
  size_t n = strlen(dir);
  char *p = malloc(n + sizeof "/" LC__BACKUP_MARK);
  if (p) {
    memcpy(p, dir, n);
    memcpy(p + n, "/" LC__BACKUP_MARK, sizeof "/" LC__BACKUP_MARK);
  }
  return p;
}

/* Renames from to to, failing if to exists (RENAME_NOREPLACE where the
 * file system has it; else rename, which replaces only an empty
 * directory, made meanwhile by someone else). */
static int rename_new(const char *from, const char *to) {
#ifdef SYS_renameat2
  if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 1u) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
#endif
  return rename(from, to);
}

/*
 * The backup directory appears already holding LC__BACKUP_MARK (synced):
 * it is made as DIR.lcbackup-XXXXXX, the mark written and synced in it,
 * and then renamed to DIR.  So no crash at any point leaves at DIR a
 * directory that opens as a new log (one with no LevelDB yet, or an empty
 * one): lc_open refuses a directory holding the mark until the copy's
 * last write has landed.  A crash before the rename leaves only the
 * DIR.lcbackup-* directory.
 */
static int make_marked(const char *dir, const char *src_id) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  char *stage = malloc(n + sizeof ".lcbackup-XXXXXX");
  if (stage == NULL) return lc__fail(LC_ENOMEM, "cannot copy a path");
  memcpy(stage, dir, n);
  memcpy(stage + n, ".lcbackup-XXXXXX", sizeof ".lcbackup-XXXXXX");
  if (mkdtemp(stage) == NULL) {
    int rc = lc__fail(LC_ELOG, "cannot create a directory beside %s: %s", dir,
                      strerror(errno));
    free(stage);
    return rc;
  }
  char *mark = mark_path(stage);
  int rc = mark ? 0 : lc__fail(LC_ENOMEM, "cannot copy a path");
  int fd = rc ? -1 : open(mark, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (!rc && fd < 0)
    rc = lc__fail(LC_ELOG, "cannot create %s: %s", mark, strerror(errno));
  if (fd >= 0) {
    char text[128];
    int len = snprintf(text, sizeof text,
                       "a backup of log %s in progress: not a log until "
                       "this file is gone\n",
                       src_id);
    if (write(fd, text, (size_t)len) != len || fsync(fd) != 0)
      rc = lc__fail(LC_ELOG, "cannot write %s: %s", mark, strerror(errno));
    close(fd);
  }
  if (!rc) sync_dir(stage);
  if (!rc && rename_new(stage, dir) != 0)
    rc = lc__fail(errno == EEXIST || errno == ENOTEMPTY ? LC_EINVAL : LC_ELOG,
                  "cannot create backup directory %s: %s", dir,
                  strerror(errno));
  if (rc) { /* nothing of it stays */
    if (mark) unlink(mark);
    rmdir(stage);
  }
  free(mark);
  free(stage);
  return rc;
}

/* The copy is complete: its mark goes (best effort: a copy whose marker
 * says complete is taken as complete by lc_open even with the mark). */
static void unmark(const char *dir) {
  char *mark = mark_path(dir);
  if (mark && unlink(mark) == 0) sync_dir(dir);
  free(mark);
}

typedef struct copy {
  lc_t *h;
  const char *dir;
  leveldb_t *db; /* the new directory */
  leveldb_writeoptions_t *sync, *nosync;
  leveldb_writebatch_t *b;
  char marker[MARKER_MAX];
  lc_backup_result res;
} copy;

static int copy_write(copy *k, bool sync) {
  char *err = NULL;
  leveldb_write(k->db, sync ? k->sync : k->nosync, k->b, &err);
  leveldb_writebatch_clear(k->b);
  if (err == NULL) return 0;
  int rc = lc__fail(LC_ELOG, "backup to %s incomplete: write: %s", k->dir, err);
  leveldb_free(err);
  return rc;
}

/* Copies every entry of the snapshot; the gate held per batch. */
static int copy_all(copy *k, lc_iter *it, const lc_backup_opts *o) {
  lc__log *l = &k->h->log;
  leveldb_writebatch_put(k->b, LC__RESTORED_KEY, strlen(LC__RESTORED_KEY),
                         k->marker, strlen(k->marker));
  bool first = true;
  for (bool more = true; more;) {
    int rc = lc__log_enter(l);
    if (rc) return rc;
    uint64_t bytes = 0, keys = 0;
    while (bytes < BATCH_BYTES && keys < BATCH_KEYS) {
      const char *key, *val;
      size_t klen, vlen;
      rc = lc__iter_entry(it, &key, &klen, &val, &vlen);
      if (rc <= 0) break;
      bool skip = (klen > 0 && key[0] == LC__RECONCILED) ||
                  (klen == strlen(LC__RESTORED_KEY) &&
                   memcmp(key, LC__RESTORED_KEY, klen) == 0);
      if (!skip) {
        leveldb_writebatch_put(k->b, key, klen, val, vlen);
        keys++;
        bytes += klen + vlen;
        if (klen > 9 && key[0] == 'r') k->res.records++;
      }
      lc__iter_skip(it);
    }
    lc__log_leave(l);
    if (rc < 0) return rc;
    more = rc > 0;
    k->res.keys += keys;
    k->res.bytes += bytes;
    /* the first write synced: any copy on disk carries the marker */
    if (more && (rc = copy_write(k, first)) != 0) return rc;
    first = false;
    if (o && o->progress) o->progress(o->progress_arg, k->res.keys);
  }
  return 0;
}

int lc_backup(lc_t *h, const char *dir, const lc_backup_opts *opts,
              lc_backup_result *result) {
  lc__detail_clear();
  if (h == NULL || dir == NULL || result == NULL)
    return lc__fail(LC_EINVAL, "NULL argument");
  if (dir[0] == '\0') return lc__fail(LC_EINVAL, "empty backup directory");
  if (LC__ADMIN_WAY(h)) return lc__admin_backup(h, dir, opts, result);
  int rc = LC__LOCAL_ONLY(h);
  if (rc) return rc;
  char *parent = NULL;
  if ((rc = check_dir(dir, &parent)) != 0) return rc;
  if ((rc = make_marked(dir, h->log_id)) != 0) {
    free(parent);
    return rc;
  }
  sync_dir(parent); /* DIR, with its mark */
  copy k = {.h = h, .dir = dir};
  leveldb_options_t *lo = leveldb_options_create();
  k.sync = leveldb_writeoptions_create();
  k.nosync = leveldb_writeoptions_create();
  k.b = leveldb_writebatch_create();
  leveldb_options_set_create_if_missing(lo, 1);
  leveldb_options_set_error_if_exists(lo, 1);
  leveldb_writeoptions_set_sync(k.sync, 1);
  char *err = NULL;
  k.db = leveldb_open(lo, dir, &err);
  leveldb_options_destroy(lo);
  lc_iter *it = NULL;
  int64_t snap_us = 0;
  if (k.db == NULL) {
    rc = lc__fail(LC_ELOG, "backup to %s: open: %s", dir,
                  err ? err : "unknown");
    leveldb_free(err);
  } else {
    rc = lc__iter_open_log(h, &it, &snap_us);
  }
  if (!rc) {
    marker_text(k.marker, sizeof k.marker, h->log_id, snap_us, false);
    rc = copy_all(&k, it, opts);
    if (rc && strstr(lc_last_detail(), "incomplete") == NULL) {
      char why[LC__DETAIL_MAX];
      snprintf(why, sizeof why, "%s", lc_last_detail());
      rc = lc__fail(rc,
                    "backup to %s incomplete (the directory holds a "
                    "partial copy, which cannot be opened): %s",
                    dir, why);
    }
  }
  lc_iter_close(it);
  if (!rc) { /* the last batch, synced, with the marker: complete */
    marker_text(k.marker, sizeof k.marker, h->log_id, snap_us, true);
    leveldb_writebatch_put(k.b, LC__RESTORED_KEY, strlen(LC__RESTORED_KEY),
                           k.marker, strlen(k.marker));
    rc = copy_write(&k, true);
  }
  if (k.db) leveldb_close(k.db);
  if (!rc) unmark(dir); /* a crash before it: lc_open sees it complete */
  leveldb_writebatch_destroy(k.b);
  leveldb_writeoptions_destroy(k.sync);
  leveldb_writeoptions_destroy(k.nosync);
  if (!rc) {
    sync_dir(dir);
    sync_dir(parent);
  }
  free(parent);
  if (rc) return rc;
  k.res.time_us = snap_us;
  *result = k.res;
  return 0;
}
