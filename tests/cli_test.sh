#!/bin/bash
# cli_test.sh - end-to-end test of the logcounter command line tool.
#
# Runs $BUILD/logcounter (BUILD defaults to "build") against a private
# memcached started with tests/memcached.sh and fresh log directories under
# a temporary directory; both are removed on exit.  When $BUILD/logcounterd
# is built, it is started too (its own log directory, the same memcached)
# to test --server and stats, and stopped with SIGTERM at the end (and by
# the exit trap); without it those checks are skipped.  Every check is a
# named assertion; expected values are computed from what the tool printed
# earlier, not hard-coded.  Ends with "cli: N passed, M failed" and exits
# non-zero when anything failed.
# Checks are written as check NAME eval '...': the single quotes are meant
# (expanded when the check runs), and the variables they use look unused.
# shellcheck disable=SC2016,SC2034
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
BIN=$PWD/$BUILD/logcounter
LCD=$PWD/$BUILD/logcounterd
case "$BUILD" in /*) BIN=$BUILD/logcounter LCD=$BUILD/logcounterd ;; esac
if [ ! -x "$BIN" ]; then
  echo "cli_test: $BIN not found; run make first" >&2
  exit 1
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/cli_test.XXXXXX") || exit 1
LCD_PID=""
# stop_daemon: SIGTERM to the logcounterd started here, then wait for it
# (SIGKILL after 10 s); its exit status in LCD_RC.
stop_daemon() {
  LCD_RC=-
  [ -n "$LCD_PID" ] || return 0
  kill -TERM "$LCD_PID" 2>/dev/null
  for _ in $(seq 200); do kill -0 "$LCD_PID" 2>/dev/null || break; sleep 0.05; done
  kill -KILL "$LCD_PID" 2>/dev/null
  wait "$LCD_PID" 2>/dev/null
  LCD_RC=$?
  LCD_PID=""
}
cleanup() {
  stop_daemon
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
PORT=$(tests/memcached.sh start "$TMP") || { echo "cli_test: no memcached" >&2; exit 1; }
MC="--SERVER=127.0.0.1:$PORT"
unset LOGCOUNTER_MEMCACHED LOGCOUNTER_DB LOGCOUNTER_DURABILITY LOGCOUNTER_SERVER
HAVE_PY=0
command -v python3 >/dev/null 2>&1 && HAVE_PY=1

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   - $1"; }
bad() { failed=$((failed + 1)); echo "FAIL - $1: $2"; }
# check NAME CONDITION...: runs the condition (a command); reports the
# last run's output when it fails.
check() {
  local name=$1; shift
  if "$@"; then ok "$name"; else bad "$name" "rc=$RC out='$(head -c 300 <<<"$OUT")' err='$(head -c 300 <<<"$ERR")'"; fi
}

# run ARGS...: runs the tool; sets OUT, ERR and RC.
run() {
  "$BIN" "$@" >"$TMP/out" 2>"$TMP/err"
  RC=$?
  OUT=$(cat "$TMP/out"); ERR=$(cat "$TMP/err")
}
# lc DB ARGS...: runs the tool on log directory DB with our memcached.
lc() { local db=$1; shift; run --memcached "$MC" --db "$TMP/$db" "$@"; }

rc_is() { [ "$RC" = "$1" ]; }
out_is() { [ "$OUT" = "$1" ]; }
err_has() { grep -qF -- "$1" <<<"$ERR"; }
out_has() { grep -qF -- "$1" <<<"$OUT"; }
is_num() { [[ $1 =~ ^[0-9]+$ ]]; }
# num TEXT: TEXT when it is a number, else 0 (so that a broken output makes
# the following checks fail rather than the script).
num() { if is_num "$1"; then echo "$1"; else echo 0; fi; }
usage_error() { rc_is 2 && [ -z "$OUT" ] && err_has "logcounter: " && err_has "usage: "; }
runtime_error() { rc_is 1 && err_has "logcounter: cannot "; }

# json_ok EXPR: every line of OUT is a JSON object and the Python
# expression EXPR holds for each one (o); without python3 it fails (a
# condition not checked is not a pass; make deps installs python3).
json_ok() {
  if [ $HAVE_PY = 1 ]; then
    python3 -c '
import json, sys
lines = sys.stdin.read().splitlines()
assert lines, "no output"
for line in lines:
    o = json.loads(line)
    assert isinstance(o, dict), line
    assert eval(sys.argv[1]), line
' "$1" <<<"$OUT" 2>"$TMP/pyerr"
  else
    echo "json_ok: no python3 (make deps)" >"$TMP/pyerr"
    return 1
  fi
}
# json_get KEY: the value of KEY in the one JSON object in OUT.
json_get() {
  if [ $HAVE_PY = 1 ]; then
    python3 -c 'import json,sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' \
      "$1" <<<"$OUT" 2>/dev/null
  else
    sed -n "s/.*\"$1\":\\([0-9]*\\).*/\\1/p" <<<"$OUT"
  fi
}
mc_flush() {
  local reply
  exec 3<>"/dev/tcp/127.0.0.1/$PORT" || return 1
  printf 'flush_all\r\n' >&3
  read -r reply <&3
  exec 3<&-
  [[ $reply == OK* ]]
}

echo "cli: testing $BIN against memcached on port $PORT"

# ---- help and version
run --help
check "--help exits 0 and prints the usage to stdout" \
  eval 'rc_is 0 && out_has "usage: logcounter" && out_has "next" && out_has "LOGCOUNTER_DB" && [ -z "$ERR" ]'
