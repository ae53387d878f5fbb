#!/bin/bash
# stop.sh - what stopping and starting a logcounterd with many counters in
# memory costs, and that it loses nothing (issue 42's "SIGTERM with a
# million counters").  For each run: a private memcached and a fresh log
# on free 127.0.0.1 ports, N new names by "incr NAME 1" (8 connections
# pipelined 200 deep, --idle-evict 0, the default prefetch), the daemon's
# RssAnon growth per counter (and how much of it is the log's LevelDB:
# stats' log_memory_bytes), SIGTERM timed to the exit (and its exit
# status), memcached flushed, a restart timed to "ready", and 2,000
# sampled names asked once more: each must answer 2 (exactly last + 1).
#
#   bench/stop.sh [N [RUNS]]      N default 1000000, RUNS default 2
#
# Run it alone, as every bench (bench/README.md).  Needs python3.
set -u
cd "$(dirname "$0")/.." || exit 1
N=${1:-1000000} RUNS=${2:-2}
BUILD=${BUILD:-build}
W=$(mktemp -d "${TMPDIR:-/tmp}/lcstop.XXXXXX") || exit 1
. tests/port.sh
MP=$(LC_MEMCACHED_MB=4096 tests/memcached.sh start "$W") || exit 1
trap 'kill "${pid:-0}" 2>/dev/null; tests/memcached.sh stop "$W"; rm -rf "$W"' EXIT
flush() { exec 3<>/dev/tcp/127.0.0.1/"$MP"; printf 'flush_all\r\n' >&3; read -r -t 2 _ <&3; exec 3>&-; }
start() { # start DB: the daemon on $DP, its pid in $pid, ready
  "$BUILD"/logcounterd --db "$1" --memcached "--SERVER=127.0.0.1:$MP" \
    -l "127.0.0.1:$DP" --max-counters $((2 * N)) --idle-evict 0 \
    >>"$W/log" 2>&1 &
  pid=$!
  until grep -q " ready: " "$W/log" 2>/dev/null; do sleep 0.01; done
}
now() { date +%s.%N; }
echo "stop: $N counters, $RUNS runs; $(uptime)"
for r in $(seq "$RUNS"); do
  flush; rm -rf "$W/db" "$W/log"
  DP=$(free_port)
  start "$W/db"
  r0=$(awk '/RssAnon/{print $2}' /proc/$pid/status)
  python3 - "$DP" "$N" 8 load <<'PY' || exit 1
import socket, sys, threading
port, n, conns = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
bad = [0]
def run(k):
    s = socket.create_connection(("127.0.0.1", port)); f = s.makefile("rb")
    names = list(range(k, n, conns))
    for i in range(0, len(names), 200):
        chunk = names[i:i + 200]
        s.sendall(b"".join(b"incr m%d 1\r\n" % j for j in chunk))
        for j in chunk:
            if f.readline().strip() != b"1": bad[0] += 1
ts = [threading.Thread(target=run, args=(k,)) for k in range(conns)]
[t.start() for t in ts]; [t.join() for t in ts]
sys.exit(1 if bad[0] else 0)
PY
  r1=$(awk '/RssAnon/{print $2}' /proc/$pid/status)
  lm=$(exec 3<>/dev/tcp/127.0.0.1/"$DP"; printf 'stats\r\n' >&3
       while read -r -t 5 a b c <&3; do
         [ "$b" = log_memory_bytes ] && echo "${c%$'\r'}"
         [ "${a%$'\r'}" = END ] && break; done)
  t0=$(now); kill -TERM "$pid"; wait "$pid"; rc=$?; t1=$(now)
  took=$(grep -o 'closed in [0-9.]* s' "$W/log" | tail -1)
  flush
  > "$W/log"; t2=$(now); start "$W/db"; t3=$(now)
  badn=$(python3 - "$DP" "$N" <<'PY'
import socket, sys, random
s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); f = s.makefile("rb")
random.seed(11); bad = 0
for j in random.sample(range(int(sys.argv[2])), 2000):
    s.sendall(b"incr m%d 1\r\n" % j); bad += f.readline().strip() != b"2"
print(bad)
PY
)
  kill -TERM "$pid"; wait "$pid"
  printf 'stop: run %d: RssAnon %d B a counter (of it the log'"'"'s LevelDB %d B, the rest %d B); SIGTERM to exit %s: %.2f s (%s); restart to ready %.3f s; sampled names not at last + 1: %s of 2000\n' \
    "$r" $(( (r1 - r0) * 1024 / N )) $(( ${lm:-0} / N )) \
    $(( ((r1 - r0) * 1024 - ${lm:-0}) / N )) "$rc" "$(echo "$t1 - $t0" | bc)" "$took" \
    "$(echo "$t3 - $t2" | bc)" "$badn"
done
