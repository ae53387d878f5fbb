#!/usr/bin/python3
"""auth_client.py - logcounterd's --auth-file and --rights-file, driven by
stock memcached clients and a raw socket, for tests/suite_auth.sh.  Only
connects to 127.0.0.1.  Passwords come from the environment (AUTH_*),
made up by the suite at run time.

  auth_client.py basic PORT PREFIX
      pymemcache and pylibmc authenticate with the set handshake, then
      allocate; a wrong password, a command before the handshake (get) and
      an incr before it are refused with their messages and the
      connection closed; nothing they named exists (get after
      authenticating); version and quit work unauthenticated; stats
      counts auth_cmds and auth_errors; stats settings says
      auth_enabled_ascii yes.  A third client allocates throughout.
  auth_client.py delay PORT SOCKET
      repeated failures over the unix socket (one peer address, "unix",
      apart from 127.0.0.1's failures) wait longer and longer: the n-th
      takes at least the delay the table gives it (lower bounds only: no
      timing threshold can flake), and stats auth_delayed grows.
  auth_client.py reload PORT PID AUTHFILE
      a connection authenticated with the old password; the file rewritten
      with a new password and SIGHUP: the new password works, the old one
      fails, the first connection still allocates; a malformed file and
      SIGHUP: the last good table stays.
  auth_client.py rights PORT [PID RIGHTSFILE]
      alice (prefix=orders- names=4) and bob (prefix=tenant42: prefix=tb-):
      alice outside her prefix is refused for incr, get, gets (a long one
      too), ma, mg, tallies and stats tally; at her name limit she is
      refused while bob still creates names, and while bob allocates; with
      PID and RIGHTSFILE, a rewritten file and SIGHUP take tenant42: away
      from bob's open connection.
  auth_client.py parallel PORT N
      an attacker's N connections from 127.0.0.1 send a wrong password all
      at once (after two failures): its guesses are checked one turn at a
      time for the address, so at most 100 of them are answered in 10 s
      (before: every one, each connection delayed on its own); an
      authenticated client allocates meanwhile, never waiting 5 s.
Prints "ok ..." per check, "FAIL ..." then exit 1 on the first failure.
"""
import os
import signal
import socket
import sys
import threading
import time

import pylibmc
from pymemcache.client.base import Client as PmClient


def fail(msg):
    print("FAIL " + msg, flush=True)
    sys.exit(1)


def ok(msg):
    print("ok   " + msg, flush=True)


def pw(user):
    return os.environ["AUTH_" + user.upper()]


class Raw:
    def __init__(self, port, timeout=20):
        if isinstance(port, str):  # a unix socket
            self.s = socket.socket(socket.AF_UNIX)
            self.s.settimeout(timeout)
            self.s.connect(port)
        else:
            self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data.encode() if isinstance(data, str) else data)

    def line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                return None  # EOF
            self.buf += d
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln.decode()

    def ask(self, req):
        self.send(req + "\r\n")
        return self.line()

    def auth(self, user, password):
        tok = "%s %s" % (user, password)
        self.send("set auth 0 0 %d\r\n%s\r\n" % (len(tok), tok))
        return self.line()

    def eof(self):
        try:
            while True:
                d = self.s.recv(65536)
                if not d:
                    return True
        except OSError:
            return True

    def close(self):
        self.s.close()


def stats(port, user, group=""):
    r = Raw(port)
    if r.auth(user, pw(user)) != "STORED":
        fail("stats: cannot authenticate")
    r.send("stats %s\r\n" % group if group else "stats\r\n")
    out = {}
    while True:
        ln = r.line()
        if ln == "END" or ln is None:
            break
        _, k, v = ln.split(" ", 2)
        out[k] = v
    r.close()
    return out


class Allocator(threading.Thread):
    """An authenticated client allocating on its own counter, checking its
    ids rise, until stopped."""

    def __init__(self, port, user, name):
        super().__init__(daemon=True)
        self.port, self.user, self.name = port, user, name
        self.stop = False
        self.n = 0
        self.err = None
        self.worst = 0.0

    def run(self):
        try:
            r = Raw(self.port)
            if r.auth(self.user, pw(self.user)) != "STORED":
                raise RuntimeError("allocator cannot authenticate")
            r.s.settimeout(5)  # a denial of service: a timeout
            last = 0
            while not self.stop:
                t = time.monotonic()
                v = r.ask("incr %s 1" % self.name)
                self.worst = max(self.worst, time.monotonic() - t)
                if v is None or not v.isdigit() or int(v) <= last:
                    raise RuntimeError("allocator got %r after %d" % (v, last))
                last = int(v)
                self.n += 1
            r.close()
        except Exception as e:  # reported by finish()
            self.err = e

    def finish(self):
        self.stop = True
        self.join(30)
        if self.err or self.n == 0:
            fail("the allocator beside: %s (%d ids)" % (self.err, self.n))
        ok("meanwhile another authenticated client allocated %d ids (slowest "
           "reply %.3f s)" % (self.n, self.worst))