run -h
check "-h is --help" eval 'rc_is 0 && out_has "usage: logcounter"'
run help
check "help command prints the usage" eval 'rc_is 0 && out_has "Commands:"'
for c in next current restore advance prune verify dump stats; do
  run "$c" --help
  check "$c --help exits 0 with its usage on stdout" \
    eval 'rc_is 0 && out_has "usage: logcounter $c" && [ -z "$ERR" ]'
done
run help prune
check "help prune shows prune's options" eval 'rc_is 0 && out_has "--older-than"'
version=$(sed -n 's/^#define LC_VERSION_STRING "\(.*\)"/\1/p' include/logcounter.h)
run --version
check "--version prints 'logcounter $version'" eval 'rc_is 0 && out_is "logcounter $version"'

# ---- next, current, advance, restore
lc d1 next orders; first=$(num "$OUT")
check "next on a fresh counter prints 1" eval 'rc_is 0 && out_is 1'
lc d1 next orders -n 3; block=$OUT
check "next -n 3 prints 3 consecutive ids after the previous one" \
  eval 'rc_is 0 && [ "$(echo "$block" | tr "\n" " ")" = "$((first + 1)) $((first + 2)) $((first + 3)) " ]'
last=$(num "$(tail -1 <<<"$block")")
lc d1 --count 2 next orders
check "a command option before the command is a usage error" usage_error
lc d1 next --count 2 orders; last2=$(num "$(tail -1 <<<"$OUT")")
check "next --count 2 NAME (options before the name)" \
  eval 'rc_is 0 && [ "$(wc -l <<<"$OUT")" = 2 ] && [ "$(head -1 <<<"$OUT")" = $((last + 1)) ]'
last=$last2
lc d1 --json next orders -n 5
check "--json next prints {counter,first,last,count}" \
  json_ok 'o["counter"] == "orders" and o["count"] == 5 and o["last"] - o["first"] == 4 and o["first"] == '"$((last + 1))"
last=$(num "$(json_get last)")
lc d1 next orders --json
check "next --json (as a command option)" json_ok 'o["count"] == 1 and o["first"] == '"$((last + 1))"
last=$(num "$(json_get last)")
lc d1 current orders
check "current prints the last id handed out" eval 'rc_is 0 && out_is "$last"'
lc d1 --json current orders
check "--json current" json_ok 'o["counter"] == "orders" and o["current"] == '"$last"
lc d1 current never-used
check "current of an unused counter is 0" eval 'rc_is 0 && out_is 0'
lc d1 next
def=$OUT
lc d1 current default
check "next without a name uses counter 'default'" eval 'is_num "$def" && out_is "$def"'

mc_flush; RC=$?
check "flush_all accepted by memcached" rc_is 0
lc d1 current orders
check "current after flush_all still knows the counter" eval 'rc_is 0 && out_is "$last"'
lc d1 restore orders
check "restore after flush_all stands at the last id handed out" eval 'rc_is 0 && out_is "$last"'
lc d1 --json restore orders
check "--json restore" json_ok 'o["counter"] == "orders" and o["current"] == '"$last"
mc_flush
lc d1 next orders
check "next after flush_all continues above every earlier id" \
  eval 'rc_is 0 && is_num "$OUT" && [ "$OUT" -gt "$last" ]'
last=$(num "$OUT")
target=$((last + 1000))
lc d1 advance orders "$target"
check "advance prints the new floor" eval 'rc_is 0 && out_is "orders: next value >= $target"'
lc d1 next orders
check "next after advance is >= the floor" eval 'rc_is 0 && [ "$OUT" -ge "$target" ]'
last=$(num "$OUT")
lc d1 --json advance orders 5
check "advance never lowers (json)" json_ok 'o["counter"] == "orders" and o["min_next"] == 5'
lc d1 next orders
check "next after a lower advance still increases" eval 'rc_is 0 && [ "$OUT" -gt "$last" ]'
last=$(num "$OUT")

# ---- dump and verify
lc d1 dump orders
dump=$OUT
check "dump prints FIRST[-LAST] COUNT TIME per record, KIND after a ledger entry" \
  eval 'rc_is 0 && [ -n "$dump" ] && ! grep -Evq "^[0-9]+(-[0-9]+)? [0-9]+ [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z( [a-z-]+)?$" <<<"$dump"'
check "dump shows a single id as just the value" eval 'grep -q "^$first 1 " <<<"$dump"'
check "dump shows a block as FIRST-LAST COUNT" eval 'grep -q "^$((first + 1))-$((first + 3)) 3 " <<<"$dump"'
check "dump ends with the last id" eval '[ "$(tail -1 <<<"$dump" | cut -d" " -f1)" = "$last" ]'
check "dump shows advance's gap in value order, as the ledger has it" \
  eval 'grep -A1 " advance$" <<<"$dump" | tail -1 | grep -q "^$target "'
records=$(grep -c "Z$" <<<"$dump")
ids=$(grep "Z$" <<<"$dump" | awk '{ n += $2 } END { print n }')
lc d1 dump --json orders
check "dump --json: one object per record with first/last/count/time" \
  json_ok 'o["last"] - o["first"] + 1 == o["count"] and o["time"].endswith("Z") and o["time_us"] > 0'
check "dump --json has as many lines as dump" eval '[ "$(wc -l <<<"$OUT")" = "$(wc -l <<<"$dump")" ]'
lc d1 verify orders
check "verify exits 0 on a healthy log" eval 'rc_is 0 && out_has "status:       ok"'
check "verify counts the records and ids that dump shows" \
  eval 'grep -Eq "^records: +$records$" <<<"$OUT" && grep -Eq "^ids covered: +$ids$" <<<"$OUT"'
