#!/bin/bash
# suite_binary.sh - memcached's binary protocol (and the text clients we
# did not write) against logcounterd, with the clients Debian ships:
#   - Ruby's Dalli 3.0 (binary only), pylibmc binary=True, php-memcached in
#     binary and in text mode, Cache::Memcached::Fast (incr_multi,
#     get_multi) and python3-memcache, all at once, each allocating on the
#     same four counters while a text client does too: every id unique;
#     increment with an initial value (Dalli's default, php's
#     increment($key, 1, 500): 500 then 501), the never-create expiration,
#     getMulti of 500 keys, get_multi of 300, refused sets;
#   - the protocol byte by byte (tests/daemon/bin_raw.py): pipelining,
#     quiet pipelines ended by noop, stat, the refused commands, hostile
#     headers closed cleanly while a text client is served, a client that
#     never reads closed after --reply-timeout;
#   - with --auth-file: Dalli, php-memcached and pylibmc over SASL PLAIN,
#     a wrong password refused (and slowed down), commands before it
#     refused, --rights-file prefixes enforced; the text client
#     authenticates with the text handshake;
#   - Dalli over TLS and SASL on a TLS listener, beside a text client on a
#     plain one.
# Uses $BUILD/logcounterd, a private memcached, free 127.0.0.1 ports,
# Debian's ruby-dalli, php-cli php-memcached, python3-pylibmc,
# python3-memcache, libcache-memcached-fast-perl, libsasl2-modules (PLAIN
# for libmemcached).  Ends with "binary: N passed, M failed".
# shellcheck disable=SC2034
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/port.sh
BUILD=${BUILD:-build}
case "$BUILD" in /*) B=$BUILD ;; *) B=$PWD/$BUILD ;; esac
DAEMON=$B/logcounterd
PY=/usr/bin/python3 D=tests/daemon

SUITE=binary
. tests/check.sh

[ -x "$DAEMON" ] || { echo "suite_binary: $DAEMON not built" >&2; failed=1; finish; }
missing=""
ruby -e 'require "dalli"' 2>/dev/null || missing="$missing ruby-dalli"
php -r 'exit(class_exists("Memcached") ? 0 : 1);' 2>/dev/null || missing="$missing php-memcached"
perl -MCache::Memcached::Fast -e 1 2>/dev/null || missing="$missing libcache-memcached-fast-perl"
"$PY" -c 'import pylibmc, memcache' 2>/dev/null || missing="$missing python3-pylibmc python3-memcache"
[ -z "$missing" ] ||
  { echo "suite_binary: missing$missing (tests/deps.sh installs them)" >&2; failed=1; finish; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_binary.XXXXXX") || exit 1
DPID="" TPID=""
cleanup() {
  [ -n "$TPID" ] && kill "$TPID" 2>/dev/null
  [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
  tests/memcached.sh stop "$TMP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
MCPORT=$(tests/memcached.sh start "$TMP") || { echo "suite_binary: no memcached" >&2; failed=1; finish; }
MC="--SERVER=127.0.0.1:$MCPORT"
. tests/daemon.sh

# client NAME COMMAND...: runs in the background, output in $TMP/NAME.out
declare -A CPID
client() {
  local name=$1; shift
  "$@" >"$TMP/$name.out" 2>&1 &
  CPID[$name]=$!
}
# done_client NAME DESCRIPTION: waits for it, shows its lines; one check.
done_client() {
  wait "${CPID[$1]}"; local rc=$?
  sed 's/^/    /' "$TMP/$1.out"
  check "$2" [ "$rc" = 0 ]
}
# text_start PHASE [USER PASS]: the text client on the shared counters.
text_start() {
  local phase=$1; shift
  rm -f "$TMP/stop" "$TMP/ids.text.$phase.ready"
  "$PY" $D/bin_text.py "$DPORT" "$TMP/ids.text.$phase" "sh$phase" "$TMP/stop" "$@" \
    >"$TMP/text.$phase.out" 2>&1 &
  TPID=$!
  local i=0
  while [ ! -f "$TMP/ids.text.$phase.ready" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
}
text_stop() {
  touch "$TMP/stop"
  wait "$TPID"; local rc=$?
  TPID=""
  sed 's/^/    /' "$TMP/text.$1.out"
  check "$1: the text client allocated throughout" [ "$rc" = 0 ]
}
# unique PHASE FILES: every id of the four shared counters was handed out
# once, over the ids.*.PHASE files of FILES clients.
unique() {
  "$PY" - "$TMP" "$1" "$2" <<'PYEOF'
import glob, sys, collections
tmp, phase, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = collections.defaultdict(list)
files = glob.glob("%s/ids.*.%s" % (tmp, phase))
for f in files:
    for line in open(f):
        n, v = line.split()
        seen[n].append(int(v))
dups = {n: len(v) - len(set(v)) for n, v in seen.items() if len(v) != len(set(v))}
total = sum(len(v) for v in seen.values())
print("    %d ids from %d clients on %d counters, %d duplicated" % (total, len(files), len(seen), sum(dups.values())))
sys.exit(1 if dups or len(seen) != 4 or len(files) != want else 0)
PYEOF
}

# ---- phase 1: no authentication --------------------------------------------
start_daemon d1 --reply-timeout 3 || { failed=$((failed + 1)); finish; }
export BIN_SHARED=sh1
text_start 1
client dalli ruby $D/bin_dalli.rb "$DPORT" "$TMP/ids.dalli.1" rb1_
client phpbin php $D/bin_php.php "$DPORT" "$TMP/ids.phpbin.1" pb1_ 1
client phptext php $D/bin_php.php "$DPORT" "$TMP/ids.phptext.1" pt1_ 0
client pylibmc "$PY" $D/bin_py.py pylibmc "$DPORT" "$TMP/ids.pylibmc.1" py1_
client perl perl $D/bin_perl.pl "$DPORT" "$TMP/ids.perl.1" pl1_
client pymc "$PY" $D/bin_py.py memcache "$DPORT" "$TMP/ids.pymc.1" pm1_
done_client dalli "Dalli 3.0 (binary): incr, incr with a default, get, get_multi 300, tally, set refused"
done_client phpbin "php-memcached binary: increment(new, 1, 500) -> 500, 501; getMulti 500 keys; set refused"
done_client phptext "php-memcached text: increment, getMulti 500 keys, set refused"
done_client pylibmc "pylibmc binary=True: incr, get_multi 300 keys, set refused"
done_client perl "Cache::Memcached::Fast: incr, incr_multi, get_multi 300 keys"
done_client pymc "python3-memcache: incr, get_multi 300 keys"
client raw "$PY" $D/bin_raw.py plain "$DPORT" raw1_
done_client raw "the binary protocol byte by byte: pipelining, quiet forms, stat, refusals, hostile headers"
client unread "$PY" $D/bin_raw.py unread "$DPORT" raw1_ 3
done_client unread "a binary client that never reads is closed after --reply-timeout"
text_stop 1
check "phase 1: every id unique across the text client and five client libraries" unique 1 7
stop_daemon TERM
check "phase 1: SIGTERM, exit 0" [ "$RC" = 0 ]

# ---- phase 2: --auth-file, SASL PLAIN ----------------------------------------
printf 'alice:s3cret pw\nbob:hunter2\ncarol:pw3\n' >"$TMP/auth"
printf 'alice prefix=*\nbob prefix=*\ncarol prefix=c_\n' >"$TMP/rights"
chmod 600 "$TMP/auth" "$TMP/rights"
start_daemon d2 --auth-file "$TMP/auth" --rights-file "$TMP/rights" ||
  { failed=$((failed + 1)); finish; }
export BIN_SHARED=sh2
text_start 2 bob hunter2
client dalli ruby $D/bin_dalli.rb "$DPORT" "$TMP/ids.dalli.2" rb2_ alice "s3cret pw"
client phpbin php $D/bin_php.php "$DPORT" "$TMP/ids.phpbin.2" pb2_ 1 bob hunter2
client pylibmc "$PY" $D/bin_py.py pylibmc "$DPORT" "$TMP/ids.pylibmc.2" py2_ bob hunter2
done_client dalli "Dalli 3.0 over SASL PLAIN: the same"
done_client phpbin "php-memcached binary over SASL PLAIN: the same"
done_client pylibmc "pylibmc binary=True over SASL PLAIN: incr"
client wrong ruby -e '
  require "dalli"; Dalli.logger.level = Logger::FATAL
  c = Dalli::Client.new("127.0.0.1:'"$DPORT"'", username: "alice", password: "wrong", socket_timeout: 3)
  begin; v = c.incr("sh2s0", 1); STDERR.puts "dalli: a wrong password allocated #{v.inspect}"; exit 1
  rescue Dalli::DalliError, Dalli::RingError => e; puts "dalli, wrong password: #{e.class}"; end
  n = Dalli::Client.new("127.0.0.1:'"$DPORT"'", socket_timeout: 3)
  begin; v = n.incr("sh2s0", 1); STDERR.puts "dalli: no password allocated #{v.inspect}"; exit 1
  rescue Dalli::DalliError, Dalli::RingError => e; puts "dalli, no password: #{e.class}"; end'
done_client wrong "Dalli with a wrong password, and without one: refused"
client phpwrong php -r '
  $m = new Memcached(); $m->setOption(Memcached::OPT_BINARY_PROTOCOL, true);
  $m->setSaslAuthData("bob", "nope"); $m->addServer("127.0.0.1", '"$DPORT"');
  $v = $m->increment("sh2s0", 1);
  if ($v !== false) { fwrite(STDERR, "php: a wrong password allocated $v\n"); exit(1); }
  echo "php-memcached, wrong password: ", $m->getResultMessage(), "\n";'
done_client phpwrong "php-memcached binary with a wrong password: refused"
client rawauth "$PY" $D/bin_raw.py auth "$DPORT" alice "s3cret pw" carol pw3 c_
done_client rawauth "SASL byte by byte: list mechs, auth, a command before it, failures slowed down, rights"
client rawpar "$PY" $D/bin_raw.py parallel "$DPORT" alice 150
done_client rawpar "150 parallel wrong SASL passwords from one address: checked one turn at a time"
text_stop 2
check "phase 2: every id unique across the text client and three SASL clients" unique 2 4
stop_daemon TERM
check "phase 2: SIGTERM, exit 0" [ "$RC" = 0 ]
# ---- phase 3: TLS and SASL ---------------------------------------------------
. tests/tls_certs.sh
if make_certs server; then
  DPORT=$(free_port) && TPORT=$(free_port)
  SAME_PORT=1 start_daemon d3 -l "127.0.0.1:$TPORT,notls:127.0.0.1:$DPORT" \
    --tls-cert "$TMP/server.pem" --tls-key "$TMP/server.key" --auth-file "$TMP/auth" ||
    { failed=$((failed + 1)); finish; }
  export BIN_SHARED=sh3
  text_start 3 bob hunter2
  client dalli env BIN_TLS_CA="$TMP/ca.pem" ruby $D/bin_dalli.rb "$TPORT" "$TMP/ids.dalli.3" rb3_ alice "s3cret pw"
  done_client dalli "Dalli over TLS and SASL PLAIN: incr, a default, get, tally, set refused (get_multi: Dalli 3.0.6 fails over TLS itself)"
  text_stop 3
  check "phase 3: every id unique across the text client and Dalli over TLS" unique 3 2
  stop_daemon TERM
  check "phase 3: SIGTERM, exit 0" [ "$RC" = 0 ]
else
  check "TLS certificates made" false
fi
check "no password in the daemon's log" bash -c "! grep -q 's3cret\\|hunter2\\|wrong\\|pw3' '$TMP/daemon.log'"
check "no sanitizer report in the daemon's log" \
  bash -c "! grep -Eq 'Sanitizer|runtime error' '$TMP/daemon.log'"
finish
