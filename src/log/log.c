/*
 * log.c - the LevelDB log that owns every counter's records.
 *
 * One process at a time may open a LevelDB directory (its LOCK file).  In
 * front of LevelDB's lock sits our own: an flock on DIR/OWNER, taken first
 * (waiting up to lock_wait_ms) and released last, holding a line that says
 * who holds the log, so that a process that finds it held can name the
 * holder.  The directory carries a format marker; a
 * directory written by an unknown format version is refused.
 *
 * Invariant: a record is written in the same write as any reservation that
 * covers it, and a synced write also makes every earlier write durable
 * (LevelDB's write-ahead log is one sequential file).
 *
 * Every open (lc__log_open, and recover.c's reopen) syncs the directory
 * once LevelDB is open.  LevelDB's recovery moves the write-ahead log it
 * replayed, unsynced tail included (a kill leaves it in the page cache),
 * into a synced table and a new MANIFEST, then renames CURRENT to it and
 * unlinks the old log, without syncing the directory: a power cut before
 * its next directory sync would bring back the old CURRENT and the old log
 * cut to its synced length, so that tail (records acknowledged before the
 * kill or the failed write) would vanish below records written since, as
 * holes no restart can explain.  After the sync the recovery is durable.
 *
 * Every read holds the gate (lc__log_enter), so that recover.c can close
 * and reopen LevelDB after a failed write (lc__log_reopen); writes are in
 * log_write.c.
 */
#include "log/log.h"
#include "handle.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int log_error(char *err, const char *op) {
  int rc = lc__fail(LC_ELOG, "leveldb %s: %s", op, err ? err : "unknown");
  leveldb_free(err);
  return rc;
}

static bool is_lock_error(const char *err) {
  return strstr(err, "lock ") != NULL && strstr(err, "LOCK") != NULL;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Whoever holds the log, as its OWNER note says (fd is not locked by us). */
static void read_owner(int fd, char *buf, size_t size) {
  ssize_t n = pread(fd, buf, size - 1, 0);
  buf[n > 0 ? n : 0] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
}

/*
 * Takes the OWNER lock (flock, so a second open in the same process
 * conflicts too), waiting up to *wait_ms (less what it waited), and writes who we are into
 * it.  The file is never unlinked: a waiter may hold it open.
 */
static int lock_owner(lc__log *l, const char *path, int *wait_ms,
                      const char *owner) {
  if (mkdir(path, 0700) != 0 && errno != EEXIST)
    return lc__fail(LC_ELOG, "cannot create %s: %s", path, strerror(errno));
  l->owner_fd = open(l->owner_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (l->owner_fd < 0)
    return lc__fail(LC_ELOG, "cannot open %s: %s", l->owner_path,
                    strerror(errno));
  int step = 1;
  while (flock(l->owner_fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR)
      return lc__fail(LC_ELOG, "cannot lock %s: %s", l->owner_path,
                      strerror(errno));
    if (*wait_ms <= 0) {
      char who[200];
      read_owner(l->owner_fd, who, sizeof who);
      return lc__fail(LC_ELOCKED, "%s is held by %s", path,
                      who[0] ? who : "another process");
    }
    sleep_ms(step);
    *wait_ms -= step;
    if (step < 32) step *= 2;
  }
  l->owner_locked = true;
  size_t n = strlen(owner);
  if (ftruncate(l->owner_fd, 0) != 0 ||
      pwrite(l->owner_fd, owner, n, 0) != (ssize_t)n ||
      pwrite(l->owner_fd, "\n", 1, (off_t)n) != 1)
    return lc__fail(LC_ELOG, "cannot write %s: %s", l->owner_path,
                    strerror(errno));
  return 0;
}

static int check_format(lc__log *l) {
  char *err = NULL;
  size_t vlen = 0;
  const char *k = LC__FORMAT_KEY;
  char *v = leveldb_get(l->db, l->read, k, strlen(k), &vlen, &err);
  if (err) return log_error(err, "read format");
  if (v == NULL) {
    leveldb_put(l->db, l->sync, k, strlen(k), LC__FORMAT_VALUE,
                strlen(LC__FORMAT_VALUE), &err);
    return err ? log_error(err, "write format") : 0;
  }
  bool ok = vlen == strlen(LC__FORMAT_VALUE) &&
            memcmp(v, LC__FORMAT_VALUE, vlen) == 0;
  int rc = ok ? 0
              : lc__fail(LC_EFORMAT,
                         "format '%.*s', this library "
                         "reads '%s'",
                         (int)(vlen > 16 ? 16 : vlen), v, LC__FORMAT_VALUE);
  leveldb_free(v);
  return rc;
}

/* fsync of the directory path: LevelDB's renames and unlinks in it made
 * durable (see the top); 0 or LC_ELOG. */
static int sync_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return lc__fail(LC_ELOG, "cannot open the log directory %s: %s", path,
                    strerror(errno));
  int rc = 0;
  if (fsync(fd) != 0)
    rc = lc__fail(LC_ELOG, "cannot sync the log directory %s: %s", path,
                  strerror(errno));
  close(fd);
  return rc;
}

/* fdatasync of every write-ahead log file (*.log) in path: after a
 * memtable switch the old one's unsynced tail, which LevelDB never syncs
 * (it moves it into a table in the background, then deletes the file),
 * would otherwise be cut by a power loss while later records in the new
 * file, synced, stay: a hole below them.  0 or LC_ELOG. */
static int sync_logs(const char *path) {
  DIR *d = opendir(path);
  if (d == NULL)
    return lc__fail(LC_ELOG, "cannot open the log directory %s: %s", path,
                    strerror(errno));
  int rc = 0;
  char p[4096];
  for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (n <= 4 || strcmp(e->d_name + n - 4, ".log") != 0) continue;
    snprintf(p, sizeof p, "%s/%s", path, e->d_name);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue; /* deleted meanwhile: moved into a table */
    if (fdatasync(fd) != 0)
      rc = lc__fail(LC_ELOG, "cannot sync %s: %s", p, strerror(errno));
    close(fd);
  }
  closedir(d);
  return rc;
}