check "verify reports the gap left by advance" eval 'grep -Eq "^gaps: +1 " <<<"$OUT"'
lc d1 --json verify orders
check "--json verify" json_ok 'o["ok"] and o["records"] == '"$records"' and o["ids"] == '"$ids"' and o["highest"] == '"$last"' and o["gaps"] == 1 and o["overlaps"] == 0 and o["undecodable"] == 0 and o["reservation"] >= '"$last"

# ---- the gap ledger: gaps, verify --explain, void
gap_from=$(grep -B1 " advance$" <<<"$dump" | head -1 | cut -d" " -f1 | sed 's/.*-//')
lc d1 gaps orders
check "gaps lists advance's gap with its cause" \
  eval 'rc_is 0 && grep -Eq "^$((gap_from + 1))-$((target - 1)) $((target - gap_from - 1)) [0-9T:.-]+Z advance$" <<<"$OUT"'
lc d1 verify --explain orders
check "verify --explain lists every gap with its cause" \
  eval 'rc_is 0 && out_has "causes:       advance 1" && grep -Eq " advance$" <<<"$OUT"'
lc d1 --json gaps orders
check "gaps --json" json_ok 'o["cause"] == "advance" and o["last"] == '"$((target - 1))"
lc d1 void orders "$first" --reason "order cancelled"
check "void an issued id" eval 'rc_is 0 && out_is "orders $first voided"'
lc d1 void orders "$first" --reason "again"
check "void twice: exit 1, already voided" eval 'rc_is 1 && err_has "already voided" && err_has "order cancelled"'
lc d1 void orders "$((last + 1))" --reason "not yet"
check "void of an id not handed out: exit 1" eval 'rc_is 1 && err_has "never handed out"'
lc d1 void orders "$first"
check "void without --reason: usage error" usage_error
lc d1 void orders 0 --reason x
check "void 0: usage error" usage_error
lc d1 gaps orders
check "gaps lists the void with its reason" \
  eval 'rc_is 0 && grep -Eq "^$first 1 [0-9T:.-]+Z void order cancelled$" <<<"$OUT"'
lc d1 dump orders
check "dump shows the void after its record" \
  eval 'grep -A1 "^$first 1 [^ ]*Z$" <<<"$OUT" | tail -1 | grep -q "^$first 1 .* void order cancelled$"'
lc d1 --json void orders "$((first + 1))" --reason "quote \" and \\"
check "void --json" json_ok 'o["voided"] == '"$((first + 1))"' and o["reason"] == "quote \" and \\"'
lc d1 --json verify orders
check "verify counts the voids" json_ok 'o["ok"] and o["voids"] == 2'

lc d1 verify never-used
check "verify of an empty counter exits 0" eval 'rc_is 0 && grep -Eq "^records: +0$" <<<"$OUT"'

# ---- prune
for _ in 1 2 3 4 5 6; do lc d2 next p; done
lc d2 dump p; before=$(wc -l <<<"$OUT")
lc d2 prune p --keep 4
check "prune --keep 4 deletes the rest" eval 'rc_is 0 && out_is "p: deleted $((before - 4)) records, kept 4"'
lc d2 dump p
check "dump after prune --keep 4 shows 4 records" eval '[ "$(wc -l <<<"$OUT")" = 4 ]'
low=$(num "$(head -1 <<<"$OUT" | cut -d" " -f1)")
lc d2 --json prune p --below $((low + 2))
check "prune --below deletes the records below (json)" \
  json_ok 'o["counter"] == "p" and o["deleted"] == 2 and o["kept"] == 2'
lc d2 prune p --older-than 30d
check "prune --older-than 30d keeps fresh records" eval 'rc_is 0 && out_is "p: deleted 0 records, kept 2"'
sleep 1.1
lc d2 next p; plast=$(num "$OUT")
lc d2 prune p --older-than 1s
check "prune --older-than 1s deletes the older records" eval 'rc_is 0 && out_is "p: deleted 2 records, kept 1"'
lc d2 prune p --keep 1 --below "$plast" --older-than 0
check "prune never deletes the newest record" eval 'rc_is 0 && out_is "p: deleted 0 records, kept 1"'
mc_flush
lc d2 next p
check "after prune and flush_all, next is above every earlier id" \
  eval 'rc_is 0 && [ "$OUT" -gt "$plast" ]'
lc d2 verify p
check "verify after prune exits 0" eval 'rc_is 0'

# ---- options, environment, defaults
lc d3/deeper/still next x
check "--db creates missing parent directories" eval 'rc_is 0 && [ -d "$TMP/d3/deeper/still" ]'
check "the parents are created with mode 0700" eval '[ "$(stat -c %a "$TMP/d3/deeper")" = 700 ]'
LOGCOUNTER_MEMCACHED=$MC LOGCOUNTER_DB=$TMP/envdb run next envc
check "LOGCOUNTER_MEMCACHED and LOGCOUNTER_DB are used" eval 'rc_is 0 && out_is 1 && [ -d "$TMP/envdb" ]'
XDG_STATE_HOME=$TMP/xdg LOGCOUNTER_MEMCACHED=$MC run next xdgc
check "default log directory is \$XDG_STATE_HOME/logcounter" eval 'rc_is 0 && [ -d "$TMP/xdg/logcounter" ]'
(unset XDG_STATE_HOME; HOME=$TMP/home LOGCOUNTER_MEMCACHED=$MC "$BIN" next homec >/dev/null 2>&1)
check "without XDG_STATE_HOME it is \$HOME/.local/state/logcounter" eval '[ -d "$TMP/home/.local/state/logcounter" ]'
lc d3 --durability sync next s
check "--durability sync works" eval 'rc_is 0 && out_is 1'
LOGCOUNTER_DURABILITY=bogus lc d3 next s
check "a bad LOGCOUNTER_DURABILITY is a usage error" usage_error

