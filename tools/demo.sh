#!/bin/bash
# demo.sh - what `make run` shows: the logcounter CLI doing its main job,
# a tally, then logcounterd serving the memcached protocol to a stock client
# (ids, and a tally changed with incr/decr tally:NAME and applied by the
# daemon's flusher).
#
# Uses $LOGCOUNTER_MEMCACHED when it is set; otherwise starts a private
# memcached (tests/memcached.sh) and stops it on exit.  The log goes to a
# fresh temporary directory, removed on exit.  Every command is echoed as
# it is run; any failing step stops the demo with a non-zero status.
# Only a memcached the demo started itself is ever flushed.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BIN=$PWD/$BUILD/logcounter
[ -x "$BIN" ] || { echo "demo: $BIN not found; run make first" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/logcounter-demo.XXXXXX")
private=""
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  [ -n "$private" ] && tests/memcached.sh stop "$TMP"
  rm -rf "$TMP"
}
trap cleanup EXIT

if [ -z "${LOGCOUNTER_MEMCACHED:-}" ]; then
  private=$(tests/memcached.sh start "$TMP")
  export LOGCOUNTER_MEMCACHED="--SERVER=127.0.0.1:$private"
fi
export LOGCOUNTER_DB=$TMP/log
unset LOGCOUNTER_DURABILITY

step=0
say() { step=$((step + 1)); printf '\n== %d. %s\n' "$step" "$*"; }
note() { printf '   (%s)\n' "$*"; }
# run ARGS...: echoes and runs "logcounter ARGS"; its output is indented.
run() {
  echo "\$ logcounter $*"
  "$BIN" "$@" | sed 's/^/  /'
}

echo "logcounter demo: unique serial numbers, counted in memcached and"
echo "logged to LevelDB before they are handed out."
if [ -n "$private" ]; then
  echo "memcached: a private one on 127.0.0.1:$private (started for this demo)"
else
  echo "memcached: $LOGCOUNTER_MEMCACHED (from LOGCOUNTER_MEMCACHED)"
fi
echo "log:       $LOGCOUNTER_DB (LOGCOUNTER_DB, a temporary directory)"

say "Allocate ids: one, then a block of three"
run next orders
run next orders -n 3
last=$("$BIN" current orders)

say "Where the counter stands"
run current orders

say "memcached loses everything"
if [ -n "$private" ]; then
  echo "(sending 'flush_all' to memcached 127.0.0.1:$private)"
  exec 3<>"/dev/tcp/127.0.0.1/$private"
  printf 'flush_all\r\n' >&3
  read -r reply <&3
  exec 3<&-
  echo "  ${reply%$'\r'}"
  [[ $reply == OK* ]]
  say "Allocate again: the counter is restored from the log"
else
  note "skipped: this memcached is not ours to flush"
  say "Allocate again"
fi
out=$("$BIN" next orders -n 2)
echo "\$ logcounter next orders -n 2"
sed 's/^/  /' <<<"$out"
first=$(head -1 <<<"$out")
if [ "$first" -gt "$last" ]; then
  note "$first > $last: the new ids continue above every id handed out before"
else
  echo "demo: expected an id above $last, got $first" >&2
  exit 1
fi

say "The audit trail: one record per allocation (FIRST-LAST COUNT TIME)"
run dump orders

say "Prune old records, keeping the newest two"
run prune orders --keep 2
run dump orders

say "Check the log"
run verify orders

say "Skip ahead on purpose, then ask why values are missing (the gap ledger)"
run advance orders 1000
run next orders
run gaps orders

say "A tally: write-behind counts, applied to the log in bundles"
run tally add views 5
run tally add views -2
run tally get views
run tally flush
run tally get views
note "one log write applied both changes; the total is now durable"

say "The daemon: logcounterd owns a log, any memcached client allocates"
port=0
for _ in $(seq 20); do
  p=$((20000 + RANDOM % 30000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ "$port" -ne 0 ] || { echo "demo: no free port for logcounterd" >&2; exit 1; }
echo "\$ logcounterd --db $TMP/daemon-log -l 127.0.0.1:$port &"
"$PWD/$BUILD/logcounterd" --db "$TMP/daemon-log" --memcached "$LOGCOUNTER_MEMCACHED" \
  -l "127.0.0.1:$port" 2>"$TMP/logcounterd.log" &
daemon=$!
for _ in $(seq 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
echo "\$ printf 'incr invoices 3\\r\\n' | nc 127.0.0.1 $port    # the memcached text protocol"
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'incr invoices 3\r\n' >&3
read -r reply <&3
exec 3<&-
echo "  ${reply%$'\r'}"
note "the last id of the block of three"
echo "\$ memccat --servers=127.0.0.1:$port invoices    # libmemcached's own tool"
memccat --servers="127.0.0.1:$port" invoices | sed 's/^/  /'
run --server "127.0.0.1:$port" next invoices

say "A tally through the daemon: incr/decr on a tally:NAME key"
# ask LINE: one request on its own connection; prints the reply lines.
ask() {
  echo "\$ printf '$1\\r\\n' | nc 127.0.0.1 $port"
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf '%s\r\n' "$1" >&3
  local line
  while IFS= read -r -t 5 line <&3; do
    line=${line%$'\r'}
    echo "  $line"
    [[ $1 == get* && $line != END && $line != *ERROR* ]] || break
  done
  exec 3<&-
}
ask "incr tally:likes 10"
ask "decr tally:likes 3"
note "each answers the tally's total after the change"
ask "get tally:likes"
echo "\$ memccat --servers=127.0.0.1:$port tally:likes"
memccat --servers="127.0.0.1:$port" tally:likes | sed 's/^/  /'
applied=""
for _ in $(seq 100); do     # the flusher runs every --flush-interval (1 s)
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'stats tally likes\r\n' >&3
  stats=""
  while IFS= read -r -t 5 line <&3; do
    line=${line%$'\r'}
    [ "$line" = END ] && break
    stats+="$line"$'\n'
  done
  exec 3<&-
  if grep -qx "STAT total 7" <<<"$stats" && grep -qx "STAT pending 0" <<<"$stats"; then
    applied=1; break
  fi
  sleep 0.2
done
echo "\$ printf 'stats tally likes\\r\\n' | nc 127.0.0.1 $port"
printf '%s' "$stats" | sed 's/^/  /'
[ -n "$applied" ] || { echo "demo: the flusher did not apply the tally" >&2; exit 1; }
note "the daemon's flusher (every --flush-interval, 1 s) applied the changes to its log"
kill -TERM "$daemon"
wait "$daemon"
daemon=""
note "SIGTERM: the daemon answered what it had read, flushed its tallies, closed its log, exited 0"
run --db "$TMP/daemon-log" tally get likes

printf '\nDone.  Try: %s --help\n' "$BUILD/logcounter"
