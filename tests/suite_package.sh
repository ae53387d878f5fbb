#!/bin/bash
# suite_package.sh - the Debian packages (debian/, make deb): they build
# from the tracked files with dpkg-buildpackage, lintian finds nothing,
# each holds what it should (the daemon and CLI with the unit, the system
# user's sysusers file, /etc/default/logcounterd and the man pages; the
# shared library under its soname; the header, static library and .pc),
# and the versions agree with include/logcounter.h.  As root (CI is) it
# then installs them with apt-get as a user would, checks the system user
# and the files, runs the installed daemon as that user against a private
# memcached while a client allocates through it, builds a C program
# against the installed -dev package with pkg-config and runs it, and
# purges them again, checking nothing is left.  Not root: the install
# half is skipped and says so.
# Needs debhelper, dpkg-dev, fakeroot, lintian (tests/deps.sh), memcached.
# Talks to 127.0.0.1 only.  Ends with "package: N passed, M failed".
set -u
cd "$(dirname "$0")/.."
SUITE=package
. tests/check.sh
. tests/port.sh
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_package.XXXXXX") || exit 1
DPID=""
cleanup() {
  [ -n "$DPID" ] && kill "$DPID" 2>/dev/null
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

v=$(sed -n 's/^#define LC_VERSION_STRING "\(.*\)"/\1/p' include/logcounter.h)
so=$(sed -n 's/^#define LC_SOVERSION \([0-9]*\).*/\1/p' include/logcounter.h)
B=$TMP/build
check "the packages build (dpkg-buildpackage)" env BUILD="$B" tests/deb.sh
deb() { ls "$B/deb/$1"_*.deb 2>/dev/null | head -n 1; }
D=$(deb logcounterd) L=$(deb "liblogcounter$so") V=$(deb liblogcounter-dev)
check "logcounterd, liblogcounter$so and liblogcounter-dev were made" \
  test -n "$D" -a -n "$L" -a -n "$V"
check "debian/changelog's version is logcounter.h's ($v)" \
  test "$(dpkg-parsechangelog -l debian/changelog -S Version)" = "$v"

lint() {
  lintian --tag-display-limit 0 "$D" "$L" "$V" 2>&1 |
    grep -v 'running with root privileges' | tee "$TMP/lintian"
  [ ! -s "$TMP/lintian" ]
}
check "lintian finds nothing in the three packages" lint

has() { # has DEB PATH...: the package holds each path
  local deb=$1 p; shift
  dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\.||' >"$TMP/contents"
  for p in "$@"; do
    grep -qx "$p" "$TMP/contents" || { echo "$(basename "$deb") lacks $p"; return 1; }
  done
}
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
check "logcounterd holds the daemon, the CLI, the unit, the user, /etc/default and the man pages" \
  has "$D" /usr/bin/logcounterd /usr/bin/logcounter \
  /lib/systemd/system/logcounterd.service /usr/lib/sysusers.d/logcounterd.conf \
  /etc/default/logcounterd /usr/share/man/man8/logcounterd.8.gz \
  /usr/share/man/man1/logcounter.1.gz
check "liblogcounter$so holds the library under its soname" \
  has "$L" "/usr/lib/$ma/liblogcounter.so.$v" "/usr/lib/$ma/liblogcounter.so.$so"
check "liblogcounter-dev holds the header, the static library and the .pc" \
  has "$V" /usr/include/logcounter.h "/usr/lib/$ma/liblogcounter.a" \
  "/usr/lib/$ma/liblogcounter.so" "/usr/lib/$ma/pkgconfig/logcounter.pc"
unit_ok() {
  dpkg-deb --fsys-tarfile "$D" | tar -xOf - ./lib/systemd/system/logcounterd.service >"$TMP/unit"
  grep -q '^ExecStart=/usr/bin/logcounterd ' "$TMP/unit" &&
    grep -qx 'EnvironmentFile=-/etc/default/logcounterd' "$TMP/unit" &&
    grep -qx 'User=logcounter' "$TMP/unit"
}
check "the packaged unit starts /usr/bin/logcounterd as logcounter, reading /etc/default/logcounterd" unit_ok
check "the library's soname is liblogcounter.so.$so" \
  sh -c "dpkg-deb --fsys-tarfile '$L' | tar -xOf - ./usr/lib/$ma/liblogcounter.so.$v >'$TMP/so' &&
    objdump -p '$TMP/so' | grep -q 'SONAME *liblogcounter.so.$so\$'"

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "skip - installing the packages needs root and apt-get (not run)"
  finish
fi
if dpkg-query -W logcounterd >/dev/null 2>&1; then
  echo "skip - a logcounterd package is installed already: not touching it"
  finish
fi

# Debian keeps system users at purge: one an earlier run's install made
# (ours: its comment and home) goes first, so the check below sees this
# install make it.
if getent passwd logcounter | grep -q '^logcounter:[^:]*:[0-9]*:[0-9]*:logcounter daemon:/var/lib/logcounter:'; then
  userdel logcounter 2>/dev/null
fi
inst() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "$D" "$L" "$V" >"$TMP/apt.log" 2>&1 || { tail -n 20 "$TMP/apt.log"; return 1; }
}
check "apt-get installs the three packages" inst
check "the install made the system user logcounter, with no login shell" \
  sh -c 'getent passwd logcounter | grep -q ":/usr/sbin/nologin$\|:/bin/false$\|:/sbin/nologin$"'