# ---- usage errors: exit 2, a message and a usage line on stderr
long=$(printf 'n%.0s' $(seq 201))
usage_case() { local name=$1; shift; lc d4 "$@"; check "usage error: $name" usage_error; }
usage_case "no command"
usage_case "unknown command" frobnicate
usage_case "unknown global option" --frob next
usage_case "unknown command option" next --frob
usage_case "global option without its value" --db
usage_case "next -n 0" next -n 0
usage_case "next -n -1" next -n -1
usage_case "next -n abc" next -n abc
usage_case "next -n 99999999999999999999" next -n 99999999999999999999
usage_case "next -n 1000000001" next -n 1000000001
usage_case "next -n ''" next -n ''
usage_case "next with two names" next a b
usage_case "name of 201 bytes" next "$long"
usage_case "name with a space" next "a b"
usage_case "name with a control character" next "$(printf 'a\001b')"
usage_case "empty name" next ""
usage_case "current without a name" current
usage_case "prune without criteria" prune x
usage_case "prune --keep 0" prune x --keep 0
usage_case "prune --older-than 5y" prune x --older-than 5y
usage_case "prune --below x" prune x --below x
usage_case "advance x notanumber" advance x notanumber
usage_case "advance x 0" advance x 0
usage_case "advance x 2^63" advance x 9223372036854775808
usage_case "advance without a value" advance x
usage_case "--timeout 0" --timeout 0 next
usage_case "--timeout 1e3" --timeout 1e3 next
usage_case "--wait -5" --wait -5 next
usage_case "--durability fast" --durability fast next
usage_case "stats without --server" stats
usage_case "stats with an argument" --server 127.0.0.1:1 stats x
usage_case "--server without a port" --server localhost next
usage_case "--server with port 0" --server 127.0.0.1:0 next
usage_case "--server with a space" --server "127.0.0.1: 9" next
usage_case "--server without its value" --server
LOGCOUNTER_SERVER=nowhere lc d4 next
check "a bad LOGCOUNTER_SERVER is a usage error naming it" \
  eval 'usage_error && err_has "for LOGCOUNTER_SERVER"'
lc d4 stats
check "stats without --server says it needs one" \
  err_has "logcounter: stats needs --server (it shows a running logcounterd's statistics)"
lc d4 next -n -5
check "the message names the option and the bad text" \
  err_has "logcounter: invalid count '-5' for -n (must be 1..1000000000)"
lc d4 next "$(printf 'a\001b')"
check "a bad name is shown with control characters escaped" \
  err_has "logcounter: invalid counter name 'a\\x01b': "
check "usage errors open nothing (no log directory created)" eval '[ ! -e "$TMP/d4" ]'

# ---- runtime errors: exit 1, "logcounter: cannot ..."
SECONDS=0
run --memcached --SERVER=127.0.0.1:1 --timeout 300 --db "$TMP/d5" next
check "memcached on a closed port: exit 1, 'cannot'" runtime_error
check "the failure comes within the timeout" eval '[ $SECONDS -le 3 ]'
"$BIN" --memcached "$MC" --db "$TMP/d5" next >/dev/full 2>"$TMP/err"; RC=$?; ERR=$(cat "$TMP/err"); OUT=
check "next > /dev/full: exit 1, 'cannot write output'" \
  eval 'rc_is 1 && err_has "logcounter: cannot write output: "'
"$BIN" --memcached "$MC" --db "$TMP/d5" next -n 100000 >/dev/full 2>"$TMP/err"; RC=$?; ERR=$(cat "$TMP/err")
check "next -n 100000 > /dev/full: exit 1, 'cannot write output'" \
  eval 'rc_is 1 && err_has "cannot write output: No space left on device"'
SECONDS=0
run --server 127.0.0.1:1 --timeout 300 --db "$TMP/d9" next
check "--server to a closed port: exit 1, 'cannot ... through logcounterd'" \
  eval 'runtime_error && err_has "through logcounterd '"'"'127.0.0.1:1'"'"'"'
check "--server never creates the log directory" eval '[ ! -e "$TMP/d9" ]'
run --server 127.0.0.1:1 --timeout 300 stats
check "stats to a closed port: exit 1, 'cannot read the statistics'" \
  eval 'rc_is 1 && [ -z "$OUT" ] && err_has "logcounter: cannot read the statistics of logcounterd '"'"'127.0.0.1:1'"'"': "'
check "both failures come within the timeout" eval '[ $SECONDS -le 3 ]'
run --server 127.0.0.1:1 restore x
check "restore with --server HOST:PORT is refused before connecting: exit 1" \
  eval 'rc_is 1 && [ -z "$OUT" ] && err_has "give --server the daemon'"'"'s admin socket"'
lc d1 current orders; cur=$OUT
LOGCOUNTER_SERVER=127.0.0.1:1 lc d1 --server '' current orders
check "--server '' overrides LOGCOUNTER_SERVER (a local log)" eval 'rc_is 0 && out_is "$cur"'
touch "$TMP/notadir"
run --memcached "$MC" --db "$TMP/notadir/db" next
check "a log directory under a file: exit 1" runtime_error

# ---- the log directory held by another process
if [ $HAVE_PY = 1 ]; then
  lc d6 next h >/dev/null
  # LevelDB locks DIR/LOCK with fcntl; hold it the same way for 2 s.
  python3 -c '
