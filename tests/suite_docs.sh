#!/bin/bash
# suite_docs.sh - the documentation works as written:
#   - README.md is at most 250 lines and opens with `make run` and
#     `make test`; every page of docs/ opens with a line "For ..." (who it
#     is for) and is in README.md's table; no document speaks of issues;
#   - every relative link to a file and every #anchor in README.md,
#     docs/*.md, bench/README.md and bench/results/*.md resolves;
#   - every shell block marked runnable (a fence whose info string is
#     "sh runnable") in README.md and docs/*.md runs and exits 0, each in
#     a fresh empty directory, with $BUILD first on PATH (then /usr/bin,
#     for Debian's python3 and its memcached clients), against a private
#     memcached (LOGCOUNTER_MEMCACHED; memcached is flushed before each
#     block), LOGCOUNTER_DB in that directory, and 11311 and 11211 in the
#     block's text replaced by a free 127.0.0.1 port and the private
#     memcached's port; a block runs under bash -e -o pipefail, at most
#     60 s, and whatever it leaves running (its process group) is stopped;
#   - every ```c block that is a whole program compiles against the
#     library;
#   - the man pages ($BUILD/man, or LC_DOCS_MAN) name exactly the options
#     (and, for the CLI, the commands and each command's options) that
#     the built programs' --help name (tests/docs/docs_check.py man);
#   - the library's layers hold (tests/layers.py on $BUILD/obj/*/*.o: no
#     call from a folder to one after it in internal.h's map, no cycle,
#     the counter leaves call nothing above them, every lc__ name's prefix
#     names its folder or file, the map names every src/*/*.c), the map
#     stays at most 150 lines, and layers.py fails on a planted call up.
# Needs $BUILD/logcounter, $BUILD/logcounterd, $BUILD/liblogcounter.a
# and its objects,
# the man pages (make), memcached and python3.  Talks to 127.0.0.1 only.
# Ends with "docs: N passed, M failed".
# shellcheck disable=SC2016,SC2317
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
MAN=${LC_DOCS_MAN:-$B/man}
CHECK=(python3 tests/docs/docs_check.py)
SUITE=docs
. tests/check.sh

TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_docs.XXXXXX") || exit 1
cleanup() {
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

shopt -s nullglob
PAGES=(docs/*.md)
DOCS=(README.md "${PAGES[@]}")
ALL=("${DOCS[@]}" bench/README.md bench/results/*.md)

# ---- shape -----------------------------------------------------------------
check "README.md has at most 250 lines" [ "$(wc -l <README.md)" -le 250 ]
# The first fenced block, before any second-level heading, holds both.
first_block() { awk '/^## /{exit} /^```/{n++; next} n==1{print}' README.md; }
check "README.md opens with make run and make test" \
  eval 'first_block | grep -q "^make run" && first_block | grep -q "^make test"'
check "docs/ has pages" [ "${#PAGES[@]}" -gt 0 ]
for p in "${PAGES[@]}"; do
  check "$p opens with who it is for" \
    eval "awk 'NR==1 && !/^# /{exit 1} NR>1 && NF{exit !/^For /}' '$p'"
  check "README.md's table links $p" grep -q "](${p})" README.md
done
check "no document speaks of issues" \
  eval '! grep -n -i -E "\\bissues?\\b" "${ALL[@]}"'

# ---- links and anchors -----------------------------------------------------
for f in "${ALL[@]}"; do
  check "links and anchors in $f resolve" "${CHECK[@]}" links "$f"
done

# ---- man pages against --help ----------------------------------------------
check "logcounter(1) names what logcounter --help names" \
  "${CHECK[@]}" man "$B/logcounter" "$MAN/logcounter.1"
check "logcounterd(8) names what logcounterd --help names" \
  "${CHECK[@]}" man "$B/logcounterd" "$MAN/logcounterd.8"

# ---- the library's layers ---------------------------------------------------
check "the library's folders call only down, no cycle, prefixes name homes (tests/layers.py)" \
  python3 tests/layers.py "$B/obj" src/internal.h
check "src/internal.h, the map, is at most 150 lines" \
  test "$(wc -l <src/internal.h)" -le 150
# layers.py must be able to fail: a base/ object calling a log/ function,
# a name with a foreign prefix, and a leaf calling counter.c up.
layers_fails() {
  local d=$TMP/layers
  mkdir -p "$d/src/base" "$d/src/log" "$d/src/counter" "$d/obj/base" "$d/obj/log" "$d/obj/counter"
  printf '#include "base/base.h"\n#include "log/log.h"\n#include "counter/counter.h"\n/* a.c b.c segment.c counter.c */\n' >"$d/src/internal.h"
  touch "$d/src/base/base.h" "$d/src/log/log.h" "$d/src/counter/counter.h"
  printf 'int lc__log_f(void);\nint lc__base_g(void);\nint lc__base_g(void) { return lc__log_f(); }\n' >"$d/a.c"
  printf 'int lc__log_f(void);\nint lc__cache_h(void);\nint lc__log_f(void) { return 1; }\nint lc__cache_h(void) { return 2; }\n' >"$d/b.c"
  printf 'int lc__counter_k(void);\nint lc__seg_j(void);\nint lc__seg_j(void) { return lc__counter_k(); }\n' >"$d/segment.c"
  printf 'int lc__counter_k(void);\nint lc__counter_k(void) { return 3; }\n' >"$d/counter.c"
  cc -c -o "$d/obj/base/a.o" "$d/a.c" && cc -c -o "$d/obj/log/b.o" "$d/b.c" &&
    cc -c -o "$d/obj/counter/segment.o" "$d/segment.c" &&
    cc -c -o "$d/obj/counter/counter.o" "$d/counter.c" || return 1
  python3 tests/layers.py "$d/obj" "$d/src/internal.h" >"$d/out" && return 1
  cat "$d/out"
  grep -q 'call up: src/base/a.c uses lc__log_f of src/log/b.c' "$d/out" &&
    grep -q 'prefix: lc__cache_h lives in src/log/b.c' "$d/out" &&
    grep -q 'leaf calls up: src/counter/segment.c uses lc__counter_k' "$d/out"
}
check "tests/layers.py fails on a call up, a foreign prefix and a leaf calling up" layers_fails

# ---- C programs --------------------------------------------------------------
LIBS="-lmemcachedutil -lmemcached -lleveldb -lssl -lcrypto -pthread"
for f in "${DOCS[@]}"; do
  for c in $("${CHECK[@]}" cprogs "$f" "$TMP/c"); do
    where=$(head -n 1 "$c" | sed 's|^/\* \(.*\) \*/$|\1|')
    # shellcheck disable=SC2086
    check "the C program at $where compiles" \
      cc -std=c11 -Wall -Werror -Iinclude -o "${c%.c}" "$c" "$B/liblogcounter.a" $LIBS
  done
done

# ---- runnable shell blocks -------------------------------------------------
MCPORT=$(tests/memcached.sh start "$TMP") || { echo "suite_docs: no memcached" >&2; failed=$((failed + 1)); finish; }
flush_memcached() {
  local l=""
  exec 4<>"/dev/tcp/127.0.0.1/$MCPORT" && printf 'flush_all\r\n' >&4 &&
    IFS= read -r -t 5 l <&4
  exec 4<&-
  [ "${l%$'\r'}" = OK ]
}
# run_block SCRIPT: runs one extracted block as described above.
run_block() {
  local script=$1 n d port pid rc
  n=$(basename "$script" .sh)
  d=$TMP/run/$n
  mkdir -p "$d/state" || return 1
  flush_memcached || { echo "suite_docs: cannot flush memcached" >&2; return 1; }
  port=$(free_port) || return 1
  sed -e "s/\\b11311\\b/$port/g" -e "s/\\b11211\\b/$MCPORT/g" "$script" >"$d/block.sh"
  (
    cd "$d" || exit 1
    export HOME=$d XDG_STATE_HOME=$d/state LOGCOUNTER_DB=$d/state/logcounter
    export LOGCOUNTER_MEMCACHED="--SERVER=127.0.0.1:$MCPORT" PATH="$B:/usr/bin:$PATH"
    unset LOGCOUNTER_SERVER LOGCOUNTER_DURABILITY LOGCOUNTER_PREFETCH LOGCOUNTER_USER \
      LOGCOUNTER_PASSWORD LOGCOUNTER_PASSWORD_FILE LOGCOUNTER_TLS_CA
    exec setsid timeout -k 5 60 bash -e -o pipefail block.sh
  ) >"$d/out" 2>&1 </dev/null &
  pid=$!
  wait "$pid"
  rc=$?
  kill -TERM -- "-$pid" 2>/dev/null
  if [ "$rc" -ne 0 ]; then
    echo "--- $(head -n 1 "$script" | cut -c3-) exited $rc; its output:"
    tail -n 20 "$d/out"
  fi
  return "$rc"
}
nblocks=0
for f in "${DOCS[@]}"; do
  for s in $("${CHECK[@]}" blocks "$f" "$TMP/blocks"); do
    nblocks=$((nblocks + 1))
    check "the runnable block at $(head -n 1 "$s" | cut -c3-) runs" run_block "$s"
  done
done
check "there are runnable blocks (README.md and docs/)" [ "$nblocks" -gt 0 ]
finish