def refused(port, req, want, user=None, password=None):
    """Sends req (after the handshake if user given); the reply must be
    want and the connection closed."""
    r = Raw(port)
    if user is not None:
        r.send(req)
        got = r.line()
    else:
        got = r.ask(req)
    if got != want:
        fail("%r: want %r, got %r" % (req[:40], want, got))
    if not r.eof():
        fail("%r: connection not closed after %r" % (req[:40], want))
    r.close()


def basic(port, prefix):
    bg = Allocator(port, "alice", prefix + "bg")
    bg.start()
    # pymemcache: set with noreply=False (its default noreply=True sends
    # "noreply"; the daemon then answers nothing, memcached would STORED)
    pm = PmClient(("127.0.0.1", port), timeout=10)
    if pm.set("auth", "alice " + pw("alice"), noreply=False) is not True:
        fail("pymemcache: the handshake set did not answer STORED")
    a = [pm.incr(prefix + "pm", 1) for _ in range(50)]
    if a != list(range(1, 51)):
        fail("pymemcache after auth: %r" % a[:5])
    ok("pymemcache authenticates (set noreply=False) and allocates 1..50")
    pm2 = PmClient(("127.0.0.1", port), timeout=10)
    pm2.set("auth", "bob " + pw("bob"))  # noreply: no STORED to desync
    if pm2.incr(prefix + "pm", 1) != 51:
        fail("pymemcache with a noreply handshake")
    ok("pymemcache's default noreply handshake works too (no stray STORED)")
    # pylibmc (libmemcached): memcached_set sends "set auth 0 0 LEN"
    mc = pylibmc.Client(["127.0.0.1:%d" % port])
    if not mc.set("auth", "bob " + pw("bob")):
        fail("pylibmc: the handshake set failed")
    b = [mc.incr(prefix + "pl", 1) for _ in range(50)]
    if b != list(range(1, 51)):
        fail("pylibmc after auth: %r" % b[:5])
    ok("pylibmc authenticates (set) and allocates 1..50")
    # refusals
    tok = "alice wrong-" + pw("alice")
    refused(port, "set x 0 0 %d\r\n%s\r\nincr %sw 1\r\n" % (len(tok), tok, prefix),
            "CLIENT_ERROR authentication failed", user="alice")
    ok("a wrong password: CLIENT_ERROR authentication failed, closed")
    tok = "mallory " + pw("alice")
    refused(port, "set x 0 0 %d\r\n%s\r\n" % (len(tok), tok),
            "CLIENT_ERROR authentication failed", user="mallory")
    ok("an unknown user: the same message")
    refused(port, "get %sm" % prefix, "CLIENT_ERROR unauthenticated")
    ok("a get without the handshake: CLIENT_ERROR unauthenticated, closed")
    refused(port, "incr %si 1" % prefix, "CLIENT_ERROR unauthenticated")
    ok("an incr before the handshake: CLIENT_ERROR unauthenticated, closed")
    refused(port, "ma %sa v" % prefix, "CLIENT_ERROR unauthenticated")
    refused(port, "set x 0 0 3\r\nabc\r\n", "CLIENT_ERROR bad authentication token format",
            user="-")
    ok("ma before auth and a malformed token are refused too")
    r = Raw(port)
    if not (r.ask("version") or "").startswith("VERSION "):
        fail("version unauthenticated")
    r.send("quit\r\n")
    if not r.eof():
        fail("quit unauthenticated")
    ok("version and quit work unauthenticated")
    r = Raw(port)
    r.auth("alice", pw("alice"))
    r.send("get %sw %sm %si %sa\r\n" % (prefix, prefix, prefix, prefix))
    if r.line() != "END":
        fail("a refused request created a counter")
    ok("nothing was created by the refused requests")
    st = stats(port, "alice")
    if int(st["auth_cmds"]) < 6 or int(st["auth_errors"]) < 6:
        fail("auth_cmds %s auth_errors %s" % (st["auth_cmds"], st["auth_errors"]))
    ok("stats: auth_cmds %s, auth_errors %s" % (st["auth_cmds"], st["auth_errors"]))
    st = stats(port, "alice", "settings")
    if st.get("auth_enabled_ascii") != "yes":
        fail("stats settings: auth_enabled_ascii %r" % st.get("auth_enabled_ascii"))
    ok("stats settings: auth_enabled_ascii yes")
    bg.finish()