import fcntl, sys, time
d = sys.argv[1]
f = open(d + "/LOCK", "r+")
fcntl.lockf(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(2)
' "$TMP/d6" "$TMP/held" &
  holder=$!
  for _ in $(seq 50); do [ -e "$TMP/held" ] && break; sleep 0.05; done
  lc d6 --wait 100 next h
  check "a held log with --wait 100: exit 1, in use" \
    eval 'runtime_error && err_has "in use by another process"'
  check "the error carries the library's detail (who holds it)" \
    eval 'grep -Eq "in use by another process \(.+\)$" <<<"$ERR"'
  lc d6 --wait 10000 next h
  check "a held log with --wait 10000: waits and succeeds" eval 'rc_is 0 && out_is 2'
  wait $holder
else
  bad "held log" "no python3 to hold the lock (make deps installs it)"
fi

# ---- a damaged log: verify and dump must say so and exit 1
# A tiny helper writes raw records the way src/base/keys.c lays them out:
# key 'r' NAME '\0' + the block's last value (8 bytes, big-endian), value
# version 1, count (8 bytes), time (8 bytes); with a 5th argument g, a
# ledger entry ('g' instead of 'r'; src/counter/ledger.c); HEXVALUE - deletes the
# key.  Skipped without a compiler.
cat >"$TMP/rawput.c" <<'CSRC'
#include <leveldb/c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* rawput DB NAME LAST HEXVALUE [g] */
int main(int argc, char **argv) {
  char *err = NULL, key[256];
  unsigned char val[64];
  if (argc < 5 || argc > 6 || strlen(argv[2]) > 200) return 2;
  size_t n = strlen(argv[2]), vl = 0;
  leveldb_options_t *o = leveldb_options_create();
  leveldb_t *db = leveldb_open(o, argv[1], &err);
  if (err) { fprintf(stderr, "%s\n", err); return 1; }
  key[0] = argc == 6 ? argv[5][0] : 'r';
  memcpy(key + 1, argv[2], n);
  key[n + 1] = '\0';
  uint64_t last = strtoull(argv[3], NULL, 10);
  for (int i = 0; i < 8; i++) key[n + 2 + i] = (char)(last >> (56 - 8 * i));
  for (const char *p = argv[4]; p[0] && p[1] && vl < sizeof val; p += 2) {
    unsigned x;
    sscanf(p, "%2x", &x);
    val[vl++] = (unsigned char)x;
  }
  leveldb_writeoptions_t *w = leveldb_writeoptions_create();
  if (strcmp(argv[4], "-") == 0)
    leveldb_delete(db, w, key, n + 10, &err);
  else
    leveldb_put(db, w, key, n + 10, (char *)val, vl, &err);
  if (err) { fprintf(stderr, "%s\n", err); return 1; }
  leveldb_close(db);
  return 0;
}
CSRC
if cc -o "$TMP/rawput" "$TMP/rawput.c" -lleveldb 2>/dev/null; then
  lc d8 next k -n 5
  lc d8 next k
  "$TMP/rawput" "$TMP/d8" k 20 0102                  # undecodable: 2 bytes
  lc d8 verify k
  check "verify of a log with an undecodable record exits 1" \
    eval 'rc_is 1 && grep -Eq "^undecodable: +1$" <<<"$OUT" && out_has CORRUPT'
  lc d8 dump k
  check "dump shows the undecodable record and exits 1" \
    eval 'rc_is 1 && out_has "# undecodable record (key value 20)" && err_has "undecodable"'
  lc d8 --json dump k
  check "dump --json marks the undecodable record" \
    eval 'rc_is 1 && json_ok "o.get(\"undecodable\") or o[\"count\"] >= 1" &&
          [ "$(grep -c "^{\"undecodable\":true,\"key\":20," <<<"$OUT")" = 1 ]'
  # Record 4-6 (count 3 under key 6) repeats 4 and 5 of record 1-5.
  "$TMP/rawput" "$TMP/d8" k 6 01000000000000000300000000000000ff
  lc d8 --json verify k
  check "verify reports values logged twice as an overlap, exit 1" \
    eval 'rc_is 1 && json_ok "not o[\"ok\"] and o[\"overlaps\"] == 1"'
  # The gap ledger: advance's entry deleted by hand leaves a gap that
  # nothing explains; an entry over logged values is corruption.
  lc dg next g9
  lc dg advance g9 50
  lc dg next g9
  lc dg verify g9
  check "verify: advance's gap is explained (exit 0)" \
    eval 'rc_is 0 && out_has "causes:       advance 1" && out_has "status:       ok"'
  "$TMP/rawput" "$TMP/dg" g9 49 - g
  lc dg verify g9
  check "verify: a ledger entry deleted by hand leaves an unexplained gap, exit 1" \
    eval 'rc_is 1 && out_has "unexplained:  1 gaps, 48 values" && out_has "UNEXPLAINED GAPS"'
  lc dg gaps g9
  check "gaps lists it as unexplained and exits 1" \
    eval 'rc_is 1 && out_is "2-49 48 - unexplained" && err_has "unexplained"'
  "$TMP/rawput" "$TMP/dg" g9 1 01020000000000000001000000000000000a g
  lc dg --json verify g9
  check "verify: a gap entry over a logged value is corruption" \
    eval 'rc_is 1 && json_ok "o[\"ledger_conflicts\"] == 1"'
else
  bad "damaged log" "cannot compile a LevelDB helper (cc, libleveldb-dev: make deps)"
fi

# ---- four processes at once on one log directory
# 4 x 50: each run waits for the log's lock (--wait, default 10 s), so
# the four take turns from first to last; 4 x 200 took 18 s, one turn at
# a time, to show no more.
PER=50
SECONDS=0
for k in 1 2 3 4; do
  (
    for _ in $(seq $PER); do
      "$BIN" --memcached "$MC" --db "$TMP/d7" next c >>"$TMP/ids.$k" 2>>"$TMP/conc.err" ||
        echo "exit $?" >>"$TMP/conc.fail"
    done
  ) &
done
wait
all=$(cat "$TMP"/ids.*)
OUT=$all ERR=$(head -c 300 "$TMP/conc.err" 2>/dev/null) RC=-
check "4 x $PER concurrent 'next' all exit 0" eval '[ ! -e "$TMP/conc.fail" ]'
check "the $((4 * PER)) ids printed are $((4 * PER)) lines" eval '[ "$(grep -c "^[0-9][0-9]*$" <<<"$all")" = $((4 * PER)) ]'
check "the $((4 * PER)) ids are distinct" eval '[ -z "$(sort <<<"$all" | uniq -d)" ]'
echo "     (concurrent runs took ${SECONDS}s)"
lc d7 --json verify c
check "verify after the concurrent runs: $((4 * PER)) ids, no overlaps" \
  json_ok 'o["ok"] and o["ids"] == '"$((4 * PER))"' and o["overlaps"] == 0'

# ---- --server: next and current through a logcounterd, stats, refusals
# lcd_answers PORT: the daemon on PORT answers "version" with VERSION.
lcd_answers() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'version\r\n' >&3 &&
    IFS= read -r -t 2 line <&3 && [[ $line == VERSION* ]]) 2>/dev/null
}
# start_daemon: logcounterd on a free loopback port (DPORT) and on the
# unix socket $TMP/lcd.sock, log directory $TMP/dd, our memcached; waits
# until it answers.
start_daemon() {
  local tries=0
  while [ $tries -lt 20 ]; do
    tries=$((tries + 1))
    DPORT=$(free_port) || continue
    "$LCD" -l "127.0.0.1:$DPORT" -s "$TMP/lcd.sock" --memcached "$MC" \
      --db "$TMP/dd" </dev/null >/dev/null 2>>"$TMP/lcd.err" &
    LCD_PID=$!
    for _ in $(seq 200); do
      kill -0 "$LCD_PID" 2>/dev/null || break      # exited: port taken?
      lcd_answers "$DPORT" && return 0
      sleep 0.05
    done
    stop_daemon
  done
  return 1
}

