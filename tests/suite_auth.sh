#!/bin/bash
# suite_auth.sh - logcounterd's --auth-file, --rights-file and the safe
# default (tests/daemon/auth_client.py does the talking):
#   - pymemcache and pylibmc authenticate with memcached's set handshake
#     and allocate; a wrong password, a command before the handshake and
#     an incr before it are refused with their messages, the connection
#     closed, nothing created (get, and the log after the daemon stopped);
#     the handshake over the unix socket too;
#   - repeated failures wait longer and longer (lower bounds, stats); an
#     unauthenticated connection is closed after --line-timeout; 300
#     parallel wrong passwords from one address: at most 100 answered in
#     10 s while an authenticated client allocates, their log lines
#     bounded;
#   - an auth file group or others may read, or naming a user twice, is
#     refused at start;
#   - SIGHUP with a changed file: the new password works, the old one
#     fails, connections already in stay; a malformed file keeps the old;
#   - rights: a user outside its prefix is refused, a user at its names=
#     limit is refused while another creates names and allocates; SIGHUP
#     with a rewritten rights file revokes a prefix on an open connection;
#   - bad files at start, --rights-file without --auth-file;
#   - a non-loopback --listen without --auth-file exits 2; with
#     --insecure-listen it starts and warns (bound to 0.0.0.0 briefly,
#     connected to through 127.0.0.1 only).
# The passwords are made up here at run time.  Uses $BUILD/logcounterd,
# $BUILD/logcounter, Debian's python3 with python3-pylibmc and
# python3-pymemcache, a private memcached, free 127.0.0.1 ports.  Ends
# with "auth: N passed, M failed".
# shellcheck disable=SC2034
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd CLI=$B/logcounter
PY=/usr/bin/python3 AC=tests/daemon/auth_client.py

SUITE=auth
. tests/check.sh

for bin in "$DAEMON" "$CLI"; do
  [ -x "$bin" ] || { echo "suite_auth: $bin not built" >&2; failed=1; finish; }