def delay(port, sock):
    d0 = int(stats(port, "alice")["auth_delayed"])
    took = []
    for i in range(5):
        t = time.monotonic()
        refused(sock, "incr x 1", "CLIENT_ERROR unauthenticated")
        took.append(time.monotonic() - t)
    d1 = int(stats(port, "alice")["auth_delayed"])
    print("    failure times: " + " ".join("%.2f" % x for x in took))
    # The k-th of these is at least the (k+1)-th failure in a row from
    # the unix socket (earlier ones count too): at least 100 ms * 2^(k-1).
    for k in range(1, 5):
        if took[k] < 0.1 * 2 ** (k - 1) * 0.95:
            fail("failure %d answered after %.3f s" % (k + 1, took[k]))
    ok("repeated failures wait at least 0.1, 0.2, 0.4, 0.8 s (doubling)")
    if d1 - d0 < 4:
        fail("auth_delayed grew by %d" % (d1 - d0))
    ok("stats auth_delayed grew by %d" % (d1 - d0))
    r = Raw(sock)
    t = time.monotonic()
    if r.auth("alice", pw("alice")) != "STORED":
        fail("a good login after failures")
    ok("a good login after the failures took %.2f s" % (time.monotonic() - t))


def parallel(port, n):
    import select
    bg = Allocator(port, "bob", "parallel-bg")  # alice changed at reload
    bg.start()
    while bg.n == 0 and bg.err is None:  # in before the attack
        time.sleep(0.05)
    for i in range(2):
        refused(port, "set a 0 0 %d\r\nalice bad%d\r\n" % (10, i),
                "CLIENT_ERROR authentication failed", user="alice")
    conns = [Raw(port) for _ in range(n)]
    for i, c in enumerate(conns):
        tok = "alice wrong%05d" % i
        c.send("set a 0 0 %d\r\n%s\r\n" % (len(tok), tok))
    t0 = time.monotonic()
    answered, stored, live = 0, 0, {c.s: c for c in conns}
    while live and time.monotonic() - t0 < 10:
        rd, _, _ = select.select(list(live), [], [], 0.2)
        for s in rd:
            c = live.pop(s)
            try:
                got = c.line()
            except OSError:
                got = None
            if got == "CLIENT_ERROR authentication failed":
                answered += 1
            elif got == "STORED":
                stored += 1
    for c in conns:
        c.close()
    print("    %d wrong passwords sent at once: %d answered in 10 s, %d left "
          "waiting or closed unanswered" % (n, answered, n - answered - stored))
    if stored:
        fail("a wrong password was accepted")
    if answered > 100:
        fail("%d of %d parallel guesses answered in 10 s (at most 100)" %
             (answered, n))
    ok("parallel guesses from one address are throttled as a whole (%d of %d "
       "answered in 10 s)" % (answered, n))
    bg.finish()


def reload(port, pid, path):
    old = pw("alice")
    a = Raw(port)
    if a.auth("alice", old) != "STORED":
        fail("old password before the reload")
    last = int(a.ask("incr rl-a 1"))
    new = "n" + old[::-1]
    with open(os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                      0o600), "w") as f:  # private, or it is refused
        f.write("# reloaded\nalice:%s\nbob:%s\n" % (new, pw("bob")))
    os.rename(path + ".tmp", path)
    os.kill(pid, signal.SIGHUP)
    for _ in range(200):
        r = Raw(port)
        got = r.auth("alice", new)
        r.close()
        if got == "STORED":
            break
        time.sleep(0.05)
    else:
        fail("the new password never worked after SIGHUP")
    ok("after SIGHUP the new password works")
    tok = "alice " + old
    refused(port, "set x 0 0 %d\r\n%s\r\n" % (len(tok), tok),
            "CLIENT_ERROR authentication failed", user="alice")
    ok("the old password fails")
    v = int(a.ask("incr rl-a 1"))
    if v != last + 1:
        fail("the connection authenticated before: %d after %d" % (v, last))
    ok("the connection authenticated before the reload still allocates")
    with open(path, "w") as f:
        f.write("alice %s\n" % new)  # no ':'
    os.kill(pid, signal.SIGHUP)
    time.sleep(0.5)
    r = Raw(port)
    if r.auth("alice", new) != "STORED":
        fail("a malformed file replaced the table")
    ok("a malformed file at SIGHUP keeps the last good table")
    os.environ["AUTH_ALICE"] = new