int lc__log_sync_switched(lc__log *l) {
  struct stat st;
  if (stat(l->path, &st) != 0)
    return lc__fail(LC_ELOG, "cannot stat %s: %s", l->path, strerror(errno));
  if (st.st_mtim.tv_sec == l->synced_mtime.tv_sec &&
      st.st_mtim.tv_nsec == l->synced_mtime.tv_nsec)
    return 0;
  int rc = sync_logs(l->path);
  return rc ? rc : lc__log_sync_dir(l);
}

int lc__log_sync_dir(lc__log *l) {
  struct stat st;
  if (stat(l->path, &st) != 0)
    return lc__fail(LC_ELOG, "cannot stat %s: %s", l->path, strerror(errno));
  int rc = sync_dir(l->path);
  if (!rc) l->synced_mtime = st.st_mtim;
  return rc;
}

int lc__log_open(lc__log *l, const char *path, int lock_wait_ms,
                 const char *owner) {
  memset(l, 0, sizeof *l);
  l->owner_fd = -1;
  pthread_rwlock_init(&l->gate, NULL);
  pthread_mutex_init(&l->wmu, NULL);
  pthread_mutex_init(&l->fmu, NULL);
  size_t plen = strlen(path);
  l->path = strdup(path);
  l->group = leveldb_writebatch_create();
  l->owner_path = malloc(plen + sizeof "/OWNER");
  l->options = leveldb_options_create();
  l->sync = leveldb_writeoptions_create();
  l->nosync = leveldb_writeoptions_create();
  l->read = leveldb_readoptions_create();
  if (!l->path || !l->group || !l->owner_path || !l->options || !l->sync ||
      !l->nosync || !l->read) {
    lc__log_close(l);
    return lc__fail(LC_ENOMEM, "cannot allocate the log");
  }
  memcpy(l->owner_path, path, plen);
  memcpy(l->owner_path + plen, "/OWNER", sizeof "/OWNER");
  leveldb_options_set_create_if_missing(l->options, 1);
  leveldb_writeoptions_set_sync(l->sync, 1);
  leveldb_writeoptions_set_sync(l->nosync, 0);
  leveldb_readoptions_set_verify_checksums(l->read, 1);

  int waited = lock_wait_ms;
  int rc = lock_owner(l, path, &waited, owner);
  if (!rc) rc = lc__backup_mark_check(path); /* an unfinished backup */
  while (!rc) {
    char *err = NULL;
    l->db = leveldb_open(l->options, path, &err);
    if (l->db) break;
    if (!is_lock_error(err)) {
      rc = log_error(err, "open");
    } else if (waited <= 0) {
      /* held by something that does not take the OWNER lock */
      rc =
          lc__fail(LC_ELOCKED, "%s is held by another process (%s)", path, err);
      leveldb_free(err);
    } else {
      leveldb_free(err);
      sleep_ms(10);
      waited -= 10;
    }
  }
  if (!rc) rc = lc__log_sync_dir(l);
  if (!rc) rc = check_format(l);
  struct stat st;
  if (!rc && stat(path, &st) != 0)
    rc = lc__fail(LC_ELOG, "cannot stat %s: %s", path, strerror(errno));
  if (!rc) {
    l->dev = st.st_dev;
    l->ino = st.st_ino;
    atomic_store(&l->checked_us, lc__clock_mono_us());
  }
  if (rc) lc__log_close(l);
  return rc;
}

