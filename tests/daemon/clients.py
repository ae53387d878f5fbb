#!/usr/bin/python3
"""clients.py - stock memcached clients against logcounterd, for
tests/suite_clients.sh.  Only connects to 127.0.0.1.

  clients.py multiget PORT LCD_MGET PREFIX
      Seeds 10,000 quiet counters PREFIXq<i> to (i % 7) + 1 and leaves 500
      names unused, while 4 threads allocate on 20 hot counters.  Then
      pylibmc get_multi, pymemcache get_many and gets_many, and
      libmemcached's memcached_mget (the LCD_MGET program) read 1,000 and
      10,000 keys at once: every quiet value exact, every unused name
      absent, every hot value between the highest id acknowledged before
      the read and the counter's final value.
  clients.py meta PORT PREFIX
      While 4 threads allocate on other counters, the meta commands over a
      raw socket: ma (D, v, q, k, O, t, c, N, J,
      MI/MD on tallies), mg (v, k, s, f, q, misses), mn, their errors; a
      pipeline of 100,000 "ma NAME q" lines answered by one MN, and a
      burst of 5,000 new names by "ma" then read back by mg.
  clients.py stats PORT
      stats slabs and stats items answer an empty END; stats carries the
      fields memcached's Prometheus exporter needs, and cmd_set counts a
      refused set.
  clients.py unread PORT PREFIX
      A client sends 10,000-key gets and never reads the answers while
      another allocates: the other is answered throughout, and the daemon
      closes the unread connection (--reply-timeout).

LC_TEST_SCALE=N (the sanitizer runs) divides the key and pipeline counts.
Prints "ok ..." for each check and "FAIL ..." (then exits 1) on the
first failure.
"""
import os
import socket
import subprocess
import sys
import threading
import time

import pylibmc
from pymemcache.client.base import Client as PmClient
from unread import race, small_socket

SCALE = max(1, int(os.environ.get("LC_TEST_SCALE", "1") or 1))
QUIET = 10000 // SCALE
UNUSED = 500 // SCALE
HOT = 20


def fail(msg):
    print("FAIL " + msg, flush=True)
    sys.exit(1)


def ok(msg):
    print("ok   " + msg, flush=True)


class Raw:
    """A raw text-protocol connection."""

    def __init__(self, port, timeout=30):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                fail("connection closed; had %r" % self.buf[:200])
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def ask(self, req):
        self.send(req.encode() + b"\r\n")
        return self.line()

    def close(self):
        self.s.close()


def sync(raw):
    if raw.ask("version").split()[0] != "VERSION":
        fail("no VERSION after the pipeline")


# ---- multi-key gets ----------------------------------------------------------

def quiet_value(i):
    return i % 7 + 1


class Hot:
    """4 threads allocating on HOT counters: each connection's ids rise,
    no id twice; remembers the highest id acknowledged per counter."""

    def __init__(self, port, prefix):
        self.port, self.prefix = port, prefix
        self.high = {}
        self.seen = {}
        self.mu = threading.Lock()
        self.stop = threading.Event()
        self.errors = []
        self.count = 0
        self.threads = [threading.Thread(target=self.run, args=(t,))
                        for t in range(4)]

    def name(self, j):
        return "%sh%d" % (self.prefix, j)

    def run(self, t):
        c = PmClient(("127.0.0.1", self.port), timeout=10)
        mine = {}  # this connection's last id per counter: must rise
        j = t
        while not self.stop.is_set():
            j = (j + 7) % HOT
            try:
                v = c.incr(self.name(j), 1)
            except Exception as e:  # noqa: BLE001 - reported below
                self.errors.append(repr(e))
                return
            if v is None or v <= mine.get(j, 0):
                self.errors.append("%s answered %r after %r"
                                   % (self.name(j), v, mine.get(j)))
                return
            mine[j] = v
            with self.mu:
                self.count += 1
                if v in self.seen.setdefault(j, set()):
                    self.errors.append("%s: id %d twice" % (self.name(j), v))
                self.seen[j].add(v)
                self.high[j] = max(self.high.get(j, 0), v)

    def snapshot(self):
        with self.mu:
            return dict(self.high)

    def start(self):
        for th in self.threads:
            th.start()
        while len(self.snapshot()) < HOT and not self.errors:
            time.sleep(0.01)

    def finish(self):
        self.stop.set()
        for th in self.threads:
            th.join()
        if self.errors:
            fail("hot allocators: %s" % self.errors[:3])
        return self.snapshot()


