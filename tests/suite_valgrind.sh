#!/bin/bash
# suite_valgrind.sh - valgrind memcheck over every logcounter subcommand:
# each run must end with no memory errors and no leaks (definite, indirect
# or possible; "still reachable" memory held by LevelDB's and libmemcached's
# process-wide state is not a leak; tests/valgrind.supp names the one
# suppressed record, LevelDB's background thread).  Runs the successful path of each
# subcommand, a usage error and a runtime error, in local mode and, when
# logcounterd is built, in remote mode (--server).  Each check also checks
# the subcommand's exit status, so a run that crashed or did nothing fails.
# Skipped (0 checks) in sanitizer builds, which valgrind cannot run; a
# missing valgrind is a failure (make deps installs it), never a pass.
# Ends with "valgrind: N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
BIN=$BUILD/logcounter LCD=$BUILD/logcounterd
if [ "$(basename "$BUILD")" != build ] && nm "$BIN" 2>/dev/null | grep -q '__[at]san_init'; then
  echo "valgrind: sanitizer build, skipped"
  echo "valgrind: 0 passed, 0 failed"
  exit 0
fi
if ! command -v valgrind >/dev/null 2>&1; then
  echo "FAIL - valgrind not installed (make deps installs it)"
  echo "valgrind: 0 passed, 1 failed"
  exit 1
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/vg_test.XXXXXX") || exit 1
LCD_PID=""
cleanup() {
  [ -n "$LCD_PID" ] && kill -TERM "$LCD_PID" 2>/dev/null && wait "$LCD_PID" 2>/dev/null
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
PORT=$(tests/memcached.sh start "$TMP") || { echo "valgrind: no memcached" >&2; exit 1; }
unset LOGCOUNTER_MEMCACHED LOGCOUNTER_DB LOGCOUNTER_DURABILITY LOGCOUNTER_SERVER
LOCAL=(--memcached "--SERVER=127.0.0.1:$PORT" --db "$TMP/db")

passed=0 failed=0
# vg WANT_RC ARGS...: runs logcounter ARGS under memcheck; passes when the
# exit status is WANT_RC and memcheck found no error and no leak.
vg() {
  local want=$1; shift
  local name="logcounter $*"
  name=${name//$TMP/TMP}
  valgrind -q --error-exitcode=99 --leak-check=full \
    --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible \
    --suppressions=tests/valgrind.supp \
    --log-file="$TMP/vg.log" "$BIN" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ "$rc" -eq "$want" ] && [ ! -s "$TMP/vg.log" ]; then
    passed=$((passed + 1)); echo "ok   - $name (exit $rc)"
  else
    failed=$((failed + 1))
    echo "FAIL - $name: exit $rc, wanted $want"
    sed 's/^/    /' "$TMP/vg.log" "$TMP/err" | head -n 40
  fi
}

vg 0 --help
vg 0 --version
vg 0 help prune
vg 2 frobnicate
vg 2 next 'bad name'
vg 0 "${LOCAL[@]}" next vg
vg 0 "${LOCAL[@]}" next vg -n 5
vg 0 "${LOCAL[@]}" --json next vg -n 3
vg 0 "${LOCAL[@]}" --durability sync next vg
vg 0 "${LOCAL[@]}" current vg
vg 0 "${LOCAL[@]}" restore vg
vg 0 "${LOCAL[@]}" advance vg 1000
vg 0 "${LOCAL[@]}" verify vg
vg 0 "${LOCAL[@]}" dump vg
vg 0 "${LOCAL[@]}" --json dump vg
vg 0 "${LOCAL[@]}" prune vg --keep 2
vg 2 "${LOCAL[@]}" prune vg
vg 0 "${LOCAL[@]}" tally add vgt 5
vg 0 "${LOCAL[@]}" tally add vgt -2
vg 0 "${LOCAL[@]}" tally flush
vg 0 "${LOCAL[@]}" tally get vgt
vg 0 "${LOCAL[@]}" tally list --prefix vg --json
vg 2 "${LOCAL[@]}" tally add vgt 1x
vg 0 "${LOCAL[@]}" next vgr
vg 0 "${LOCAL[@]}" release vgr
vg 1 "${LOCAL[@]}" next vgr
vg 0 "${LOCAL[@]}" adopt vgr --above 1
vg 2 "${LOCAL[@]}" adopt vgr --above x
vg 1 --memcached "--SERVER=127.0.0.1:1" --db "$TMP/db" --timeout 200 next vg
mkdir -p "$TMP/notadir" && : >"$TMP/notadir/db"
vg 1 --memcached "--SERVER=127.0.0.1:$PORT" --db "$TMP/notadir/db" next vg

if [ -x "$LCD" ]; then
  "$LCD" --memcached "--SERVER=127.0.0.1:$PORT" --db "$TMP/lcd" -l none \
    -s "$TMP/lcd.sock" >"$TMP/lcd.out" 2>&1 &
  LCD_PID=$!
  for _ in $(seq 200); do [ -S "$TMP/lcd.sock" ] && break; sleep 0.05; done
  if [ -S "$TMP/lcd.sock" ]; then
    S=(--server "$TMP/lcd.sock")
    # the daemon's log owns vgd; vg is the local log's: EOWNED, exit 1
    vg 0 "${S[@]}" next vgd
    vg 0 "${S[@]}" next vgd -n 4
    vg 1 "${S[@]}" next vg
    vg 0 "${S[@]}" current vgd
    vg 0 "${S[@]}" stats
    vg 0 "${S[@]}" stats --json
    vg 1 "${S[@]}" verify vgd
  else
    failed=$((failed + 1)); echo "FAIL - logcounterd did not start"; cat "$TMP/lcd.out"
  fi
fi

echo "valgrind: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