int lc__log_reopen(lc__log *l) {
  if (l->db) leveldb_close(l->db);
  l->db = NULL;
  /* a directory removed or replaced: LOST; its sync failed (the files
   * changed since its last one, on a disk that still fails): FAILED again
   * (lc__recover) */
  int rc = lc__log_check_dir(l, true);
  if (rc) return rc;
  /* never create_if_missing here: an emptied directory is not our log */
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, 0);
  char *err = NULL;
  l->db = leveldb_open(o, l->path, &err);
  leveldb_options_destroy(o);
  if (l->db == NULL) {
    rc = lc__fail(LC_ELOG, "reopen %s: %s", l->path, err ? err : "unknown");
    leveldb_free(err);
    atomic_store(&l->state, LC__LOG_FAILED);
    return rc;
  }
  char id[LC__ID_LEN + 1];
  rc = lc__log_sync_dir(l);
  if (!rc) rc = lc__log_identity(l, id);
  if (!rc && strcmp(id, l->id) != 0) {
    rc = lc__fail(LC_ELOG, "%s now holds log %s, not %s", l->path, id, l->id);
    pthread_mutex_lock(&l->fmu);
    snprintf(l->why, sizeof l->why, "%s", lc_last_detail());
    pthread_mutex_unlock(&l->fmu);
    atomic_store(&l->state, LC__LOG_LOST);
  } else if (rc) {
    atomic_store(&l->state, LC__LOG_FAILED);
  }
  return rc;
}

void lc__log_close(lc__log *l) {
  if (l->db) leveldb_close(l->db);
  if (l->owner_locked && ftruncate(l->owner_fd, 0) != 0) {
    /* a stale note only misnames the holder; nothing to do */
  }
  if (l->owner_fd >= 0) close(l->owner_fd); /* releases the lock */
  if (l->options) leveldb_options_destroy(l->options);
  if (l->sync) leveldb_writeoptions_destroy(l->sync);
  if (l->nosync) leveldb_writeoptions_destroy(l->nosync);
  if (l->read) leveldb_readoptions_destroy(l->read);
  if (l->group) leveldb_writebatch_destroy(l->group);
  free(l->owner_path);
  free(l->path);
  pthread_rwlock_destroy(&l->gate);
  pthread_mutex_destroy(&l->wmu);
  pthread_mutex_destroy(&l->fmu);
  memset(l, 0, sizeof *l);
  l->owner_fd = -1;
}

void lc__log_batch_reservation(leveldb_writebatch_t *b, const char *name,
                               size_t nlen, int64_t reservation) {
  char key[LC_NAME_MAX + 10];
  unsigned char val[9];
  size_t klen = lc__key_reservation(key, name, nlen);
  val[0] = LC__RECORD_VERSION;
  lc__key_be64_put(val + 1, (uint64_t)reservation);
  leveldb_writebatch_put(b, key, klen, (const char *)val, sizeof val);
}

void lc__log_batch_record(leveldb_writebatch_t *b, const char *name,
                          size_t nlen, int64_t last, int version,
                          uint64_t count, int64_t time_us) {
  char key[LC_NAME_MAX + 10];
  unsigned char val[LC__RECORD_LEN];
  size_t plen = lc__key_record_prefix(key, name, nlen);
  lc__key_be64_put((unsigned char *)key + plen, (uint64_t)last);
  lc__key_record_encode(val, count, time_us);
  val[0] = (unsigned char)version;
  leveldb_writebatch_put(b, key, plen + 8, (const char *)val, sizeof val);
}

void lc__log_batch_unrecord(leveldb_writebatch_t *b, const char *name,
                            size_t nlen, int64_t last) {
  char key[LC_NAME_MAX + 10];
  size_t plen = lc__key_record_prefix(key, name, nlen);
  lc__key_be64_put((unsigned char *)key + plen, (uint64_t)last);
  leveldb_writebatch_delete(b, key, plen + 8);
}

int lc__log_get(lc__log *l, const char *key, size_t klen, char **v,
                size_t *vlen, const char *what) {
  char *err = NULL;
  *v = NULL;
  *vlen = 0;
  int rc = lc__log_enter(l);
  if (rc) return rc;
  *v = leveldb_get(l->db, l->read, key, klen, vlen, &err);
  lc__log_leave(l);
  if (err) {
    rc = lc__fail(LC_ELOG, "leveldb read %s: %s", what, err);
    leveldb_free(err);
  }
  return rc;
}