def as_int(v):
    if isinstance(v, (bytes, bytearray)):
        v = v.decode()
    return int(v)


def check_read(who, got, keys, lower, prefix, reads):
    """got: key -> value (str keys).  Quiet exact, unused absent, hot
    values recorded for the bounds check at the end."""
    nq = nh = 0
    for k in keys:
        if k.startswith(prefix + "q"):
            i = int(k[len(prefix) + 1:])
            if k not in got:
                fail("%s: %s missing" % (who, k))
            if as_int(got[k]) != quiet_value(i):
                fail("%s: %s = %r, want %d" % (who, k, got[k], quiet_value(i)))
            nq += 1
        elif k.startswith(prefix + "u"):
            if k in got:
                fail("%s: unused %s answered %r" % (who, k, got[k]))
        else:
            j = int(k[len(prefix) + 1:])
            if k not in got:
                fail("%s: hot %s missing" % (who, k))
            v = as_int(got[k])
            if v < lower.get(j, 0):
                fail("%s: hot %s = %d below acknowledged %d"
                     % (who, k, v, lower[j]))
            reads.append((who, j, v))
            nh += 1
    extra = set(got) - set(keys)
    if extra:
        fail("%s: keys not asked for: %s" % (who, sorted(extra)[:3]))
    return nq, nh


