#!/usr/bin/python3
"""tls_clients.py - TLS clients against logcounterd, for tests/suite_tls.sh.
Only connects to 127.0.0.1; the CA, certificates and keys are the suite's
throwaway ones in its temporary directory.

  tls_clients.py pipeline PORT CA NAME
      pymemcache (tls_context) allocates NAME, sends 100,000
      "incr NAME 1 noreply" lines (pymemcache's noreply, then one
      sendall of a raw TLS socket), and reads NAME back: exactly the
      first value plus every increment.
  tls_clients.py plain PORT
      A plain-text client on the TLS port gets no answer and is closed.
  tls_clients.py mtls PORT CA CERT KEY
      Without a client certificate no request is answered; with CERT, KEY
      one is.
  tls_clients.py reload PORT CA PIDFILE CERT KEY NEWCERT NEWKEY NEWCN
      A connection opened first allocates; the new files replace CERT and
      KEY, the daemon gets SIGHUP; a new connection sees NEWCN as its
      subject, the old one still allocates.
  tls_clients.py silent PORT SECONDS
      A client that connects to the TLS port and sends nothing is closed
      within SECONDS (--line-timeout bounds the handshake).
  tls_clients.py unread PORT CA NAME
      A TLS client pipelines incr requests and never reads the replies
      while another TLS client allocates: the other is answered, the
      unread one is closed (--reply-timeout).
  tls_clients.py load PORT CA NAME STOPFILE [CERT KEY]
      Allocates NAME over TLS (with a client certificate if given) until
      STOPFILE exists (or, with STOPFILE "-", until the daemon closes the
      connection); every id higher than the last.  Prints how many.
      With TLS_LOAD_USER=U in the environment it first authenticates as
      U (password in AUTH_U) with the set handshake.
  tls_clients.py scrape MPORT DPORT CA N [CERT KEY]
      Scrapes https://127.0.0.1:MPORT/metrics (verified against CA, with a
      client certificate if given), allocates N new names over TLS on
      DPORT, scrapes again: logcounterd_counters grew by exactly N and
      logcounterd_incr_ids_total by at least N.
  tls_clients.py plainhttp MPORT CA
      A plain HTTP request to the HTTPS /metrics port gets no HTTP answer
      and is closed within 5 s; an HTTPS scrape right after answers 200.
  tls_clients.py metricsmtls MPORT CA CERT KEY
      Without a client certificate /metrics answers nothing (the
      handshake fails); with CERT, KEY it answers 200.
  tls_clients.py httpscrape MPORT
      A plain HTTP scrape (a notls: --metrics-listen) answers 200 with
      logcounterd_ samples; an HTTPS handshake there fails.
  tls_clients.py authtls PORT CA NAME
      --auth-file with TLS: pymemcache (tls_context) authenticates with
      the set handshake (AUTH_ALICE) and allocates 1..20 on NAME; a wrong
      password is answered CLIENT_ERROR authentication failed and the
      connection closed, an incr before the handshake CLIENT_ERROR
      unauthenticated and closed, each over TLS; NAME is still at 20.

LC_TEST_SCALE=N (the sanitizer runs) divides the pipeline counts.
Prints "ok ..." per check, "FAIL ..." (then exits 1) on the first failure.
"""
import os
import signal
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request

from pymemcache.client.base import Client as PmClient
from unread import race, small_socket

SCALE = max(1, int(os.environ.get("LC_TEST_SCALE", "1") or 1))
N = 100000 // SCALE


def fail(msg):
    print("FAIL " + msg, flush=True)
    sys.exit(1)


def ok(msg):
    print("ok   " + msg, flush=True)


def context(ca, cert=None, key=None):
    ctx = ssl.create_default_context(cafile=ca)
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


class Tls:
    """A raw text-protocol connection over TLS."""

    def __init__(self, port, ctx, timeout=30):
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        self.buf = b""

    def subject_cn(self):
        for rdn in self.s.getpeercert()["subject"]:
            for k, v in rdn:
                if k == "commonName":
                    return v
        return None

    def send(self, data):
        self.s.sendall(data)

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise ConnectionError("connection closed; had %r"
                                      % self.buf[:200])
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def ask(self, req):
        self.send(req.encode() + b"\r\n")
        return self.line()


