#!/usr/bin/python3
# bin_raw.py - the binary protocol byte by byte against logcounterd, for
# tests/suite_binary.sh.
#   bin_raw.py plain PORT PREFIX   pipelining (100 increments in one write,
#       answered in order with their opaques), a quiet pipeline ended by
#       noop (only the hit and the noop answer), the never-create
#       expiration, errors of quiet forms still answered, version, stat
#       (the same names as text "stats"), the refused commands (0x83,
#       nothing changed, a 100 KB value discarded), and hostile headers
#       (each length too big, an unknown opcode, a bad data type, bad
#       magic after binary, text after binary, a body cut short): an error
#       frame and a clean close, while a text connection is served between
#       each.
#   bin_raw.py unread PORT PREFIX TIMEOUT   a client that sends stat
#       requests and never reads is closed after --reply-timeout while
#       another is answered.
#   bin_raw.py auth PORT USER PASS  with --auth-file: a command before
#       authenticating is refused (0x20) and closed; list mechs is PLAIN;
#       a good PLAIN authenticates; a wrong password is refused and
#       closed, and repeated failures are answered after a delay.
#       With USER2 PASS2 PREFIX2 (a user whose --rights-file line allows
#       only names starting PREFIX2): its names are served, others refused
#       (0x0004, "permission denied") and not created.
# Prints one line per check; exits 1 at the first failure.
import socket, struct, sys, time

HDR = struct.Struct(">BBHBBHIIQ")


def req(op, ext=b"", key=b"", val=b"", opaque=0, magic=0x80, dt=0, body=None):
    b = len(ext) + len(key) + len(val) if body is None else body
    return HDR.pack(magic, op, len(key), len(ext), dt, 0, b, opaque, 0) + ext + key + val


def arith(delta, initial=0, exp=0):
    return struct.pack(">QQI", delta, initial, exp)


def fail(m):
    print("FAIL " + m)
    sys.exit(1)


def ok(m):
    print("ok " + m)


