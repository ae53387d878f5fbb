#!/bin/sh
# deps.sh - makes sure the Debian packages logcounter needs are installed.
# As root it installs what is missing with apt-get; otherwise it names the
# missing packages and fails.  Extra package names may be given as arguments.
set -eu
need="memcached libmemcached-dev libmemcached-tools libleveldb-dev libcmocka-dev libevent-dev libssl-dev valgrind pkg-config make gcc python3 python3-pymemcache python3-pylibmc $*"
# logcounterd's sd_notify; systemd-analyze and strace for tests/suite_systemd.sh
need="$need libsystemd-dev systemd strace"
# logcounterd's TLS (tools/logcounterd/lcd_tls.c); openssl for tests/suite_tls.sh
need="$need libssl-dev openssl"
# the clients tests/suite_binary.sh drives: Dalli (binary protocol, SASL),
# php-memcached, Cache::Memcached::Fast, python-memcache; PLAIN for
# libmemcached's SASL (libsasl2-modules)
need="$need ruby ruby-dalli php-cli php-memcached libcache-memcached-fast-perl python3-memcache libsasl2-modules"
# the tools the suites drive: twemproxy (suite_proxy.sh), Prometheus and
# promtool (suite_metrics.sh)
need="$need nutcracker prometheus"
# make deb and tests/suite_package.sh: building and checking the packages
need="$need debhelper dpkg-dev fakeroot lintian"
# logcounterd --etcd (lcd_etcd.c over libcurl and json-c); etcd itself for
# tests/suite_cluster.sh
need="$need libcurl4-openssl-dev libjson-c-dev etcd-server"
missing=""
for p in $need; do
  if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed'; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "deps: installing:$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >&2
else
  echo "deps: missing Debian packages:$missing" >&2
  echo "deps: install them with: sudo apt-get install$missing" >&2
  exit 1
fi