if [ ! -x "$LCD" ]; then
  bad "--server and stats against a logcounterd" "$LCD not built (make builds it)"
elif ! start_daemon; then
  bad "logcounterd starts and answers" "$(tail -c 300 "$TMP/lcd.err" 2>/dev/null)"
else
  ok "logcounterd starts and answers (port $DPORT, pid $LCD_PID)"
  SRV=127.0.0.1:$DPORT
  # srv ARGS...: the tool with --server and no log directory at all (a
  # HOME without one, no XDG_STATE_HOME): --server must not need --db.
  srv() { (unset XDG_STATE_HOME; HOME=$TMP/srvhome run --server "$SRV" "$@"
           printf '%s\n' "$RC" >"$TMP/rc"); RC=$(cat "$TMP/rc")
          OUT=$(cat "$TMP/out"); ERR=$(cat "$TMP/err"); }
  srv next r; first=$(num "$OUT")
  check "next through --server on a fresh counter prints 1" eval 'rc_is 0 && out_is 1'
  srv next r -n 5; block=$OUT
  check "next -n 5 through --server: 5 consecutive ids after the previous one" \
    eval 'rc_is 0 && [ "$(echo "$block" | tr "\n" " ")" = "$(seq -s " " $((first + 1)) $((first + 5))) " ]'
  last=$(num "$(tail -1 <<<"$block")")
  srv --json next r -n 3
  check "--json next -n 3 through --server: the next block" \
    json_ok 'o["counter"] == "r" and o["count"] == 3 and o["first"] == '"$((last + 1))"' and o["last"] == '"$((last + 3))"
  last=$(num "$(json_get last)")
  srv current r
  check "current through --server is the last id handed out" eval 'rc_is 0 && out_is "$last"'
  srv --json current r
  check "--json current through --server" json_ok 'o["counter"] == "r" and o["current"] == '"$last"
  srv current never-used
  check "current through --server of an unused counter is 0" eval 'rc_is 0 && out_is 0'
  check "--server needs no log directory (none created)" eval '[ ! -e "$TMP/srvhome" ]'
  srv next tally:x
  check "next tally:NAME through --server is refused (a tally in the daemon)" \
    eval '[ "$RC" -ne 0 ] && [ -z "$OUT" ] && err_has "are tallies in logcounterd"'
  srv current tally:x
  check "current tally:NAME through --server is refused" \
    eval '[ "$RC" -ne 0 ] && [ -z "$OUT" ] && err_has "are tallies in logcounterd"'
  run --server "$TMP/lcd.sock" next r
  check "--server with the daemon's unix socket" eval 'rc_is 0 && out_is $((last + 1))'
  last=$(num "$OUT")
  LOGCOUNTER_SERVER=$SRV run --db "$TMP/d10" next r
  check "LOGCOUNTER_SERVER is used (and --db ignored)" \
    eval 'rc_is 0 && out_is $((last + 1)) && [ ! -e "$TMP/d10" ]'
  last=$(num "$OUT")
  # Several runs at once and one after another: every id unique, blocks
  # contiguous.
  # (wait for these runs by pid: a bare wait would wait for the daemon)
  rm -f "$TMP"/sids.* "$TMP/sconc.fail" "$TMP/sconc.err"
  runs=()
  for k in 1 2 3 4; do
    (
      for _ in $(seq 25); do
        "$BIN" --server "$SRV" next r -n 2 >>"$TMP/sids.$k" 2>>"$TMP/sconc.err" ||
          echo "exit $?" >>"$TMP/sconc.fail"
      done
    ) &
    runs+=($!)
  done
  wait "${runs[@]}"
  all=$(cat "$TMP"/sids.*)
  OUT=$all ERR=$(head -c 300 "$TMP/sconc.err" 2>/dev/null) RC=-
  check "4 x 25 concurrent 'next -n 2' through --server all exit 0" eval '[ ! -e "$TMP/sconc.fail" ]'
  check "they printed 200 ids, all above the earlier ones" \
    eval '[ "$(grep -c "^[0-9][0-9]*$" <<<"$all")" = 200 ] && [ "$(sort -n <<<"$all" | head -1)" -gt "$last" ]'
  check "the 200 ids are distinct" eval '[ -z "$(sort <<<"$all" | uniq -d)" ]'
  pairs_ok=1
  for k in 1 2 3 4; do
    paste - - <"$TMP/sids.$k" | awk '$2 != $1 + 1 { bad = 1 } END { exit bad }' || pairs_ok=0
  done
  check "each run's block of 2 is contiguous" eval '[ $pairs_ok = 1 ]'
  top=$(sort -n <<<"$all" | tail -1)
  srv current r
  check "current through --server is the highest id handed out" eval 'rc_is 0 && out_is "$top"'
  total=$(( $(grep -c "" <<<"$all") + last ))

  srv stats
  check "stats through --server prints 'name value' lines with the daemon's pid" \
    eval 'rc_is 0 && grep -qx "pid $LCD_PID" <<<"$OUT" && ! grep -Evq "^[a-z_]+ [^ ]+$" <<<"$OUT"'
  srv --json stats
  check "--json stats prints one object with the pid as a number" \
    eval 'rc_is 0 && [ "$(wc -l <<<"$OUT")" = 1 ] && json_ok "o[\"pid\"] == $LCD_PID"'
  run --server "$TMP/lcd.sock" stats
  check "stats through the unix socket" eval 'rc_is 0 && grep -qx "pid $LCD_PID" <<<"$OUT"'

  for c in "restore r" "advance r 100" "prune r --keep 1" "verify r" "dump r"; do
    # shellcheck disable=SC2086
    srv $c
    check "${c%% *} through a data port (--server HOST:PORT): exit 1, names the admin socket" \
      eval 'rc_is 1 && [ -z "$OUT" ] && err_has "logcounter: cannot ${c%% *} with --server" && err_has "not available through this server" && err_has "--admin-socket PATH" && err_has "--db DIR"'
  done
  srv prune r
  check "usage errors still come first with --server (exit 2)" usage_error

  stop_daemon
  check "logcounterd exits 0 on SIGTERM" eval '[ "$LCD_RC" = 0 ]'
  # With the daemon stopped, its log is the local tool's again.
  lc dd --json verify r
  check "the daemon's log, verified with --db after it stopped: every id, no overlaps" \
    json_ok 'o["ok"] and o["highest"] == '"$top"' and o["ids"] == '"$total"' and o["overlaps"] == 0'
  lc dd next r
  check "next with --db on the daemon's log continues above its ids" \
    eval 'rc_is 0 && [ "$OUT" -gt "$top" ]'