def rights(port):
    bg = Allocator(port, "bob", "tb-bg")
    bg.start()
    a = Raw(port)
    if a.auth("alice", pw("alice")) != "STORED":
        fail("alice cannot authenticate")
    deny = "CLIENT_ERROR permission denied: no prefix right for this name"

    def want(req, w):
        got = a.ask(req)
        if got != w:
            fail("alice %r: want %r, got %r" % (req, w, got))

    want("incr orders-1 1", "1")
    want("incr tally:orders-t 5", "5")
    want("incr other 1", deny)
    want("get other", deny)
    want("gets orders-1 other", deny)
    want("ma other v", deny)
    want("mg other v", deny)
    want("incr tally:other 1", deny)
    want("decr tally:other 1", deny)
    want("stats tally other", deny)
    want("incr tally:orders-x 1", "1")
    ok("alice outside orders- is refused: incr, get, gets, ma, mg, tallies, stats tally")
    # a long get: 300 keys, one outside her prefix at 250: refused whole,
    # as a short one is (no VALUE before the refusal, no END after)
    keys = ["orders-1"] * 300
    keys[250] = "zz"
    a.send("get " + " ".join(keys) + "\r\n")
    n = 0
    while True:
        ln = a.line()
        if ln is None:
            fail("long get: EOF")
        if ln.startswith("VALUE"):
            a.line()
            n += 1
            continue
        if ln != deny or n:
            fail("long get: ended with %r after %d values" % (ln, n))
        break
    want("incr orders-1 1", "2")
    ok("a long get with one key outside her prefix is refused whole, as a short one")
    # names=4: orders-1, tally:orders-t, tally:orders-x, then one more
    want("incr orders-2 1", "1")
    lim = "CLIENT_ERROR permission denied: names limit of this user reached (names= in the rights file)"
    want("incr orders-3 1", lim)
    want("ma orders-4 v", lim)
    want("incr tally:orders-y 1", lim)
    want("incr orders-1 1", "3")
    want("get orders-3 orders-4", "END")
    ok("alice at her names=4 limit is refused new names, keeps her old ones")
    b = Raw(port)
    if b.auth("bob", pw("bob")) != "STORED":
        fail("bob cannot authenticate")
    for i in range(20):
        if b.ask("incr tenant42:n%d 1" % i) != "1":
            fail("bob cannot create names")
    if b.ask("incr orders-9 1") != deny:
        fail("bob inside alice's prefix")
    ok("bob still creates 20 new names; he is refused alice's prefix")
    # new names pipelined in one write (the daemon serves such runs
    # together): the one outside his prefixes is refused in its place
    b.send("incr tb-m1 1\r\nincr tb-m2 1\r\nincr orders-m 1\r\n"
           "incr tb-m3 1\r\nincr tb-m1 1\r\n")
    got = [b.line() for _ in range(5)]
    if got != ["1", "1", deny, "1", "2"]:
        fail("bob's pipelined new names: %r" % got)
    ok("bob's pipelined new names: the one in alice's prefix refused in "
       "its place, the rest answered in order")
    bg.finish()
    if len(sys.argv) > 4:  # PID RIGHTSFILE: revoke bob's tenant42: at SIGHUP
        pid, path = int(sys.argv[3]), sys.argv[4]
        with open(path, "w") as f:
            f.write("alice prefix=orders- names=4\nbob prefix=tb-\n")
        os.kill(pid, signal.SIGHUP)
        for _ in range(200):
            if b.ask("incr tenant42:n0 1") == deny:
                break
            time.sleep(0.05)
        else:
            fail("bob keeps tenant42: after the rights reload")
        if b.ask("incr tb-bg 1") in (None, deny):
            fail("bob lost tb- too")
        ok("SIGHUP: bob's connection loses tenant42: at once, keeps tb-")


def main():
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd == "basic":
        basic(port, sys.argv[3])
    elif cmd == "delay":
        delay(port, sys.argv[3])
    elif cmd == "reload":
        reload(port, int(sys.argv[3]), sys.argv[4])
    elif cmd == "rights":
        rights(port)
    elif cmd == "parallel":
        parallel(port, int(sys.argv[3]))
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()
