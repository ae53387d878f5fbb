#!/usr/bin/python3
"""flood.py - an unauthenticated attacker against one of logcounterd's
ports, with well-behaved clients beside it, for the suites of issue 38
(tests/suite_metrics.sh, suite_tls.sh).  Only connects to 127.0.0.1.

  flood.py PORT N SECONDS DATAPORT [--send HEX] [--from ADDR]
           [--tls-port P --ca FILE]

Opens N connections to PORT (non-blocking connects, so a full backlog
does not stop it), writes HEX to each that connects (e.g. 160301: a TLS
record header and nothing more, a handshake stalled), and holds them for
SECONDS, opening a new one for each the daemon closes (and for each not
connected within a second: no waiting for SYN retries); --from: from
that loopback source address (127.0.0.2: another peer than the clients
beside, which come from 127.0.0.1).  Meanwhile:
  - a client connected before the attack allocates on DATAPORT without
    pause ("incr flood-bg 1"): every reply must come within 5 s;
  - every half second a NEW connection to DATAPORT must be answered
    ("incr flood-new 1", 5 s);
  - with --tls-port, every second a NEW TLS connection (CA file --ca)
    must finish its handshake and be answered on P.
Prints the figures; exit 1 with "FAIL ..." on the first failure.
"""
import errno
import resource
import select
import socket
import ssl
import sys
import threading
import time

TIMEOUT = 5.0  # a denial of service shows as a timeout


def fail(msg):
    print("FAIL " + msg, flush=True)
    sys.exit(1)


def incr(s, name):
    s.sendall(b"incr %s 1\r\n" % name.encode())
    buf = b""
    while not buf.endswith(b"\r\n"):
        d = s.recv(100)
        if not d:
            raise OSError("closed")
        buf += d
    v = buf.strip()
    if not v.isdigit():
        raise OSError("answered %r" % v)
    return int(v)


class Beside(threading.Thread):
    """The client connected before the attack, allocating throughout."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.s = socket.create_connection(("127.0.0.1", port), TIMEOUT)
        self.stop, self.n, self.err, self.worst = False, 0, None, 0.0

    def run(self):
        last = 0
        try:
            while not self.stop:
                t = time.monotonic()
                v = incr(self.s, "flood-bg")
                self.worst = max(self.worst, time.monotonic() - t)
                if v <= last:
                    raise OSError("%d after %d" % (v, last))
                last, self.n = v, self.n + 1
        except OSError as e:
            self.err = e


def new_plain(port):
    with socket.create_connection(("127.0.0.1", port), TIMEOUT) as s:
        s.settimeout(TIMEOUT)
        incr(s, "flood-new")


def new_tls(port, ca):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    with socket.create_connection(("127.0.0.1", port), TIMEOUT) as raw:
        raw.settimeout(TIMEOUT)
        with ctx.wrap_socket(raw) as s:
            incr(s, "flood-tls")


def main():
    args = sys.argv[1:]
    port, n, seconds, dport = int(args[0]), int(args[1]), float(args[2]), int(args[3])
    opts = dict(zip(args[4::2], args[5::2]))
    send = bytes.fromhex(opts.get("--send", ""))
    tls_port = int(opts["--tls-port"]) if "--tls-port" in opts else None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, n + 256)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    bg = Beside(dport)
    bg.start()
    conns = {}  # socket -> connected and sent

    def open_one():
        s = socket.socket()
        if "--from" in opts:
            s.bind((opts["--from"], 0))
        s.setblocking(False)
        rc = s.connect_ex(("127.0.0.1", port))
        if rc not in (0, errno.EINPROGRESS):
            s.close()
            return
        conns[s] = False
        since[s] = time.monotonic()

    since = {}
    for _ in range(n):
        open_one()
    t0 = time.monotonic()
    next_plain = next_tls = t0
    probes = tls_probes = reopened = 0
    while time.monotonic() - t0 < seconds:
        poller = select.poll()  # not select(): descriptors past 1024
        byfd = {}
        for s, d in conns.items():
            byfd[s.fileno()] = s
            poller.register(s, select.POLLIN if d else select.POLLOUT)
        for fd, ev in poller.poll(50):
            s = byfd[fd]
            if not conns[s] and ev & select.POLLOUT and \
                    s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                try:
                    if send:
                        s.send(send)
                    conns[s] = True
                    continue
                except OSError:
                    pass
            # refused, closed by the daemon, or written to: a new one
            del conns[s], since[s]
            s.close()
            open_one()
            reopened += 1
        now = time.monotonic()
        for s in [s for s, d in conns.items() if not d and now - since[s] > 1]:
            del conns[s], since[s]  # a new SYN now, not the kernel's retry
            s.close()
            open_one()
        now = time.monotonic()
        if now >= next_plain:
            next_plain = now + 0.5
            t = time.monotonic()
            try:
                new_plain(dport)
            except OSError as e:
                fail("a new connection to the data port during the attack: "
                     "%s after %.1f s" % (e, time.monotonic() - t))
            probes += 1
        if tls_port and now >= next_tls:
            next_tls = now + 1.0
            t = time.monotonic()
            try:
                new_tls(tls_port, opts["--ca"])
            except (OSError, ssl.SSLError) as e:
                fail("a new TLS client during the attack: %s after %.1f s" %
                     (e, time.monotonic() - t))
            tls_probes += 1
        if bg.err:
            fail("the client beside: %s" % bg.err)
    held = sum(1 for d in conns.values() if d)
    for s in list(conns):
        s.close()
    bg.stop = True
    bg.join(10)
    if bg.err or bg.n == 0:
        fail("the client beside: %s (%d ids)" % (bg.err, bg.n))
    print("ok   %d connections to port %d for %.0f s (%d connected at the "
          "end, %d closed by the daemon and opened again); beside: %d ids "
          "(slowest %.3f s), %d new data connections answered%s" %
          (n, port, seconds, held, reopened, bg.n, bg.worst, probes,
           ", %d new TLS clients answered" % tls_probes if tls_port else ""),
          flush=True)


if __name__ == "__main__":
    main()