class Conn:
    def __init__(self, port, timeout=5):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def send(self, b):
        self.s.sendall(b)

    def _need(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                return False
            self.buf += d
        return True

    def resp(self):
        """(opcode, status, opaque, cas, extras, key, value) or None at EOF."""
        if not self._need(24):
            return None
        magic, op, klen, elen, dt, status, blen, opaque, cas = HDR.unpack(self.buf[:24])
        if magic != 0x81:
            fail("response magic 0x%02x" % magic)
        if not self._need(24 + blen):
            fail("response body cut short")
        body = self.buf[24:24 + blen]
        self.buf = self.buf[24 + blen:]
        return (op, status, opaque, cas, body[:elen], body[elen:elen + klen], body[elen + klen:])

    def eof(self, timeout=3):
        """True if the daemon closes (after any replies)."""
        self.s.settimeout(timeout)
        try:
            while True:
                d = self.s.recv(65536)
                if not d:
                    return True
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True

    def text(self, line):
        self.send(line.encode() + b"\r\n")
        while b"\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                fail("text connection closed")
            self.buf += d
        line, _, self.buf = self.buf.partition(b"\n")
        return line.strip().decode()


def u64(v):
    return struct.unpack(">Q", v)[0]


def plain(port, pre):
    c = Conn(port)
    k = (pre + "pipe").encode()
    c.send(b"".join(req(0x05, arith(1, 1), k, opaque=i) for i in range(1, 101)))
    vals = []
    for i in range(1, 101):
        r = c.resp()
        if r is None or r[0] != 0x05 or r[1] != 0 or r[2] != i:
            fail("pipelined increment %d: %r" % (i, r))
        vals.append(u64(r[6]))
    if vals != list(range(vals[0], vals[0] + 100)):
        fail("pipelined increments not consecutive: %r" % vals[:5])
    ok("100 pipelined increments answered in order, ids %d..%d" % (vals[0], vals[-1]))

    q = (pre + "quiet").encode()
    c.send(b"".join(req(0x15, arith(1, 1000), q, opaque=7) for _ in range(50)) +
           req(0x0d, key=q, opaque=8) + req(0x09, key=(pre + "none").encode(), opaque=9) +
           req(0x0a, opaque=10))
    r1, r2 = c.resp(), c.resp()
    if r1[0] != 0x0d or r1[1] != 0 or r1[2] != 8 or r1[5] != q or r1[6] != b"1049" or r1[4] != b"\0\0\0\0":
        fail("getkq after 50 incrementq: %r" % (r1,))
    if r2[0] != 0x0a or r2[1] != 0 or r2[2] != 10:
        fail("noop ending the quiet pipeline: %r" % (r2,))
    ok("50 incrementq (initial 1000) + getkq + getq miss + noop: only the hit (1049) and the noop")

    # a run of getkq is one job, as a text get line of many keys
    t0 = Conn(port)
    def jobs():
        t0.send(b"stats\r\n")
        while b"END\r\n" not in t0.buf:
            t0.buf += t0.s.recv(65536)
        st = dict(l.split(b" ")[1:3] for l in t0.buf.split(b"\r\n") if l.startswith(b"STAT "))
        t0.buf = b""
        return int(st[b"jobs_inline"]) + int(st[b"jobs_pooled"])
    before = jobs()
    c.send(b"".join(req(0x0d, key=q if i % 2 else k) for i in range(128)) + req(0x0a, opaque=99))
    got = []
    while True:
        r = c.resp()
        if r[0] == 0x0a:
            break
        got.append(r)
    spent = jobs() - before
    if len(got) != 128 or any(r[1] != 0 or r[5] != (q if i % 2 else k) for i, r in enumerate(got)):
        fail("128 getkq + noop: %d replies" % len(got))
    # how many jobs depends on how the input arrives (as for a text get
    # line read in pieces); one per key means no batching at all
    if spent > 16:
        fail("128 pipelined getkq took %d jobs: not batched" % spent)
    ok("128 pipelined getkq of two counters + noop: 128 hits in order with their keys, in %d job(s)" % spent)

    n = (pre + "nocreate").encode()
    c.send(req(0x05, arith(1, 5, 0xffffffff), n, opaque=11) + req(0x00, key=n, opaque=12) +
           req(0x15, arith(0), n, opaque=13) + req(0x0a, opaque=14))
    r = [c.resp() for _ in range(4)]
    if r[0][1] != 0x0001 or r[1][1] != 0x0001:
        fail("expiration 0xffffffff created the counter: %r" % r[:2])
    if r[2][0] != 0x15 or r[2][1] != 0x0004 or r[2][2] != 13 or r[3][0] != 0x0a:
        fail("an incrementq error must be answered: %r" % r[2:])
    ok("expiration 0xffffffff: not found, not created; incrementq with delta 0 answered 0x0004")

    c.send(req(0x0b, opaque=15))
    r = c.resp()
    if r[1] != 0 or not r[6].startswith(b"1."):
        fail("version: %r" % (r,))
    ver = r[6].decode()
    c.send(req(0x10, opaque=16))
    names = set()
    while True:
        r = c.resp()
        if r[0] != 0x10 or r[1] != 0:
            fail("stat: %r" % (r,))
        if not r[5]:
            break
        names.add(r[5].decode())
    t = Conn(port)
    t.send(b"stats\r\n")
    text = set()
    while b"END\r\n" not in t.buf:
        t.buf += t.s.recv(65536)
    for line in t.buf.split(b"\r\n"):
        if line.startswith(b"STAT "):
            text.add(line.split(b" ")[1].decode())
    t.buf = b""
    if len(names) < 20 or names != text:
        fail("stat names differ from text stats: %r" % (names ^ text))
    ok("version %s; stat gives the %d figures of text stats" % (ver, len(names)))

    # refused: nothing changed
    before = c_get(c, k)
    e8 = b"\0" * 8
    refused = [req(0x01, e8, k, b"7"), req(0x02, e8, k, b"7"), req(0x03, e8, k, b"7"),
               req(0x0e, b"", k, b"7"), req(0x0f, b"", k, b"7"), req(0x04, b"", k),
               req(0x08), req(0x18, b"\0\0\0\0"), req(0x11, e8, k, b"x" * 100000),
               req(0x14, b"", k), req(0x1c, b"\0\0\0\0", k)]
    for i, f in enumerate(refused):
        c.send(f)
        r = c.resp()
        if r[1] != 0x0083:
            fail("refused command %d (opcode 0x%02x): %r" % (i, f[1], r))
        t.text("incr %sother 1" % pre)  # keeps the error streak short
    if c_get(c, k) != before:
        fail("a refused command changed the counter")
    c.send(req(0x06, arith(1), k))
    r = c.resp()
    if r[1] != 0x0083:
        fail("decrement of a serial counter: %r" % (r,))
    ok("set/add/replace/append/prepend/delete/flush/flushq/setq (100 KB)/deleteq/touch, decrement: 0x83, counter unchanged at %s" % before)

    hostile = [
        ("key length 0xffff", req(0x00, key=b"a") [:2] + b"\xff\xff" + req(0x00, key=b"a")[4:], 0x0004),
        ("extras length 255 on get", HDR.pack(0x80, 0x00, 1, 255, 0, 0, 256, 0, 0), 0x0004),
        ("total body 2 GiB", req(0x21, key=b"PLAIN", body=0x7fffffff), 0x0003),
        ("set value of 2 MiB", req(0x01, e8, b"k", body=2 * 1024 * 1024), 0x0003),
        ("body shorter than extras + key", req(0x05, arith(1), b"abc", body=10), 0x0004),
        ("unknown opcode 0x42", req(0x42), 0x0081),
        ("data type 1", req(0x00, key=b"a", dt=1), 0x0004),
        ("bad magic after binary", req(0x0a) + req(0x0a, magic=0x81), 0x0004),
        ("text after binary", req(0x0a) + b"get a\r\n" + b"\0" * 17, 0x0004),
    ]
    for name, data, status in hostile:
        h = Conn(port)
        h.send(data)
        r = h.resp()
        if r is not None and r[0] == 0x0a and r[1] == 0:
            r = h.resp()
        if r is None or r[1] != status:
            fail("%s: got %r, wanted status 0x%04x" % (name, r, status))
        if not h.eof():
            fail("%s: the connection was not closed" % name)
        v = t.text("incr %sother 1" % pre)
        if not v.isdigit():
            fail("text client after %s: %r" % (name, v))
        ok("%s: status 0x%04x (%s), closed; a text client served" % (name, status, r[6].decode()))
    h = Conn(port)
    h.send(req(0x05, arith(1), k)[:30])
    h.s.shutdown(socket.SHUT_WR)
    if not h.eof():
        fail("a body cut short, then EOF: not closed")
    if not t.text("incr %sother 1" % pre).isdigit():
        fail("text client after a cut body")
    ok("a body cut short, then EOF: closed without a reply; a text client served")
    return t


def c_get(c, key):
    c.send(req(0x00, key=key))
    r = c.resp()
    if r[1] != 0:
        fail("get %r: %r" % (key, r))
    return r[6].decode()


def unread(port, pre, timeout):
    t = Conn(port)
    h = Conn(port)
    h.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    # stat: ~4 KB of replies per 24-byte request, answered on the spot, so
    # the socket buffers fill in a moment even on a loaded machine
    frame = req(0x10)
    start = time.time()
    h.s.setblocking(False)
    chunk = frame * 2000
    closed = False
    while time.time() - start < timeout + 30:
        try:
            h.s.send(chunk)
        except BlockingIOError:
            time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            closed = True
            break
        v = t.text("incr %sother 1" % pre)
        if not v.isdigit():
            fail("another client while one does not read: %r" % v)
    took = time.time() - start
    if not closed:
        fail("a binary client that never reads was not closed in %.0f s" % took)
    ok("a binary client that never reads its stat replies: closed after %.1f s (--reply-timeout %d), another served" % (took, timeout))


def rights(port, user, pw, prefix):
    c = Conn(port)
    c.send(req(0x21, key=b"PLAIN", val=b"\0" + user.encode() + b"\0" + pw.encode()))
    if c.resp()[1] != 0:
        fail("auth as %s" % user)
    mine, other = (prefix + "ok").encode(), b"zz_not_mine"
    c.send(req(0x05, arith(1, 1), mine, opaque=1) + req(0x05, arith(1, 1), other, opaque=2) +
           req(0x0c, key=other, opaque=3) + req(0x0a, opaque=4))
    r = [c.resp() for _ in range(4)]
    if r[0][1] != 0 or u64(r[0][6]) != 1:
        fail("a name the rights allow: %r" % (r[0],))
    for x in r[1:3]:
        if x[1] != 0x0004 or b"permission denied" not in x[6]:
            fail("a name the rights do not allow: %r" % (x,))
    if r[3][0] != 0x0a:
        fail("noop after refusals: %r" % (r[3],))
    ok("--rights-file over SASL: %s's %s served, %s refused (%s)" % (user, mine.decode(), other.decode(), r[1][6].decode()))


def auth(port, user, pw):
    c = Conn(port)
    c.send(req(0x05, arith(1, 1), b"authx", opaque=3))
    r = c.resp()
    if r is None or r[1] != 0x0020 or not c.eof():
        fail("increment before authenticating: %r" % (r,))
    ok("increment before authenticating: 0x20, closed")
    c = Conn(port)
    c.send(req(0x20, opaque=4))
    r = c.resp()
    if r[1] != 0 or r[6] != b"PLAIN":
        fail("list mechs: %r" % (r,))
    c.send(req(0x21, key=b"PLAIN", val=b"\0" + user.encode() + b"\0" + pw.encode(), opaque=5))
    r = c.resp()
    if r[1] != 0 or r[2] != 5:
        fail("auth PLAIN: %r" % (r,))
    c.send(req(0x05, arith(1, 1), b"authx", opaque=6))
    r = c.resp()
    if r[1] != 0:
        fail("increment after authenticating: %r" % (r,))
    ok("list mechs: PLAIN; auth PLAIN as %s; increment answered %d" % (user, u64(r[6])))
    times = []
    for i in range(3):
        b = Conn(port, timeout=15)  # the delay grows to 3.2 s; a loaded machine
        t0 = time.time()
        b.send(req(0x21, key=b"PLAIN", val=b"\0" + user.encode() + b"\0wrong" + pw.encode()))
        r = b.resp()
        times.append(time.time() - t0)
        if r is None or r[1] != 0x0020 or not b.eof():
            fail("a wrong password: %r" % (r,))
    if times[-1] < 0.15:
        fail("repeated failures are not slowed down: %r" % times)
    ok("a wrong password: 0x20, closed; repeated failures answered after %.2f s, %.2f s, %.2f s" % tuple(times))


def parallel(port, user, n):
    """After failures from 127.0.0.1, n connections send a wrong SASL PLAIN
    password at once: their guesses wait for the address's turns, one at a
    time (lcd_auth_turn), so at most n // 3 are answered in 8 s."""
    import select
    conns = []
    for i in range(n):
        try:
            c = Conn(port, timeout=10)
        except OSError:
            break
        c.send(req(0x21, key=b"PLAIN", val=b"\0" + user.encode() + b"\0guess%05d" % i))
        conns.append(c)
    t0 = time.time()
    live = {c.s: c for c in conns}
    answered = 0
    while live and time.time() - t0 < 8:
        rd, _, _ = select.select(list(live), [], [], 0.2)
        for sk in rd:
            try:
                d = sk.recv(4096)
            except OSError:
                d = b""
            if d:
                answered += 1
            live.pop(sk).s.close()
    for c in live.values():
        c.s.close()
    if answered > n // 3:
        fail("%d parallel wrong SASL passwords: %d answered in 8 s (each "
             "waited on its own, not for its address's turn)" % (len(conns), answered))
    ok("%d parallel wrong SASL passwords from one address: %d answered in 8 s"
       % (len(conns), answered))


if __name__ == "__main__":
    if sys.argv[1] == "plain":
        plain(int(sys.argv[2]), sys.argv[3])
    elif sys.argv[1] == "parallel":
        parallel(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "unread":
        unread(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    else:
        auth(int(sys.argv[2]), sys.argv[3], sys.argv[4])
        if len(sys.argv) > 7:
            rights(int(sys.argv[2]), sys.argv[5], sys.argv[6], sys.argv[7])
