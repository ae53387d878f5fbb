#!/bin/bash
# faultfs_test.sh - self-test of the fault shim (tests/shim/faultfs.c).
#
#   bash tests/shim/faultfs_test.sh [LIBFAULTFS.so]
#
# (default $BUILD/tests/libfaultfs.so, BUILD defaulting to build).  A small
# python3 probe (CPython's os.write & co. call libc's write, pwrite64,
# writev, fsync, fdatasync, open64, openat64) runs under the shim for each
# mode: a write under LC_FAULT_DIR fails with the mode's errno or is short,
# a file outside is untouched, switching the ctl file back to off restores
# writes, eio-once fails once per change, and LC_FAULT_HITS counts.  Then a
# C probe linked to the system's libleveldb (built here when cc and
# leveldb/c.h are there, else skipped) shows the faults reach LevelDB's log
# and what reopening recovers, also with -fsanitize=address and thread
# builds of the probe.  Prints "ok"/"not ok" lines, ends with
# "faultfs: N passed, M failed" and exits non-zero when anything failed.
set -u
cd "$(dirname "$0")/../.." || exit 1
SO=${1:-${BUILD:-build}/tests/libfaultfs.so}
case "$SO" in /*) ;; *) SO=$PWD/$SO ;; esac
if [ ! -f "$SO" ]; then
  echo "faultfs_test: $SO not found; make $SO first" >&2
  exit 1
fi
PY=$(python3 -c 'import sys; print(sys.executable)') || exit 1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/faultfs_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
D=$TMP/dir        # LC_FAULT_DIR
OUT=$TMP/outside  # a file beside it, never affected
CTL=$TMP/ctl
HITS=$TMP/hits
mkdir "$D"
ln -s "$D" "$TMP/link"  # LC_FAULT_DIR is given through it: realpath

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
notok() { failed=$((failed + 1)); echo "not ok - $1: $2"; }

# The probe: runs its arguments as steps, prints one word per result
# (a byte count, 0 for a sync, fd for an open, or the errno's name).
cat >"$TMP/probe.py" <<'EOF'
import errno, os, sys, threading, time
fds, out = {}, []
def fd(p):
    if p not in fds:
        fds[p] = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    return fds[p]
def res(f):
    try:
        r = f()
        out.append("fd" if r is None else str(r))
    except OSError as e:
        out.append(errno.errorcode[e.errno])
def opened(p, **kw):
    os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644, **kw))
def threads(t, n, p):
    f = fd(p); bad = []
    def run():
        for _ in range(n):
            try: os.write(f, b"t" * 8)
            except OSError as e: bad.append(e.errno)
    ts = [threading.Thread(target=run) for _ in range(t)]
    for x in ts: x.start()
    for x in ts: x.join()
    return "%d/%d" % (bad.count(errno.EIO), t * n)
a = sys.argv[1:]
while a:
    op = a.pop(0)
    if op == "ctl":
        with open(os.environ["LC_FAULT_CTL"], "w") as c: c.write(a.pop(0) + "\n")
        time.sleep(0.02)  # one coarse-clock tick and then some
    elif op == "write": p, n = a.pop(0), int(a.pop(0)); res(lambda: os.write(fd(p), b"w" * n))
    elif op == "pwrite":
        p, n = a.pop(0), int(a.pop(0))
        res(lambda: os.pwrite(fd(p), b"p" * n, os.fstat(fd(p)).st_size))
    elif op == "writev":
        p, x, y = a.pop(0), int(a.pop(0)), int(a.pop(0))
        res(lambda: os.writev(fd(p), [b"x" * x, b"y" * y]))
    elif op == "fsync": p = a.pop(0); res(lambda: os.fsync(fd(p)) or 0)
    elif op == "fsyncro":
        p = a.pop(0); f = os.open(p, os.O_RDONLY)
        res(lambda: os.fsync(f) or 0); os.close(f)
    elif op == "fdatasync": p = a.pop(0); res(lambda: os.fdatasync(fd(p)) or 0)
    elif op == "open": p = a.pop(0); res(lambda: opened(p))
    elif op == "openat":
        d, n = a.pop(0), a.pop(0); dfd = os.open(d, os.O_RDONLY)
        res(lambda: opened(n, dir_fd=dfd)); os.close(dfd)
    elif op == "openro": p = a.pop(0); res(lambda: os.close(os.open(p, os.O_RDONLY)))
    elif op == "cd": os.chdir(a.pop(0))
    elif op == "mkdir": os.mkdir(a.pop(0))
    elif op == "threads":
        t, n, p = int(a.pop(0)), int(a.pop(0)), a.pop(0); out.append(threads(t, n, p))
    else: sys.exit("probe: unknown step " + op)
print(" ".join(out))
EOF

# fpy NAME WANT STEPS...: the probe under the shim (a fresh ctl and hits
# file unless KEEP=1) prints WANT.
fpy() {
  local name=$1 want=$2 got
  shift 2
  if [ "${KEEP:-0}" != 1 ]; then rm -f "$CTL" "$HITS"; fi
  got=$(LD_PRELOAD=$SO LC_FAULT_DIR=${FDIR:-$TMP/link} LC_FAULT_CTL=$CTL \
    LC_FAULT_HITS=$HITS "$PY" "$TMP/probe.py" "$@" 2>"$TMP/err")
  if [ "$got" = "$want" ]; then ok "$name"; else notok "$name" "got '$got', want '$want' $(head -c 300 "$TMP/err")"; fi
}
# expect NAME WANT GOT
expect() {
  if [ "$3" = "$2" ]; then ok "$1"; else notok "$1" "got '$3', want '$2'"; fi
}
size() { stat -c %s "$1" 2>/dev/null || echo missing; }
hits() { cat "$HITS" 2>/dev/null || echo none; }
F=$D/f

# ---- the probe, mode by mode ----------------------------------------------
got=$(LD_PRELOAD=$SO "$PY" "$TMP/probe.py" write "$F" 10 fsync "$F")
expect "no environment: writes and syncs pass" "10 0" "$got"
rm -f "$F"
fpy "ctl file missing: off" "10 10" write "$F" 10 write "$OUT" 10
fpy "off" "10 3 4 0 0 fd" ctl off write "$F" 10 pwrite "$F" 3 writev "$F" 2 2 \
  fsync "$F" fdatasync "$F" open "$D/g"
expect "off: no hits file" none "$(hits)"

rm -f "$F" "$OUT"
fpy "eio: write, pwrite, writev fail; outside and syncs pass" \
  "EIO EIO EIO 10 0 0 fd" ctl eio write "$F" 10 pwrite "$F" 10 writev "$F" 5 5 \
  write "$OUT" 10 fsync "$F" fdatasync "$F" open "$D/h"
expect "eio: nothing written" 0 "$(size "$F")"
expect "eio: outside written" 10 "$(size "$OUT")"
expect "eio: hits" 3 "$(hits)"
fpy "eio then off in one process" "EIO 10 EIO" ctl eio write "$F" 10 ctl off \
  write "$F" 10 ctl eio write "$F" 1
fpy "eio: a file opened before the mode changed" "4 EIO" write "$F" 4 ctl eio write "$F" 4
fpy "unknown word: off" "10" ctl eoi write "$F" 10
if grep -q "unknown mode 'eoi'" "$TMP/err"; then ok "unknown word: said on stderr"
else notok "unknown word: said on stderr" "$(cat "$TMP/err")"; fi

fpy "enospc" "ENOSPC ENOSPC ENOSPC 10" ctl enospc write "$F" 10 pwrite "$F" 10 \
  writev "$F" 1 9 write "$OUT" 10

rm -f "$F"
fpy "short: half, then EIO; outside passes" "5 EIO EIO 10" ctl short write "$F" 10 \
  write "$F" 10 pwrite "$F" 10 write "$OUT" 10
expect "short: half written" 5 "$(size "$F")"
expect "short: hits" 3 "$(hits)"
rm -f "$F"
fpy "short: odd count rounds down" "3 EIO" ctl short write "$F" 7 write "$F" 7
fpy "short: pwrite" "5" ctl short pwrite "$F" 10
fpy "short: 1-byte write fails" "EIO EIO" ctl short write "$F" 1 write "$F" 10
rm -f "$F"
fpy "short: writev cut in its first buffer" "5 EIO" ctl short writev "$F" 6 4 write "$F" 1
expect "short: writev's bytes" xxxxx "$(cat "$F")"
rm -f "$F"
fpy "short: writev cut in its second buffer" "5" ctl short writev "$F" 2 8
expect "short: writev's bytes" xxyyy "$(cat "$F")"
fpy "short: off restores, short again re-arms" "5 EIO 4 3 EIO" ctl short \
  write "$F" 10 write "$F" 10 ctl off write "$F" 4 ctl short write "$F" 6 write "$F" 6

fpy "eio-once: one failure; outside does not use it up" "10 EIO 10 10" \
  ctl eio-once write "$OUT" 10 write "$F" 10 write "$F" 10 write "$F" 10
expect "eio-once: hits" 1 "$(hits)"
fpy "eio-once: re-armed by each change" "EIO 1 EIO 1 1" ctl eio-once write "$F" 1 \
  write "$F" 1 ctl off ctl eio-once write "$F" 1 write "$F" 1 write "$F" 1
fpy "eio-once: re-armed by the same word written again" "EIO 10 EIO 10" \
  ctl eio-once write "$F" 1 write "$F" 10 ctl eio-once write "$F" 1 write "$F" 10

fpy "fsync: fsync and fdatasync fail; writes and outside pass" \
  "EIO EIO 10 0 0" ctl fsync fsync "$F" fdatasync "$F" write "$F" 10 \
  fsync "$OUT" fdatasync "$OUT"
expect "fsync: hits" 2 "$(hits)"
fpy "fsync: the directory itself too" "EIO 0" ctl fsync fsyncro "$D" fsyncro "$TMP"

touch "$F"
fpy "emfile: O_CREAT under the dir fails (absolute, openat, relative)" \
  "EMFILE EMFILE EMFILE fd fd" ctl emfile open "$D/new1" openat "$D" new2 \
  cd "$D" open new3 openro "$F" open "$OUT"
expect "emfile: nothing created" "" "$(cd "$D" && ls -d new* 2>/dev/null)"
expect "emfile: hits" 3 "$(hits)"
fpy "emfile: relative to an outside directory" "fd EMFILE" ctl emfile cd "$TMP" \
  open new4 open dir/new5

fpy "threads: every write of 8 threads fails under eio" "800/800" ctl eio threads 8 100 "$F"
expect "threads: hits count them all" 800 "$(hits)"

FDIR=$TMP/later fpy "LC_FAULT_DIR created after the start" "10 EIO" ctl eio \
  write "$OUT" 10 mkdir "$TMP/later" write "$TMP/later/f" 10
mkdir "$D/sub" "$D/s"
FDIR=$D/sub/.. fpy "LC_FAULT_DIR with .. in it" "EIO" ctl eio write "$F" 10
FDIR=$D/s fpy "a sibling sharing the dir's name as prefix is outside" "10 EIO" \
  ctl eio write "$D/sx" 10 write "$D/s/x" 10

# ---- LevelDB beneath it -----------------------------------------------------
cat >"$TMP/ldb.c" <<'EOF'
/* ldb DIR STEPS...: LevelDB's C API step by step, one word per result. */
#include <errno.h>
#include <fcntl.h>
#include <leveldb/c.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static leveldb_t *db;
static leveldb_writeoptions_t *wo, *swo;
static int mput_errors;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int report(char *err) {
  printf(err ? " err" : " ok");
  if (err) fprintf(stderr, "ldb: %s\n", err);
  leveldb_free(err);
  return err != NULL;
}
static void *mput(void *arg) {
  for (int i = 0; i < 25; i++) {
    char k[32], *err = NULL;
    snprintf(k, sizeof k, "m%ld.%d", (long)(size_t)arg, i);
    leveldb_put(db, wo, k, strlen(k), "v", 1, &err);
    pthread_mutex_lock(&mu);
    mput_errors += err != NULL;
    pthread_mutex_unlock(&mu);
    leveldb_free(err);
  }
  return NULL;
}
int main(int argc, char **argv) {
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, 1);
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  wo = leveldb_writeoptions_create();
  swo = leveldb_writeoptions_create();
  leveldb_writeoptions_set_sync(swo, 1);
  for (int i = 2; i < argc; i++) {
    const char *s = argv[i];
    char *err = NULL;
    if (!strcmp(s, "open")) {
      db = leveldb_open(o, argv[1], &err);
      report(err);
    } else if (!strcmp(s, "close")) {
      leveldb_close(db);
      db = NULL;
    } else if (!strcmp(s, "put") || !strcmp(s, "sput")) {
      const char *k = argv[++i];
      leveldb_put(db, s[0] == 's' ? swo : wo, k, strlen(k), "value", 5, &err);
      report(err);
    } else if (!strcmp(s, "get")) {
      size_t n;
      char *v = leveldb_get(db, ro, argv[i + 1], strlen(argv[i + 1]), &n, &err);
      i++;
      printf(v ? " yes" : " no");
      leveldb_free(v);
      leveldb_free(err);
    } else if (!strcmp(s, "count")) {
      leveldb_iterator_t *it = leveldb_create_iterator(db, ro);
      int n = 0;
      for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it);
           leveldb_iter_next(it))
        n++;
      leveldb_iter_destroy(it);
      printf(" %d", n);
    } else if (!strcmp(s, "mput")) { /* 4 threads, 25 puts each */
      pthread_t t[4];
      mput_errors = 0;
      for (long j = 0; j < 4; j++) pthread_create(&t[j], NULL, mput, (void *)j);
      for (int j = 0; j < 4; j++) pthread_join(t[j], NULL);
      printf(" %d", mput_errors);
    } else if (!strcmp(s, "creat")) {
      int fd = creat(argv[++i], 0644);
      printf(fd >= 0 ? " fd" : errno == EMFILE ? " EMFILE" : " err");
      if (fd >= 0) close(fd);
    } else if (!strcmp(s, "ctl")) {
      int fd = open(getenv("LC_FAULT_CTL"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const char *w = argv[++i];
      if (fd < 0 || write(fd, w, strlen(w)) != (ssize_t)strlen(w)) return 3;
      close(fd);
      nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    } else {
      fprintf(stderr, "ldb: unknown step %s\n", s);
      return 2;
    }
  }
  printf("\n");
  if (db) leveldb_close(db);
  leveldb_options_destroy(o);
  leveldb_readoptions_destroy(ro);
  leveldb_writeoptions_destroy(wo);
  leveldb_writeoptions_destroy(swo);
  return 0;
}
EOF