fi

# ---- tallies: write-behind counts ------------------------------
lc tl tally add views 5
check "tally add prints the change as pending" eval 'rc_is 0 && out_is "views: +5 (pending until a flush)"'
lc tl tally add views -2
check "tally add takes a negative DELTA without --" eval 'rc_is 0 && out_has "views: -2"'
lc tl tally add likes -- -7
check "tally add NAME -- DELTA" eval 'rc_is 0'
lc tl tally get views
check "tally get before a flush: total 0, pending +3" eval 'rc_is 0 && out_is "views: total 0, pending +3, losses 0, lost +0 -0"'
lc tl tally flush
check "tally flush applies both tallies" eval 'rc_is 0 && out_is "flushed 2 tallies"'
lc tl --json tally get views
check "tally get --json after the flush: total 3, nothing pending" \
  json_ok 'o["tally"] == "views" and o["total"] == 3 and o["pending"] == 0 and o["losses"] == 0'
lc tl tally flush --sweep
check "a second flush has nothing to apply" eval 'rc_is 0 && out_is "flushed 0 tallies"'
for t in a1:10 a2:30 b1:20 ab:-4; do
  lc tl tally add "${t%%:*}" "${t##*:}"
done
lc tl tally flush
lc tl tally list
check "tally list: every tally by name" eval 'rc_is 0 && out_is "$(printf "a1 10\na2 30\nab -4\nb1 20\nlikes -7\nviews 3")"'
lc tl tally list --top 2
check "tally list --top 2: the two largest" eval 'rc_is 0 && out_is "$(printf "a2 30\nb1 20")"'
lc tl tally list --prefix a --min 0
check "tally list --prefix a --min 0" eval 'rc_is 0 && out_is "$(printf "a1 10\na2 30")"'
lc tl tally list --by-total --min -5 --max 10
check "tally list --by-total --min -5 --max 10" eval 'rc_is 0 && out_is "$(printf "a1 10\nviews 3\nab -4")"'
lc tl tally list --offset 1 --limit 2
check "tally list --offset 1 --limit 2" eval 'rc_is 0 && out_is "$(printf "a2 30\nab -4")"'
lc tl --json tally list --top 1
check "tally list --json: one object per line" json_ok 'o["tally"] == "a2" and o["total"] == 30'
# memcached loses a pending change: counted, never applied twice
lc tl tally add views 4
if exec 3<>"/dev/tcp/127.0.0.1/$PORT" 2>/dev/null; then
  printf 'flush_all\r\n' >&3 && read -r _ <&3
  exec 3>&-
  lc tl tally add views 1
  lc tl tally flush
  lc tl tally get views
  # the +4 was acknowledged by an earlier process: its carry (written at
  # lc_close) lets the next one measure the loss
  check "a pending change lost by memcached shows as a loss, and its amount" eval 'rc_is 0 && out_is "views: total 4, pending +0, losses 1, lost +4 -0 (memcached lost pending changes)"'