def pm(port, ca):
    return PmClient(("127.0.0.1", port), timeout=30, tls_context=context(ca))


def pipeline(port, ca, name):
    c = pm(port, ca)
    first = c.incr(name, 1)
    if first is None:
        fail("incr %s over TLS: %r" % (name, first))
    for _ in range(N):
        c.incr(name, 1, noreply=True)
    got = int(c.get(name))
    if got != first + N:
        fail("after %d pymemcache noreply incr: %d, not %d" % (N, got, first + N))
    ok("pymemcache over TLS: %d noreply incr after %d read back exactly"
       % (N, first))
    t = Tls(port, context(ca))
    t0 = time.time()
    t.send(("incr %s 1 noreply\r\n" % name).encode() * N)
    last = int(t.ask("incr %s 1" % name))
    if last != got + N + 1:
        fail("after a pipeline of %d noreply lines: %d, not %d"
             % (N, last, got + N + 1))
    if int(c.get(name)) != last:
        fail("pymemcache reads %r, not %d" % (c.get(name), last))
    ok("a raw TLS pipeline of %d noreply incr lines (%.2f s), then %d: exact"
       % (N, time.time() - t0, last))


def plain_exchange(port, data, what):
    """Sends data in plain text to a TLS port; what comes back before the
    close (a TLS alert at most).  Fails unless closed within 5 s."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(data)
    got = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    except ConnectionResetError:
        pass
    except socket.timeout:
        fail("%s was not closed in 5 s" % what)
    return got


def plain(port):
    got = plain_exchange(port, b"version\r\nincr plainclient 1\r\n",
                         "a plain-text client on the TLS port")
    if b"VERSION" in got or b"\r\n" in got:
        fail("a plain-text client on the TLS port got an answer: %r" % got[:100])
    ok("a plain-text client on the TLS port got no answer and was closed "
       "(%d bytes: a TLS alert at most)" % len(got))


def silent(port, seconds):
    s = socket.create_connection(("127.0.0.1", port), timeout=seconds + 5)
    t0 = time.time()
    try:
        got = s.recv(4096)
    except ConnectionResetError:
        got = b""
    except socket.timeout:
        fail("a client that never starts the handshake was not closed")
    took = time.time() - t0
    if got or took > seconds + 2:
        fail("never-handshaking client: %r after %.1f s" % (got, took))
    ok("a client that never starts the TLS handshake was closed after %.1f s"
       % took)


def mtls(port, ca, cert, key):
    try:
        t = Tls(port, context(ca), timeout=5)
        r = t.ask("version")
        fail("without a client certificate: answered %r" % r)
    except SystemExit:
        raise
    except (ssl.SSLError, OSError) as e:
        ok("without a client certificate: refused (%s)" % type(e).__name__)
    t = Tls(port, context(ca, cert, key), timeout=5)
    r = t.ask("version")
    if not r.startswith("VERSION"):
        fail("with a client certificate: %r" % r)
    v = t.ask("incr mtls 1")
    if not v.isdigit():
        fail("with a client certificate, incr: %r" % v)
    ok("with a client certificate: answered (%s, incr %s)" % (r, v))


def reload(port, ca, pidfile, cert, key, newcert, newkey, newcn):
    old = Tls(port, context(ca))
    oldcn = old.subject_cn()
    a = int(old.ask("incr reload 1"))
    os.replace(newcert, cert + ".tmp")
    os.replace(newkey, key + ".tmp")
    os.replace(key + ".tmp", key)
    os.replace(cert + ".tmp", cert)
    with open(pidfile) as f:
        os.kill(int(f.read()), signal.SIGHUP)
    cn = None
    for _ in range(50):
        time.sleep(0.1)
        cn = Tls(port, context(ca), timeout=5).subject_cn()
        if cn == newcn:
            break
    if cn != newcn:
        fail("after SIGHUP a new connection sees %r, not %r" % (cn, newcn))
    b = int(old.ask("incr reload 1"))
    if b != a + 1:
        fail("the connection opened before the reload: %d after %d" % (b, a))
    ok("after SIGHUP: a new connection sees %s (was %s), the old one "
       "still allocates (%d, %d)" % (cn, oldcn, a, b))


def unread(port, ca, name):
    s = context(ca).wrap_socket(small_socket(port),
                                server_hostname="127.0.0.1")
    other = pm(port, ca)
    sent, closed, answered, worst = race(
        s, ("incr %s 1\r\n" % name).encode() * 1000,
        lambda: other.incr(name + "other", 1), fail)
    ok("a TLS client pipelining %d,000 incr without reading was closed "
       "after %.1f s; another TLS client was answered %d times meanwhile "
       "(slowest %.3f s)" % (sent, closed, answered, worst))


def load(port, ca, name, stopfile, cert=None, key=None):
    t = Tls(port, context(ca, cert, key))
    user = os.environ.get("TLS_LOAD_USER")
    if user:
        tok = "%s %s" % (user, os.environ["AUTH_" + user.upper()])
        t.send(("set auth 0 0 %d\r\n%s\r\n" % (len(tok), tok)).encode())
        if t.line() != "STORED":
            fail("load %s: cannot authenticate as %s" % (name, user))
    last, n = 0, 0
    while stopfile == "-" or not os.path.exists(stopfile):
        try:
            t.send(("incr %s 1\r\n" % name).encode())
            v = int(t.line())
        except (OSError, ssl.SSLError, ValueError) as e:
            if stopfile == "-":
                break
            fail("load %s: %s" % (name, e))
        if v <= last:
            fail("load %s: %d after %d" % (name, v, last))
        last, n = v, n + 1
        if n == 1:
            print("started", flush=True)
    if n == 0:
        fail("load %s: no id" % name)
    ok("load %s: %d ids over TLS, each higher than the last (last %d)"
       % (name, n, last))


def https_get(mport, ctx, path="/metrics", timeout=5):
    url = "https://127.0.0.1:%d%s" % (mport, path)
    h = urllib.request.HTTPSHandler(context=ctx)
    with urllib.request.build_opener(h).open(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def sample(body, name):
    for ln in body.splitlines():
        if not ln.startswith("#"):
            k, _, v = ln.rpartition(" ")
            if k == name:
                return float(v)
    fail("no sample %s in the scrape" % name)


def scrape(mport, dport, ca, n, cert=None, key=None):
    ctx = context(ca, cert, key)
    st, before = https_get(mport, ctx)
    if st != 200:
        fail("HTTPS /metrics: status %d" % st)
    c0 = sample(before, "logcounterd_counters")
    i0 = sample(before, "logcounterd_incr_ids_total")
    t = Tls(dport, ctx)
    tag = "scrape%d" % os.getpid()
    for k in range(n):
        v = t.ask("incr %s-%d 5" % (tag, k))
        if not v.isdigit():
            fail("incr %s-%d over TLS: %r" % (tag, k, v))
    st, after = https_get(mport, ctx)
    c1 = sample(after, "logcounterd_counters")
    i1 = sample(after, "logcounterd_incr_ids_total")
    if c1 - c0 != n:
        fail("logcounterd_counters %g -> %g after %d new names, not +%d"
             % (c0, c1, n, n))
    if i1 - i0 < 5 * n:
        fail("logcounterd_incr_ids_total %g -> %g after %d ids"
             % (i0, i1, 5 * n))
    ok("HTTPS /metrics: logcounterd_counters %g -> %g after %d new names, "
       "incr_ids_total %g -> %g (>= +%d)" % (c0, c1, n, i0, i1, 5 * n))


def plainhttp(mport, ca):
    got = plain_exchange(
        mport, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "a plain HTTP request to the HTTPS port")
    if b"HTTP/" in got or b"logcounterd_" in got:
        fail("a plain HTTP request to the HTTPS port was answered: %r"
             % got[:100])
    st, body = https_get(mport, context(ca))
    if st != 200 or "logcounterd_incr_ids_total" not in body:
        fail("HTTPS /metrics after the plain request: %d" % st)
    ok("a plain HTTP request to the HTTPS /metrics port: no HTTP answer, "
       "closed (%d bytes: a TLS alert at most); HTTPS still 200" % len(got))


def metricsmtls(mport, ca, cert, key):
    try:
        st, _ = https_get(mport, context(ca))
        fail("/metrics without a client certificate: answered %d" % st)
    except SystemExit:
        raise
    except (ssl.SSLError, OSError, urllib.error.URLError) as e:
        ok("/metrics without a client certificate: refused (%s)"
           % type(e).__name__)
    st, body = https_get(mport, context(ca, cert, key))
    if st != 200 or "logcounterd_incr_ids_total" not in body:
        fail("/metrics with a client certificate: %d" % st)
    ok("/metrics with a client certificate: 200")


def httpscrape(mport):
    url = "http://127.0.0.1:%d/metrics" % mport
    with urllib.request.urlopen(url, timeout=5) as r:
        st, body = r.status, r.read().decode()
    if st != 200 or "logcounterd_incr_ids_total" not in body:
        fail("plain /metrics (notls:): %d" % st)
    raw = socket.create_connection(("127.0.0.1", mport), timeout=5)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        fail("a TLS handshake succeeded on the notls: /metrics port")
    except SystemExit:
        raise
    except (ssl.SSLError, OSError) as e:
        ok("notls: /metrics is plain HTTP (200, %d bytes); a TLS handshake "
           "there fails (%s)" % (len(body), type(e).__name__))


def closed(t):
    try:
        while True:
            if not t.s.recv(4096):
                return True
    except (OSError, ssl.SSLError):
        return True


def authtls(port, ca, name):
    pw = os.environ["AUTH_ALICE"]
    c = pm(port, ca)
    if c.set("auth", "alice " + pw, noreply=False) is not True:
        fail("pymemcache over TLS: the handshake set did not answer STORED")
    got = [c.incr(name, 1) for _ in range(20)]
    if got != list(range(1, 21)):
        fail("pymemcache over TLS after auth: %r" % got[:5])
    ok("pymemcache (tls_context) authenticates with set and allocates 1..20")
    for what, req, want in (
            ("a wrong password",
             "set x 0 0 %d\r\nalice wrong-%s\r\nincr %s 1\r\n"
             % (len("alice wrong-" + pw), pw, name),
             "CLIENT_ERROR authentication failed"),
            ("an incr before the handshake", "incr %s 1\r\n" % name,
             "CLIENT_ERROR unauthenticated")):
        t = Tls(port, context(ca), timeout=10)
        t.send(req.encode())
        r = t.line()
        if r != want:
            fail("%s over TLS: %r, not %r" % (what, r, want))
        if not closed(t):
            fail("%s over TLS: the connection stays open" % what)
        ok("%s over TLS: %s, closed" % (what, r))
    if c.incr(name, 1) != 21:
        fail("after the refusals %s is not at 21: nothing refused may "
             "allocate" % name)
    ok("the refused requests allocated nothing (%s: 21 next)" % name)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    port = int(args[0])
    if cmd == "pipeline":
        pipeline(port, args[1], args[2])
    elif cmd == "plain":
        plain(port)
    elif cmd == "silent":
        silent(port, float(args[1]))
    elif cmd == "mtls":
        mtls(port, *args[1:5])
    elif cmd == "reload":
        reload(port, *args[1:8])
    elif cmd == "unread":
        unread(port, args[1], args[2])
    elif cmd == "load":
        load(port, *args[1:6])
    elif cmd == "scrape":
        scrape(port, int(args[1]), args[2], int(args[3]), *args[4:6])
    elif cmd == "plainhttp":
        plainhttp(port, args[1])
    elif cmd == "metricsmtls":
        metricsmtls(port, *args[1:4])
    elif cmd == "httpscrape":
        httpscrape(port)
    elif cmd == "authtls":
        authtls(port, args[1], args[2])
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()
