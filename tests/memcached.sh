#!/bin/bash
# memcached.sh - starts or stops a private memcached on a free loopback port.
#   memcached.sh start DIR   starts one, writes DIR/memcached.pid, prints port
#   memcached.sh stop DIR    stops the one started with DIR
# It listens on 127.0.0.1 only, without UDP, and with -M (no eviction:
# when full it answers errors), with LC_MEMCACHED_MB of memory (default 64).
set -eu
. "$(dirname "$0")/port.sh"
cmd=${1:?usage: memcached.sh start|stop DIR}
dir=${2:?usage: memcached.sh start|stop DIR}
case "$cmd" in
start)
  user=""
  [ "$(id -u)" = 0 ] && user="-u root"
  tries=0
  while [ $tries -lt 20 ]; do
    tries=$((tries + 1))
    port=$(free_port) || continue
    # shellcheck disable=SC2086
    memcached -l 127.0.0.1 -p "$port" -U 0 -M -m "${LC_MEMCACHED_MB:-64}" $user -d -P "$dir/memcached.pid" 2>"$dir/memcached.err" || continue
    i=0
    while [ $i -lt 50 ]; do
      if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
        echo "$port"
        exit 0
      fi
      sleep 0.1
      i=$((i + 1))
    done
    [ -f "$dir/memcached.pid" ] && kill "$(cat "$dir/memcached.pid")" 2>/dev/null || true
  done
  echo "memcached.sh: cannot start memcached: $(cat "$dir/memcached.err" 2>/dev/null)" >&2
  exit 1 ;;
stop)
  if [ -f "$dir/memcached.pid" ]; then
    kill "$(cat "$dir/memcached.pid")" 2>/dev/null || true
    rm -f "$dir/memcached.pid"
  fi ;;
*) echo "usage: memcached.sh start|stop DIR" >&2; exit 2 ;;
esac