else
  bad "tally loss" "cannot reach memcached through /dev/tcp"
fi
lc tl tally add x 9223372036854775807
lc tl tally add x 1
check "tally add past 2^63-1: exit 1, a clear error" eval 'rc_is 1 && [ -z "$OUT" ] && err_has "out of the signed 64-bit range"'
lc tl tally add views 0
check "tally add with delta 0 is a usage error" usage_error
lc tl tally add "a b" 1
check "tally add with a bad name is a usage error" usage_error
lc tl tally add views 1x
check "tally add with a non-number is a usage error" usage_error
lc tl tally add views 9223372036854775808
check "tally add with a delta beyond 64 bits is a usage error" usage_error
lc tl tally frob
check "an unknown tally command is a usage error" usage_error
lc tl tally
check "tally without a command is a usage error" usage_error
lc tl tally list --top 0
check "tally list --top 0 is a usage error" usage_error
run tally --help
check "tally --help: usage on stdout, exit 0" eval 'rc_is 0 && out_has "usage: logcounter tally"'
run --server 127.0.0.1:1 tally get views
check "tally with --server: refused, the daemon owns the log" eval 'rc_is 1 && [ -z "$OUT" ]'

# ---- backup: a copy marked restored; no id twice from it
lc bk next bo -n 5
lc bk backup "$TMP/bk-copy"
check "backup prints keys, records, bytes and the directory" \
  eval 'rc_is 0 && [[ $OUT =~ ^backed\ up\ [0-9]+\ keys\ \([0-9]+\ records,\ [0-9]+\ bytes\)\ as\ of\ .*\ to\ $TMP/bk-copy$ ]]'
lc bk backup "$TMP/bk-copy"
check "backup to an existing directory is refused" \
  eval 'runtime_error && err_has "exists"'
lc bk --json backup "$TMP/bk-json"
check "--json backup prints {keys,records,bytes,time_us,time,dir}" \
  json_ok 'o["records"] >= 1 and o["keys"] > o["records"] and o["dir"].endswith("bk-json")'
lc bk next bo
bolast=$(num "$OUT")
lc bk-copy next bo
check "the copy refuses a counter the original claimed (EOWNED, names the original, says adopt)" \
  eval 'runtime_error && err_has "the original this restored log was copied from" && err_has "adopt bo"'
lc bk next bo
check "the original, still running, goes on" eval 'rc_is 0 && [ "$OUT" -gt "$bolast" ]'
bolast=$(num "$OUT")
lc bk-copy adopt bo
check "adopt takes the original's claim over" rc_is 0
lc bk next bo
check "then the original is refused (its claim was taken over)" \
  eval 'runtime_error && err_has "owned by log"'
lc bk-copy next bo
check "the copy goes on above the original while memcached holds the counter" \
  eval 'rc_is 0 && [ "$OUT" -gt "$bolast" ]'
bolast=$(num "$OUT")
mc_flush
lc bk-json next bo
check "the copy refuses a counter memcached lost (EBEHIND, says adopt)" \
  eval 'runtime_error && err_has "adopt bo --above"'
lc bk-json adopt bo --above "$bolast"
lc bk-json next bo
check "after adopt --above the last id, the copy goes on above it" \
  eval 'rc_is 0 && out_is "$((bolast + 1))"'
mkdir "$TMP/bk-dead" && : >"$TMP/bk-dead/BACKUP-INCOMPLETE"
lc bk-dead next bo
check "a backup's directory still holding its mark (it died before its first write) is refused, not opened as a new log" \
  eval 'runtime_error && err_has "incomplete backup" && [ ! -e "$TMP/bk-dead/CURRENT" ]'
run backup
check "backup without DIR is a usage error" usage_error
run --server 127.0.0.1:1 backup "$TMP/bk-x"
check "backup with --server: refused, the daemon owns the log" eval 'rc_is 1 && [ -z "$OUT" ]'

# ---- packaging: the .pc follows PREFIX (make install PREFIX=X after make)
make -s BUILD="$TMP/pcb" PREFIX=/opt/lc-a "$TMP/pcb/logcounter.pc" >/dev/null 2>&1
make -s BUILD="$TMP/pcb" PREFIX=/opt/lc-b "$TMP/pcb/logcounter.pc" >/dev/null 2>&1
OUT=$(cat "$TMP/pcb/logcounter.pc" 2>/dev/null) ERR="" RC=-
check "logcounter.pc is rewritten when PREFIX changes" \
  eval 'grep -q "^prefix=/opt/lc-b" <<<"$OUT" && ! grep -q /opt/lc-a <<<"$OUT"'

echo "cli: $passed passed, $failed failed"
[ "$failed" = 0 ]