check "/etc/default/logcounterd is a conffile" \
  sh -c "dpkg-query -W -f='\${Conffiles}' logcounterd | grep -q /etc/default/logcounterd"
check "the installed logcounterd says its version" \
  sh -c "/usr/bin/logcounterd --version | grep -q '$v'"

MC=$(tests/memcached.sh start "$TMP") || MC=""
check "a private memcached runs" test -n "$MC"
P=$(free_port)
mkdir -p "$TMP/db" && chown logcounter "$TMP/db" && chmod 755 "$TMP"
runuser -u logcounter -- env LOGCOUNTER_MEMCACHED="--SERVER=127.0.0.1:$MC" \
  /usr/bin/logcounterd --db "$TMP/db/log" --listen "127.0.0.1:$P" \
  >"$TMP/daemon.log" 2>&1 &
DPID=$!
up() {
  local i
  for i in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$P") 2>/dev/null && return 0
    sleep 0.1
  done
  cat "$TMP/daemon.log"; return 1
}
check "the installed daemon runs as logcounter and listens" up
alloc() { # 200 increments on one connection: each answer one more
  python3 - "$P" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
f = s.makefile("rb")
prev = None
for _ in range(200):
    s.sendall(b"incr pkg 1\r\n")
    line = f.readline().strip()
    v = int(line)
    assert prev is None or v == prev + 1, (prev, line)
    prev = v
print("200 ids, last", prev)
EOF
}
check "a client allocates through it: 200 ids, each one more" alloc
check "the log belongs to logcounter" \
  sh -c "[ \"\$(stat -c %U '$TMP/db/log')\" = logcounter ]"
kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; DPID=""

cprog() {
  cat >"$TMP/v.c" <<'EOF'
#include <logcounter.h>
#include <stdio.h>
int main(void) { printf("%s\n", lc_version()); return 0; }
EOF
  # shellcheck disable=SC2046
  cc -o "$TMP/v" "$TMP/v.c" $(pkg-config --cflags --libs logcounter) &&
    [ "$("$TMP/v")" = "$v" ] && ldd "$TMP/v" | grep -Eq "liblogcounter.so.$so => (/usr)?/lib/$ma/"
}
check "a C program builds with pkg-config against liblogcounter-dev and runs on liblogcounter$so" cprog

purge() {
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq logcounterd \
    "liblogcounter$so" liblogcounter-dev >"$TMP/apt.log" 2>&1 || { tail -n 20 "$TMP/apt.log"; return 1; }
  [ ! -e /usr/bin/logcounterd ] && [ ! -e /etc/default/logcounterd ] &&
    [ ! -e /usr/include/logcounter.h ] && [ ! -e "/usr/lib/$ma/liblogcounter.so.$so" ]
}
check "apt-get purge removes them, /etc/default/logcounterd too" purge
finish