done
"$PY" -c 'import pylibmc, pymemcache' 2>/dev/null ||
  { echo "suite_auth: $PY lacks pylibmc or pymemcache (tests/deps.sh installs python3-pylibmc python3-pymemcache)" >&2; failed=1; finish; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_auth.XXXXXX") || exit 1
DPID=""
cleanup() {
  [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MCPORT=$(tests/memcached.sh start "$TMP") || { echo "suite_auth: no memcached" >&2; failed=1; finish; }
MC="--SERVER=127.0.0.1:$MCPORT"
. tests/daemon.sh

# Fake passwords, new each run; never printed.
AUTH_ALICE="a$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
AUTH_BOB="b$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
export AUTH_ALICE AUTH_BOB
printf '# test users\nalice:%s\nbob:%s\n' "$AUTH_ALICE" "$AUTH_BOB" >"$TMP/auth"
chmod 600 "$TMP/auth"

# run NAME ARGS...: auth_client.py ARGS, its lines shown; one check.
run() {
  local name=$1; shift
  "$PY" "$AC" "$@" >"$TMP/py.out" 2>&1; local rc=$?
  sed 's/^/    /' "$TMP/py.out"
  check "$name" [ "$rc" = 0 ]
}

# ---- authentication -----------------------------------------------------
# (the unfinished bounds raised: the parallel guesses below test the
# per-address turns alone, not --max-unfinished-per-address pushing them out)
start_daemon d1 --auth-file "$TMP/auth" -s "$TMP/d.sock" --line-timeout 2 \
  --max-unfinished 1000 --max-unfinished-per-address 1000 ||
  { failed=$((failed + 1)); finish; }
conn; ask "version"; v_reply=$REPLY_LINE
closed; unauth_closed=$?
conn_close
check "unauthenticated: version works, then closed after --line-timeout" \
  bash -c "[[ '$v_reply' == VERSION* ]] && [ $unauth_closed = 0 ]"
# the library's remote mode and the CLI (--user, --password-file); the
# wrong password first: the first failure from an address is not delayed
# (later ones may outlast the CLI's 1 s timeout: then it reports a timeout)
printf '%s\n' "$AUTH_BOB" >"$TMP/bob.pw"
v1=$("$CLI" --server "127.0.0.1:$DPORT" --user bob --password-file "$TMP/bob.pw" next ucli 2>&1)
v2=$("$CLI" --server "127.0.0.1:$DPORT" --user bob --password-file "$TMP/bob.pw" next ucli 2>&1)
check "logcounter --server --user --password-file authenticates and allocates ($v1, $v2)" \
  bash -c "[ '$v1' = 1 ] && [ '$v2' = 2 ]"
printf 'wrong\n' >"$TMP/bad.pw"
"$CLI" --server "127.0.0.1:$DPORT" --user bob --password-file "$TMP/bad.pw" next ucli >"$TMP/c.out" 2>&1
rc=$?
check "logcounter with a wrong password: refused (exit $rc)" \
  bash -c "[ $rc = 1 ] && grep -q 'authentication' '$TMP/c.out'"
sed 's/^/    /' "$TMP/c.out"
run "pymemcache and pylibmc authenticate; refusals; nothing created" basic "$DPORT" u
# the unix socket is a data port too
unix_out=$("$PY" - "$TMP/d.sock" <<'EOF'
import os, socket, sys
def talk(data):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(10)
    s.sendall(data); out = b""
    while True:
        d = s.recv(4096)
        if not d: break
        out += d
        if data.endswith(b"quit\r\n") and out.count(b"\r\n") >= 2: break
    return out
print(talk(b"incr ux 1\r\n"))
tok = ("alice " + os.environ["AUTH_ALICE"]).encode()
print(talk(b"set a 0 0 %d\r\n%s\r\nincr ux2 1\r\nquit\r\n" % (len(tok), tok)))
EOF
)
check "unix socket: unauthenticated refused, the handshake works" \
  [ "$unix_out" = "b'CLIENT_ERROR unauthenticated\\r\\n'"$'\n'"b'STORED\\r\\n1\\r\\n'" ]
run "repeated failures are slowed down" delay "$DPORT" "$TMP/d.sock"
run "SIGHUP reloads the auth file; connections in stay" reload "$DPORT" "$DPID" "$TMP/auth"
check "the reload failure is logged, without the password" \
  bash -c "grep -q 'not reloaded, the old one stays' '$TMP/daemon.log' && ! grep -qF -e '$AUTH_ALICE' -e '$AUTH_BOB' '$TMP/daemon.log'"
# last on d1: 127.0.0.1's turns are slow from here on
log0=$(wc -l <"$TMP/daemon.log")
run "300 parallel wrong passwords from one address: at most 100 answered in 10 s" \
  parallel "$DPORT" 300
lines=$(($(wc -l <"$TMP/daemon.log") - log0))
check "their failures are logged at a bounded rate ($lines lines)" [ "$lines" -lt 150 ]
stop_daemon TERM
check "SIGTERM, exit 0" [ "$RC" = 0 ]
ok_all=1
for name in uw um ui ua ux; do # never used: current says 0
  v=$("$CLI" --memcached "$MC" --db "$TMP/d1" current "$name" 2>&1)
  [ "$v" = 0 ] || { echo "    $name: $v"; ok_all=0; }
done
v=$("$CLI" --memcached "$MC" --db "$TMP/d1" current upm 2>&1)
[ "$v" = 51 ] || { echo "    upm: $v"; ok_all=0; }
check "the log has the allocated counters and none of the refused names" \
  [ "$ok_all" = 1 ]

# ---- rights -------------------------------------------------------------
printf 'alice:%s\nbob:%s\n' "$AUTH_ALICE" "$AUTH_BOB" >"$TMP/auth"
printf '# rights\nalice prefix=orders- names=4\nbob prefix=tenant42: prefix=tb- admin\n' >"$TMP/rights"
chmod 644 "$TMP/rights" # readable by others: warned about, not refused
start_daemon d2 --auth-file "$TMP/auth" --rights-file "$TMP/rights" ||
  { failed=$((failed + 1)); finish; }
check "a rights file group or others may read (0644): a warning at start" \
  grep -q "warning: --rights-file: .*readable or writable by group or others (mode 0644)" "$TMP/daemon.log"
run "rights: prefixes and names limits; SIGHUP revokes" rights "$DPORT" "$DPID" "$TMP/rights"
stop_daemon TERM
check "rights daemon: SIGTERM, exit 0" [ "$RC" = 0 ]
v3=$("$CLI" --memcached "$MC" --db "$TMP/d2" current orders-3 2>&1)
v1=$("$CLI" --memcached "$MC" --db "$TMP/d2" current orders-1 2>&1)
check "the log: orders-1 at 3, the refused orders-3 never used ($v1, $v3)" \
  bash -c "[ '$v1' = 3 ] && [ '$v3' = 0 ]"

# ---- bad files and options ----------------------------------------------
# expect_exit NAME STATUS PATTERN ARGS...: the daemon exits STATUS, saying PATTERN
expect_exit() {
  local name=$1 want=$2 pat=$3; shift 3
  timeout 20 "$DAEMON" --db "$TMP/dx" --memcached "$MC" "$@" >"$TMP/x.out" 2>&1
  local rc=$?
  check "$name (exit $rc)" bash -c "[ $rc = $want ] && grep -q -e '$pat' '$TMP/x.out'"
}
printf 'alice:\n' >"$TMP/bad"
chmod 600 "$TMP/bad"
port=$(free_port)
expect_exit "an auth file with an empty password" 2 "line 1: bad password" \
  -l "127.0.0.1:$port" --auth-file "$TMP/bad"
expect_exit "a missing auth file" 2 "cannot open" -l "127.0.0.1:$port" \
  --auth-file "$TMP/none"
# group or others may read it: refused, the fix named (as sshd refuses a
# key file others may read); a user twice: refused, both lines named
printf 'alice:%s\n' "$AUTH_ALICE" >"$TMP/open"
chmod 644 "$TMP/open"
expect_exit "an auth file group or others may read (0644) is refused" 2 \
  "readable or writable by group or others (mode 0644).*chmod 600" \
  -l "127.0.0.1:$port" --auth-file "$TMP/open"
printf 'alice:%s\nbob:%s\nalice:other\n' "$AUTH_ALICE" "$AUTH_BOB" >"$TMP/twice"
chmod 600 "$TMP/twice"
expect_exit "an auth file naming a user twice is refused, with the lines" 2 \
  "line 3: user .alice. again (first on line 1)" \
  -l "127.0.0.1:$port" --auth-file "$TMP/twice"
expect_exit "a replication secret file group or others may read (0644) is refused" 2 \
  "replication-secret-file: .*readable or writable by group or others (mode 0644)" \
  -l "127.0.0.1:$port" --auth-file "$TMP/auth" --replication-listen "127.0.0.1:$port" \
  --replication-secret-file "$TMP/open"
printf 'alice prefix=x size=3\n' >"$TMP/badr"
expect_exit "a rights file with an unknown word" 2 "line 1: unknown word" \
  -l "127.0.0.1:$port" --auth-file "$TMP/auth" --rights-file "$TMP/badr"
expect_exit "--rights-file without --auth-file" 2 "needs --auth-file" \
  -l "127.0.0.1:$port" --rights-file "$TMP/rights"

# ---- the safe default ---------------------------------------------------
expect_exit "-l 0.0.0.0 without --auth-file is refused" 2 "not a loopback address" \
  -l "0.0.0.0:$port"
DPORT=$(free_port)
SAME_PORT=1 start_daemon d3 -l "0.0.0.0:$DPORT" --insecure-listen
started=$?
check "--insecure-listen: starts on 0.0.0.0 (reached via 127.0.0.1)" [ "$started" = 0 ]
check "--insecure-listen: a warning is logged" \
  grep -q "WARNING: listening on 0.0.0.0:$DPORT, not a loopback address" "$TMP/daemon.log"
[ "$started" = 0 ] && stop_daemon TERM
start_daemon d4
conn; say "stats settings"
auth_off=""
while hear && [ "$REPLY_LINE" != END ]; do
  [ "$REPLY_LINE" = "STAT auth_enabled_ascii no" ] && auth_off=1
done
conn_close
check "without --auth-file: stats settings says auth_enabled_ascii no" \
  bash -c "[ '$auth_off' = 1 ]"
stop_daemon TERM

check "no sanitizer report in the daemon's log" \
  bash -c "! grep -Eq 'Sanitizer|runtime error' '$TMP/daemon.log' '$TMP/x.out'"
finish
