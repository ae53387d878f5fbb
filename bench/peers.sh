#!/bin/bash
# peers.sh - starts and stops the benchmark's peers: two redis-server
# (AOF appendfsync everysec and always) and one PostgreSQL, each on a free
# 127.0.0.1 port with its own data directory under DIR (on the same disk
# as the logcounter logs), nothing else listening.
#   peers.sh start DIR   starts them; prints the bench's settings, one
#                        NAME=VALUE line each: BENCH_REDIS_EVERYSEC,
#                        BENCH_REDIS_ALWAYS (HOST:PORT), BENCH_PG (libpq
#                        conninfo), or "none: WHY" for a peer that could not
#                        be started (the bench then says why in its rows)
#   peers.sh stop DIR    stops whatever start started (SIGTERM, SIGKILL
#                        after 10 s; PostgreSQL by pg_ctl stop -m fast) and
#                        removes DIR
# PostgreSQL refuses to run as root: as root, initdb and postgres run as the
# postgres user that Debian's package creates, in a directory it owns (under
# DIR if that user can reach it, else a private one under /var/tmp).  Its
# superuser is "bench", trusted on loopback only; the unix socket is in its
# private directory.
set -u
. "$(dirname "$0")/../tests/port.sh"
cmd=${1:?usage: peers.sh start|stop DIR}
dir=${2:?usage: peers.sh start|stop DIR}


# start_redis NAME FSYNC VAR: a redis-server with appendfsync FSYNC.
start_redis() {
  local name=$1 fsync=$2 var=$3 d="$dir/redis-$1" port tries=0 i l
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "$var=none: redis-server is not installed (apt-get install redis-server)"
    return
  fi
  mkdir -p "$d"
  while [ $tries -lt 10 ]; do
    tries=$((tries + 1))
    port=$(free_port)
    redis-server --port "$port" --bind 127.0.0.1 --protected-mode yes \
      --dir "$d" --appendonly yes --appendfsync "$fsync" --save '' \
      --daemonize yes --pidfile "$d/redis.pid" --logfile "$d/redis.log" \
      >/dev/null 2>&1 || break
    for ((i = 0; i < 100; i++)); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'PING\r\n' >&3 &&
          IFS= read -r -t 2 l <&3 && [[ $l == +PONG* ]]) 2>/dev/null; then
        echo "$var=127.0.0.1:$port"
        return
      fi
      sleep 0.05
    done
    stop_pid "$(cat "$d/redis.pid" 2>/dev/null)"
    grep -q "Address already in use" "$d/redis.log" 2>/dev/null || break
  done
  echo "$var=none: redis-server ($fsync) did not start: $(tail -n 1 "$d/redis.log" 2>/dev/null | tr -d '\r')"
}

# The newest Debian PostgreSQL's bin directory, or nothing.
pg_bindir() {
  local b
  b=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -x "$b/initdb" ] && [ -x "$b/pg_ctl" ] && echo "$b"
}

# as_pg CMD...: runs CMD as the user that owns the cluster, from its dir.
as_pg() {
  local d
  d=$(cat "$dir/pg.where")
  if [ "$(id -u)" = 0 ]; then
    (cd "$d" && runuser -u postgres -- "$@")
  else
    (cd "$d" && "$@")
  fi
}

start_pg() {
  local bin d port tries=0 why
  bin=$(pg_bindir)
  if [ -z "$bin" ]; then
    echo "BENCH_PG=none: postgresql is not installed (apt-get install postgresql)"
    return
  fi
  d="$dir/pg"
  mkdir -p "$d"
  if [ "$(id -u)" = 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
      echo "BENCH_PG=none: running as root and there is no postgres user to run PostgreSQL"
      return
    fi
    chown postgres: "$d" && chmod 700 "$d"
    if ! runuser -u postgres -- test -w "$d" 2>/dev/null; then
      # the postgres user cannot reach DIR (a private parent): its own dir
      d=$(mktemp -d /var/tmp/logcounter-bench-pg.XXXXXX) &&
        chown postgres: "$d" && chmod 700 "$d"
    fi
  fi
  echo "$d" >"$dir/pg.where"
  echo "$bin" >"$dir/pg.bin"
  if ! as_pg "$bin/initdb" -D "$d/data" -U bench --auth=trust -E UTF8 \
      --no-sync >"$dir/initdb.log" 2>&1; then
    echo "BENCH_PG=none: initdb failed: $(grep -m 1 -i 'error' "$dir/initdb.log" || tail -n 1 "$dir/initdb.log")"
    return
  fi
  while [ $tries -lt 10 ]; do
    tries=$((tries + 1))
    port=$(free_port)
    if as_pg "$bin/pg_ctl" -D "$d/data" -l "$d/postgres.log" -w -t 60 \
        -o "-p $port -c listen_addresses=127.0.0.1 -k '$d'" start \
        >"$dir/pg_ctl.log" 2>&1; then
      echo "BENCH_PG=host=127.0.0.1 port=$port user=bench dbname=postgres connect_timeout=10"
      return
    fi
    grep -q "already in use" "$d/postgres.log" 2>/dev/null || break
  done
  why=$(grep -h -E 'FATAL|ERROR' "$d/postgres.log" "$dir/pg_ctl.log" 2>/dev/null | tail -n 1)
  echo "BENCH_PG=none: PostgreSQL did not start: ${why:-see pg_ctl}"
}

# stop_pid PID: SIGTERM, then SIGKILL after 10 s.
stop_pid() {
  local pid=$1 i=0
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "$pid" 2>/dev/null || true
}

stop_pg() {
  [ -f "$dir/pg.where" ] || return 0
  local d bin
  d=$(cat "$dir/pg.where")
  bin=$(cat "$dir/pg.bin")
  if [ -f "$d/data/postmaster.pid" ]; then
    as_pg "$bin/pg_ctl" -D "$d/data" -m fast -w -t 20 stop >/dev/null 2>&1 ||
      stop_pid "$(head -n 1 "$d/data/postmaster.pid" 2>/dev/null)"
  fi
  [ "$d" != "$dir/pg" ] && rm -rf "$d"
  return 0
}

case "$cmd" in
start)
  if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
    echo "peers.sh: $dir is in use: give start a new directory" >&2
    exit 1
  fi
  mkdir -p "$dir" || exit 1
  dir=$(cd "$dir" && pwd)
  # the reasons go into the bench's results: no local paths in them
  { start_redis everysec everysec BENCH_REDIS_EVERYSEC
    start_redis always always BENCH_REDIS_ALWAYS
    start_pg; } | sed -e "s|$dir|DIR|g" -e "s|/var/tmp/logcounter-bench-pg[.][A-Za-z0-9]*|DIR|g" ;;
stop)
  [ -d "$dir" ] || exit 0
  dir=$(cd "$dir" && pwd)
  for n in everysec always; do
    stop_pid "$(cat "$dir/redis-$n/redis.pid" 2>/dev/null)"
  done
  stop_pg
  rm -rf "$dir" ;;
*) echo "usage: peers.sh start|stop DIR" >&2; exit 2 ;;
esac