int lc__log_get_reservation(lc__log *l, const char *name, size_t nlen,
                            int64_t *out) {
  char key[LC_NAME_MAX + 10];
  size_t klen = lc__key_reservation(key, name, nlen);
  char *v;
  size_t vlen;
  int rc = lc__log_get(l, key, klen, &v, &vlen, "reservation");
  if (rc) return rc;
  *out = 0;
  if (v == NULL) return 0;
  uint64_t r = vlen == 9 ? lc__key_be64_get((unsigned char *)v + 1) : 0;
  if (vlen != 9 || v[0] != LC__RECORD_VERSION || r > (uint64_t)LC_VALUE_MAX)
    rc = lc__fail(LC_ECORRUPT, "reservation of %.*s cannot be decoded",
                  (int)nlen, name);
  else
    *out = (int64_t)r;
  leveldb_free(v);
  return rc;
}

int lc__log_max(lc__log *l, const char *name, size_t nlen, int64_t *out) {
  char prefix[LC_NAME_MAX + 10];
  size_t plen = lc__key_record_prefix(prefix, name, nlen);
  return lc__log_last(l, prefix, plen, "record", out);
}

/* Puts it on the last key under prefix, or, when there is none, on a key
 * not under it or nowhere (lc__log_seek_last). */
static void seek_last_on(leveldb_iterator_t *it, const char *prefix,
                         size_t plen) {
  char past[LC_NAME_MAX + 10];
  memcpy(past, prefix, plen);
  past[plen - 1] = '\1'; /* just past the prefix ('\0' -> '\1') */
  /* first forward to the prefix: a name with no key under it (a first
   * use) costs this one seek, not a seek and a step back (a merging
   * iterator's first Prev re-seeks every level) */
  leveldb_iter_seek(it, prefix, plen);
  size_t klen;
  const char *k = leveldb_iter_valid(it) ? leveldb_iter_key(it, &klen) : NULL;
  if (k == NULL || klen < plen || memcmp(k, prefix, plen) != 0)
    return; /* invalid, or on a key past the prefix's */
  leveldb_iter_seek(it, past, plen);
  if (leveldb_iter_valid(it))
    leveldb_iter_prev(it);
  else
    leveldb_iter_seek_to_last(it);
}

leveldb_iterator_t *lc__log_seek_last(lc__log *l, const char *prefix,
                                      size_t plen) {
  leveldb_iterator_t *it = leveldb_create_iterator(l->db, l->read);
  seek_last_on(it, prefix, plen);
  return it;
}

/* The value of the last key of plen + 8 bytes under prefix (0 if none):
 * it is moved there from the end (seek_last_on). */
static int last_on(leveldb_iterator_t *it, const char *prefix, size_t plen,
                   const char *what, int64_t *out) {
  *out = 0;
  seek_last_on(it, prefix, plen);
  for (; leveldb_iter_valid(it); leveldb_iter_prev(it)) {
    size_t klen;
    const char *k = leveldb_iter_key(it, &klen);
    if (klen < plen || memcmp(k, prefix, plen) != 0) break;
    if (klen == plen + 8) {
      uint64_t v = lc__key_be64_get((const unsigned char *)k + plen);
      if (v > (uint64_t)LC_VALUE_MAX)
        return lc__fail(LC_ECORRUPT, "%s key %llu of %.*s out of range", what,
                        (unsigned long long)v, (int)(plen - 2), prefix + 1);
      *out = (int64_t)v;
      break;
    }
  }
  return 0;
}

int lc__log_last(lc__log *l, char *prefix, size_t plen, const char *what,
                 int64_t *out) {
  *out = 0;
  int rc = lc__log_enter(l);
  if (rc) return rc;
  leveldb_iterator_t *it = leveldb_create_iterator(l->db, l->read);
  rc = last_on(it, prefix, plen, what, out);
  char *err = NULL;
  leveldb_iter_get_error(it, &err);
  leveldb_iter_destroy(it);
  lc__log_leave(l);
  if (err) return log_error(err, "seek");
  return rc;
}

int lc__log_max_both(lc__log *l, const char *name, size_t nlen, int64_t *max,
                     int64_t *gapmax) {
  *max = *gapmax = 0;
  char prefix[LC_NAME_MAX + 10];
  int rc = lc__log_enter(l);
  if (rc) return rc;
  leveldb_iterator_t *it = leveldb_create_iterator(l->db, l->read);
  size_t plen = lc__key_record_prefix(prefix, name, nlen);
  rc = last_on(it, prefix, plen, "record", max);
  char *err = NULL;
  leveldb_iter_get_error(it, &err);
  if (!rc && !err) {
    plen = lc__key_ledger_prefix(prefix, name, nlen);
    rc = last_on(it, prefix, plen, "ledger", gapmax);
    leveldb_iter_get_error(it, &err);
  }
  leveldb_iter_destroy(it);
  lc__log_leave(l);
  if (err) return log_error(err, "seek");
  return rc;
}