# ldb NAME BIN WANT DB STEPS...: the LevelDB probe under the shim.
ldb() {
  local name=$1 bin=$2 want=$3 got
  shift 3
  rm -f "$CTL" "$HITS"
  got=$(LD_PRELOAD=$SO LC_FAULT_DIR=$D LC_FAULT_CTL=$CTL LC_FAULT_HITS=$HITS \
    ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 \
    TSAN_OPTIONS="halt_on_error=1 suppressions=$TMP/tsan.supp" \
    "$bin" "$@" 2>"$TMP/err")
  local rc=$?
  got=${got# }
  if [ $rc -eq 0 ] && [ "$got" = "$want" ]; then ok "$name"
  else notok "$name" "exit $rc, got '$got', want '$want' $(head -c 600 "$TMP/err")"; fi
}
printf 'race:libleveldb.so\n' >"$TMP/tsan.supp"

if command -v cc >/dev/null && [ -f /usr/include/leveldb/c.h ] &&
   cc -std=c11 -D_GNU_SOURCE -O1 -g -o "$TMP/ldb" "$TMP/ldb.c" -lleveldb -pthread; then
  L=$TMP/ldb
  ldb "leveldb: off" "$L" "ok ok 1" "$D/db0" open put k1 count
  ldb "leveldb: eio fails a put, off restores; reopened the record is gone" \
    "$L" "ok ok err ok ok 2 no" "$D/db1" open put k1 ctl eio put k2 ctl off put k3 \
    close open count get k2
  expect "leveldb: eio hits" 1 "$(hits)"
  ldb "leveldb: short tears the log record, later puts fail; reopened, the torn tail is dropped" \
    "$L" "ok ok err err ok 1 yes no" "$D/db2" open put k1 ctl short put k2 put k3 \
    ctl off close open count get k1 get k2
  expect "leveldb: short hits (the half write, its retry, the next put)" 3 "$(hits)"
  ldb "leveldb: eio-once loses one put" "$L" "ok ok err ok ok 2 no yes" "$D/db3" \
    open put k1 ctl eio-once put k2 put k3 close open count get k2 get k3
  ldb "leveldb: fsync fails a sync put and sticks; the unsynced record survives" \
    "$L" "ok ok err err ok yes no" "$D/db4" open put k1 ctl fsync sput k2 ctl off \
    put k3 close open get k2 get k3
  ldb "leveldb: emfile fails the open" "$L" "err ok fd" "$D/db5" ctl emfile open \
    ctl off open creat "$D/c1"
  if grep -q "Too many open files" "$TMP/err"; then ok "leveldb: emfile's message"
  else notok "leveldb: emfile's message" "$(cat "$TMP/err")"; fi
  ldb "creat under emfile" "$L" "EMFILE fd" "$D/db6" ctl emfile creat "$D/c2" creat "$OUT.c"
  ldb "leveldb: 4 threads' puts under eio all fail" "$L" "ok 100 ok ok 1" "$D/db7" \
    open ctl eio mput ctl off put z close open count
  n=$(hits)
  if [ "$n" -ge 1 ] 2>/dev/null && [ "$n" -le 100 ]; then ok "leveldb: threads' hits ($n: group commit)"
  else notok "leveldb: threads' hits" "$n"; fi
  for san in address thread; do
    if cc -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=$san -o "$TMP/ldb-$san" \
      "$TMP/ldb.c" -lleveldb -pthread 2>/dev/null; then
      L=$TMP/ldb-$san
      ldb "leveldb, -fsanitize=$san: short" "$L" "ok ok err err ok 1 yes no" \
        "$D/$san-a" open put k1 ctl short put k2 put k3 ctl off close open count \
        get k1 get k2
      ldb "leveldb, -fsanitize=$san: threads under eio" "$L" "ok 100 ok ok 1" \
        "$D/$san-b" open ctl eio mput ctl off put z close open count
    else
      ok "leveldb, -fsanitize=$san # skip: cannot build with it"
    fi
  done
else
  ok "leveldb # skip: no cc or leveldb/c.h"
fi

echo "faultfs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
