#!/bin/bash
# soak.sh - logcounterd under full load for SOAK_SECONDS (default 60) while
# memcached is hit every SOAK_FAULT_EVERY seconds (default 4) by, in turn,
# flush_all, SIGSTOP past the timeout then SIGCONT, and SIGKILL with a
# restart on the same port.  Samples the daemon's resident memory every
# second and reports it after a warm-up (the first half of the run:
# LevelDB fills its 4 MB memtable first) and at the end.  Passes when:
# the load client (SOAK_CONNS connections, 4 requests deep, and one more
# connection 1,000 deep) saw its replies strictly increase per connection
# and no id twice across all connections; the daemon still answers "stats" at the
# end; it exits 0 on SIGTERM; `logcounter verify`
# finds the log sound; and resident memory grew less than SOAK_RSS_SLACK_KB
# (default 16384) after the warm-up.  Run by `make soak`; not part of
# `make test` (it takes a minute).  Ends with "soak: N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
SECS=${SOAK_SECONDS:-60} EVERY=${SOAK_FAULT_EVERY:-4} SLACK=${SOAK_RSS_SLACK_KB:-16384}
CONNS=${SOAK_CONNS:-32}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/soak.XXXXXX") || exit 1
DPID="" LPID=""
PPID_=""
cleanup() {
  [ -n "$LPID" ] && kill "$LPID" 2>/dev/null
  [ -n "$PPID_" ] && kill "$PPID_" 2>/dev/null
  [ -n "$DPID" ] && kill -KILL "$DPID" 2>/dev/null
  [ -f "$TMP/memcached.pid" ] && kill -CONT "$(cat "$TMP/memcached.pid")" 2>/dev/null
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MPORT=$(tests/memcached.sh start "$TMP") || { echo "soak: no memcached" >&2; exit 1; }
mpid() { cat "$TMP/memcached.pid"; }

passed=0 failed=0
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   - $name"
  else failed=$((failed + 1)); echo "FAIL - $name"; fi
}

DPORT=$(free_port) || { echo "soak: no free port" >&2; exit 1; }
"$BUILD/logcounterd" --db "$TMP/db" --memcached "--SERVER=127.0.0.1:$MPORT" \
  --timeout 500 -l "127.0.0.1:$DPORT" 2>"$TMP/daemon.log" &
DPID=$!
for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$DPORT") 2>/dev/null && break; sleep 0.05; done

"$BUILD/tests/lcd_client" load -p "$DPORT" -k soak -c "$CONNS" -d 4 -t "$SECS" -e \
  -o "$TMP/ids" >"$TMP/load.out" 2>&1 &
LPID=$!
# One more connection pipelines 1,000 requests deep on the same counter.
"$BUILD/tests/lcd_client" load -p "$DPORT" -k soak -c 1 -d 1000 -t "$SECS" -e \
  -o "$TMP/ids.pipe" >"$TMP/pipe.out" 2>&1 &
PPID_=$!

rss() { awk '/^VmRSS:/ {print $2}' "/proc/$DPID/status" 2>/dev/null; }
faults=(flush stop kill) nf=0 warm_at=$((SECS / 2)) warm="" max=0
for t in $(seq 1 "$SECS"); do
  sleep 1
  r=$(rss); [ -n "$r" ] || break
  [ "$r" -gt "$max" ] && max=$r
  [ "$t" -eq "$warm_at" ] && warm=$r
  if [ $((t % EVERY)) -eq 0 ] && [ "$t" -lt "$SECS" ]; then
    f=${faults[$((nf % 3))]}; nf=$((nf + 1))
    case $f in
    flush) printf 'flush_all\r\nquit\r\n' | timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$MPORT; cat >&3; cat <&3" >/dev/null ;;
    stop) kill -STOP "$(mpid)"; sleep 1.5; kill -CONT "$(mpid)" ;;
    kill) kill -KILL "$(mpid)"; sleep 0.2
          memcached -l 127.0.0.1 -p "$MPORT" -U 0 -M -m 64 $([ "$(id -u)" = 0 ] && echo -u root) \
            -d -P "$TMP/memcached.pid" ;;
    esac
    echo "# t=${t}s: memcached $f (rss ${r} kB)"
  fi
done
end=$(rss)
wait "$LPID"; lrc=$?; LPID=""
cat "$TMP/load.out"
check "load client: per-connection order and replies (exit $lrc)" test "$lrc" -eq 0
wait "$PPID_"; prc=$?; PPID_=""
cat "$TMP/pipe.out"
check "pipelining client (depth 1000): order and replies (exit $prc)" test "$prc" -eq 0
total=$(cat "$TMP/ids" "$TMP/ids.pipe" | wc -l)
dups=$(sort -n "$TMP/ids" "$TMP/ids.pipe" | uniq -d | wc -l)
check "no id twice among $total acknowledged ids ($dups repeated)" test "$total" -gt 0 -a "$dups" -eq 0
stats=$(printf 'stats\r\nquit\r\n' | timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$DPORT; cat >&3; cat <&3")
check "the daemon answers stats at the end" grep -q '^END' <<<"$stats"
grow=$(( ${end:-0} - ${warm:-0} ))
echo "# resident memory: ${warm:-?} kB after warm-up (${warm_at} s), ${end:-?} kB at the end," \
     "max ${max} kB: growth ${grow} kB over $((SECS - warm_at)) s; $nf memcached faults"
check "resident memory growth after warm-up ${grow} kB < ${SLACK} kB" test -n "$end" -a "$grow" -lt "$SLACK"
kill -TERM "$DPID"; wait "$DPID"; drc=$?; DPID=""
check "the daemon exits 0 on SIGTERM (exit $drc)" test "$drc" -eq 0
"$BUILD/logcounter" --memcached "--SERVER=127.0.0.1:$MPORT" --db "$TMP/db" verify soak >"$TMP/verify" 2>&1
check "logcounter verify finds the log sound" test $? -eq 0
echo "soak: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
