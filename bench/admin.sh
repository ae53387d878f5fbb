#!/bin/bash
# admin.sh - what long admin commands cost allocation: logcounterd with its
# admin socket and a log of N planted records of one counter (default
# 10,000,000; BENCH_ADMIN_RECORDS), and 8 connections allocating one id at
# a time from that counter (tests/daemon/admin_load.py) while the admin
# socket runs, in turn, `dump`, `verify` and `prune --keep 1000` of it.
# Prints, per command, its time and the clients' waits (median, 99th
# percentile, largest, and when the largest began, in seconds from the
# start of the window) in the 2 s before it and while it ran.
# BENCH_ADMIN_CMDS: the commands, comma-separated (default the three).  Run it alone
# on the machine (uptime below 0.5), as every benchmark here.
#   bench/admin.sh            BUILD=build (make all build/tests/lc_plant)
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/port.sh
BUILD=${BUILD:-build}
N=${BENCH_ADMIN_RECORDS:-10000000}
CLI=$BUILD/logcounter DAEMON=$BUILD/logcounterd PLANT=$BUILD/tests/lc_plant
LOAD="/usr/bin/python3 tests/daemon/admin_load.py"
for f in "$CLI" "$DAEMON" "$PLANT"; do
  [ -x "$f" ] || { echo "admin.sh: $f not built (make all $PLANT)" >&2; exit 1; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench_admin.XXXXXX")
DPID=""
trap '[ -n "$DPID" ] && kill -9 $DPID 2>/dev/null; tests/memcached.sh stop "$TMP"; rm -rf "$TMP"' EXIT
MCPORT=$(tests/memcached.sh start "$TMP")
MC="--SERVER=127.0.0.1:$MCPORT"
echo "# load before: $(uptime)"
"$CLI" --db "$TMP/db" --memcached "$MC" next big >/dev/null
t0=$SECONDS
"$PLANT" "$TMP/db" big 2 "$N"
echo "# planted $N records in $((SECONDS - t0)) s"
DPORT=$(free_port)
"$DAEMON" --db "$TMP/db" --memcached "$MC" -l "127.0.0.1:$DPORT" \
  --admin-socket "$TMP/admin.sock" 2>"$TMP/daemon.log" &
DPID=$!
for _ in $(seq 600); do [ -S "$TMP/admin.sock" ] && break; sleep 0.05; done
A="$CLI --server $TMP/admin.sock"
IFS=, read -r -a cmds <<<"${BENCH_ADMIN_CMDS:-dump big,verify big,prune big --keep 1000}"
for cmd in "${cmds[@]}"; do
  # shellcheck disable=SC2086
  out=$($LOAD during "$DPORT" --names big --conns 8 --before 2 -- $A $cmd)
  echo "$cmd: $out"
done
kill "$DPID"; wait "$DPID" || true; DPID=""