def multiget(port, lcd_mget, prefix):
    raw = Raw(port)
    t0 = time.time()
    raw.send("".join("incr %sq%d %d noreply\r\n" % (prefix, i, quiet_value(i))
                     for i in range(QUIET)).encode())
    sync(raw)
    ok("seeded %d new counters in %.2f s" % (QUIET, time.time() - t0))
    hot = Hot(port, prefix)
    hot.start()
    quiet = ["%sq%d" % (prefix, i) for i in range(QUIET)]
    unused = ["%su%d" % (prefix, i) for i in range(UNUSED)]
    hots = [hot.name(j) for j in range(HOT)]
    # 10,000 keys in all: quiet, unused and hot interleaved
    big = []
    for i in range(QUIET - UNUSED - HOT):
        big.append(quiet[i])
        if i < UNUSED:
            big.append(unused[i])
        if i < HOT:
            big.append(hots[i])
    small = big[:1000]
    reads = []
    libmc = pylibmc.Client(["127.0.0.1:%d" % port],
                           behaviors={"tcp_nodelay": True})
    pm = PmClient(("127.0.0.1", port), timeout=30)

    def pm_gets(keys):
        got = {}
        for k, (v, cas) in pm.gets_many(keys).items():
            ks = k.decode() if isinstance(k, bytes) else k
            if as_int(cas) != as_int(v):
                fail("gets_many: %s cas %r for value %r" % (ks, cas, v))
            got[ks] = v
        return got

    def pm_get(keys):
        return {(k.decode() if isinstance(k, bytes) else k): v
                for k, v in pm.get_many(keys).items()}

    def c_mget(keys):
        p = subprocess.run([lcd_mget, str(port)], input="\n".join(keys),
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            fail("lcd_mget: exit %d: %s" % (p.returncode, p.stderr.strip()))
        lines = p.stdout.split("\n")
        got = dict(l.split(" ", 1) for l in lines if l and
                   not l.startswith("fetched "))
        return got

    readers = [("pylibmc get_multi", libmc.get_multi),
               ("pymemcache get_many", pm_get),
               ("pymemcache gets_many", pm_gets),
               ("libmemcached memcached_mget", c_mget)]
    for keys in (small, big):
        for who, read in readers:
            lower = hot.snapshot()
            t0 = time.time()
            got = read(keys)
            dt = time.time() - t0
            nq, nh = check_read(who, got, keys, lower, prefix, reads)
            ok("%s of %d keys: %d quiet exact, %d unused absent, %d hot "
               "in bounds (%.2f s, %.0f keys/s)"
               % (who, len(keys), nq, len(keys) - nq - nh, nh, dt,
                  len(keys) / dt))
    n = hot.count
    final = hot.finish()
    ok("the hot allocators got %d ids meanwhile, no error" % n)
    check = pm_get(hots)
    for j in range(HOT):
        if as_int(check[hots[j]]) != final[j]:
            fail("hot %s ends at %r, last acknowledged %d"
                 % (hots[j], check[hots[j]], final[j]))
    for who, j, v in reads:
        if v > final[j]:
            fail("%s: hot %d read %d above its final %d" % (who, j, v, final[j]))
    ok("every hot value read lies below the counter's final value")


# ---- meta commands -----------------------------------------------------------

def expect(raw, req, want):
    got = raw.ask(req) if req is not None else raw.line()
    if got != want:
        fail("%r answered %r, want %r" % (req, got, want))


def meta(port, prefix):
    hot = Hot(port, prefix + "hot")  # other clients allocate meanwhile
    hot.start()
    raw = Raw(port)
    a = prefix + "a"
    expect(raw, "ma %s" % a, "HD")
    expect(raw, "ma %s v" % a, "VA 1")
    expect(raw, None, "2")
    expect(raw, "ma %s D10 v k Oxy t c" % a, "VA 2 k%s Oxy t-1 c12" % a)
    expect(raw, None, "12")
    expect(raw, "incr %s 1" % a, "13")
    raw.send(b"ma %s q\r\nmn\r\n" % a.encode())
    expect(raw, None, "MN")
    expect(raw, "mg %s v s f k" % a, "VA 2 s2 f0 k%s" % a)
    expect(raw, None, "14")
    expect(raw, "mg %s" % a, "HD")
    expect(raw, "mg %s k O7" % a, "HD k%s O7" % a)
    ok("ma and mg: HD, VA, D, q, and the flags k O t c s f in request order")
    expect(raw, "mg %snever v" % prefix, "EN")
    raw.send(b"mg %snever v q\r\nmn\r\n" % prefix.encode())
    expect(raw, None, "MN")
    ok("mg of a name never used: EN, nothing with q")
    j = prefix + "j"
    expect(raw, "ma %s N0 J1000 v" % j, "VA 4")
    expect(raw, None, "1000")
    expect(raw, "ma %s N0 J5 v" % j, "VA 4")
    expect(raw, None, "1001")
    ok("ma N J: a new counter starts at J, a used one ignores it")
    t = prefix + "t"
    expect(raw, "ma tally:%s D5 v" % t, "VA 1")
    expect(raw, None, "5")
    expect(raw, "ma tally:%s MD D7 v k" % t, "VA 2 ktally:%s" % t)
    expect(raw, None, "-2")
    expect(raw, "ma tally:%s M+ D2" % t, "HD")
    expect(raw, "mg tally:%s v" % t, "VA 1")
    expect(raw, None, "0")
    ok("tallies through ma MI/MD and mg")
    for req, why in (("ma %s MD" % a, "only move forward"),
                     ("ma %s D0" % a, "delta"),
                     ("ma %s b" % a, "base64"),
                     ("ma %s C5" % a, "cas"),
                     ("ma %s zz" % a, "invalid flag"),
                     ("mg %s h" % a, "not supported by mg"),
                     ("ma bad\x01name", "invalid counter name"),
                     ("me %s" % a, "meta debug"),
                     ("md %s" % a, "never deleted")):
        got = raw.ask(req)
        if not got.startswith("CLIENT_ERROR ") or why not in got:
            fail("%r answered %r, want CLIENT_ERROR naming %r" % (req, got, why))
    expect(raw, "mg %s v" % a, "VA 2")
    expect(raw, None, "14")
    ok("bad meta requests: CLIENT_ERROR with the reason, nothing taken")
    # a deep pipeline of quiet allocations: nothing but the MN comes back
    p = prefix + "p"
    n = 100000 // SCALE
    t0 = time.time()
    raw.send(("ma %s q\r\n" % p * n + "mn\r\n").encode())
    expect(raw, None, "MN")
    dt = time.time() - t0
    expect(raw, "mg %s v" % p, "VA %d" % len(str(n)))
    expect(raw, None, str(n))
    ok("%d pipelined 'ma q' lines: one MN, the counter at %d (%.2f s, %.0f/s)"
       % (n, n, dt, n / dt))
    # a burst of new names through ma, read back by mg
    m = 5000 // SCALE
    t0 = time.time()
    raw.send("".join("ma %sn%d q\r\n" % (prefix, i) for i in range(m))
             .encode() + b"mn\r\n")
    expect(raw, None, "MN")
    dt = time.time() - t0
    raw.send("".join("mg %sn%d v q\r\n" % (prefix, i) for i in range(m))
             .encode() + b"mn\r\n")
    for i in range(m):
        expect(raw, None, "VA 1")
        expect(raw, None, "1")
    expect(raw, None, "MN")
    ok("a burst of %d new names by ma (%.2f s, %.0f/s), each read back at 1"
       % (m, dt, m / dt))
    raw.close()
    n = hot.count
    hot.finish()
    ok("4 other connections allocated %d ids meanwhile, no error" % n)


# ---- stats -------------------------------------------------------------------

def stats(port):
    raw = Raw(port)
    expect(raw, "stats slabs", "END")
    expect(raw, "stats items", "END")
    ok("stats slabs and stats items: END")
    raw.send(b"set x 0 0 1\r\nx\r\n")
    line = raw.line()
    if not line.startswith("CLIENT_ERROR "):
        fail("set answered %r" % line)
    raw.send(b"stats\r\n")
    got = {}
    while True:
        line = raw.line()
        if line == "END":
            break
        _, k, v = line.split(" ", 2)
        got[k] = v
    need = ["uptime", "time", "version", "curr_connections",
            "total_connections", "cmd_get", "get_hits", "get_misses",
            "cmd_set", "cas_hits", "cas_misses", "cas_badval", "incr_hits",
            "incr_misses", "rusage_user", "rusage_system"]
    missing = [k for k in need if k not in got]
    if missing:
        fail("stats lacks %s" % missing)
    if int(got["cmd_set"]) < 1:
        fail("cmd_set %s after a set" % got["cmd_set"])
    for k in ("rusage_user", "rusage_system"):
        sec, _, usec = got[k].partition(".")
        if not (sec.isdigit() and len(usec) == 6 and usec.isdigit()):
            fail("%s %r is not seconds.microseconds" % (k, got[k]))
    ok("stats has the exporter's fields (%s)" % " ".join(need))
    # only get lines are unlimited: a 300-byte key, then a 3,000-byte
    # incr line
    expect(raw, "get a " + "k" * 3000 + " b", "CLIENT_ERROR key too long "
           "(at most 250 bytes)")
    sync(raw)
    raw.send(b"incr " + b"a" * 3000 + b" 1\r\n")
    expect(raw, None, "CLIENT_ERROR line too long")
    try:
        extra = raw.s.recv(100)
    except OSError:
        extra = b""
    if extra:
        fail("after a long incr line the connection went on: %r" % extra)
    ok("a get with a 3,000-byte key: CLIENT_ERROR, the line skipped; a "
       "3,000-byte incr line: refused and closed")
    raw.close()
    # a get of 300 keys whose key 201 is bad is refused whole, as a short
    # one is: the error line alone, no VALUE before it, no END after it
    raw = Raw(port)
    expect(raw, "incr mg-k0 1", "1")
    bad = "b" * 300
    keys = ["mg-k0"] * 300
    keys[200] = bad
    for line in ("get mg-k0 " + bad, "get " + " ".join(keys)):
        got = raw.ask(line)
        if not got.startswith("CLIENT_ERROR "):
            fail("a get of %d keys, one bad: %r first" % (line.count(" "), got))
        sync(raw)  # the next reply is the next request's: no END left
    ok("a get of 300 keys with a bad key 201: refused whole (no VALUE, "
       "no END), as a short one")
    raw.close()


# ---- a client that stops reading ---------------------------------------------

def unread(port, prefix):
    keys = " ".join("%sq%d" % (prefix, i) for i in range(QUIET))
    other = PmClient(("127.0.0.1", port), timeout=5)
    sent, closed, answered, worst = race(
        small_socket(port), ("get " + keys + "\r\n").encode(),
        lambda: other.incr(prefix + "other", 1), fail)
    ok("a client sending %d gets of %d keys without reading was closed "
       "after %.1f s; another was answered %d times meanwhile (slowest "
       "%.3f s)" % (sent, QUIET, closed, answered, worst))


def main():
    cmd = sys.argv[1]
    port = int(sys.argv[2])
    if cmd == "multiget":
        multiget(port, sys.argv[3], sys.argv[4])
    elif cmd == "meta":
        meta(port, sys.argv[3])
    elif cmd == "stats":
        stats(port)
    elif cmd == "unread":
        unread(port, sys.argv[3])
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()
