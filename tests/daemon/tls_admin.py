#!/usr/bin/python3
"""tls_admin.py - the admin relay ("admin" over TLS) of logcounterd, for
tests/suite_tlsadmin.sh.  Only connects to 127.0.0.1 (and the suite's
admin socket); users authenticate with the set handshake, the password of
USER in $AUTH_USER.

  tls_admin.py fill SOCK NAME N
      Through the admin socket SOCK, N pipelined "next NAME 1": N records.
  tls_admin.py relay PORT CA USER NAME
      "admin" sent in the same write as the handshake and a "hello" is
      answered "OK admin", then the admin hello; then 1,000 pipelined
      "current NAME" lines through the relay are answered in order, each
      with the same value as a last one asked after them.
  tls_admin.py refused PORT CA USER NAME WANT
      "admin" by USER is answered "CLIENT_ERROR WANT..." and the
      connection stays a data connection: an incr of NAME is answered.
  tls_admin.py unauth PORT CA
      "admin" before the handshake: CLIENT_ERROR unauthenticated, closed.
  tls_admin.py unread PORT CA USER NAME
      A relay that sends "records NAME" again and again and never reads
      is closed (--reply-timeout) while another TLS client allocates.
  tls_admin.py hold PORT CA USER
      Opens a relay, prints "held", and waits until the daemon closes it
      (at most 60 s): exits 0 once closed.

Prints "ok ..." per check, "FAIL ..." (then exits 1) on the first failure.
"""
import os
import socket
import sys
import threading
import time

from tls_clients import Tls, closed, context, fail, ok, pm
from unread import race, small_socket


def token(user):
    tok = "%s %s" % (user, os.environ["AUTH_" + user.upper()])
    return "set auth 0 0 %d\r\n%s\r\n" % (len(tok), tok)


def relay_open(port, ca, user, sock=None, extra=""):
    if sock is None:
        t = Tls(port, context(ca))
    else:
        t = Tls.__new__(Tls)
        t.s = context(ca).wrap_socket(sock, server_hostname="127.0.0.1")
        t.buf = b""
    t.send((token(user) + "admin\r\n" + extra).encode())
    for want in ("STORED", "OK admin"):
        got = t.line()
        if got != want:
            fail("relay as %s: %r, not %r" % (user, got, want))
    return t


def fill(sock, name, n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(sock)
    sender = threading.Thread(
        target=s.sendall, args=(("next %s 1\r\n" % name).encode() * n,))
    sender.start()  # the replies are read meanwhile
    buf, got = b"", 0
    while got < n:
        chunk = s.recv(1 << 16)
        if not chunk:
            fail("fill: the admin socket closed after %d" % got)
        buf += chunk
        lines = buf.split(b"\r\n")
        buf = lines.pop()
        for line in lines:
            if not line.startswith(b"OK "):
                fail("fill: %r" % line)
            got += 1
    sender.join()
    ok("fill %s: %d records through the admin socket" % (name, n))


def relay(port, ca, user, name):
    t = relay_open(port, ca, user, extra="hello\r\n")
    hello = t.line()
    if not hello.startswith("OK logcounter-admin "):
        fail("hello through the relay: %r" % hello)
    ok("admin pipelined after the handshake: OK admin, then %r" % hello)
    n = 1000
    t.send(("current %s\r\n" % name).encode() * n)
    got = [t.line() for _ in range(n)]
    last = t.ask("current %s" % name)
    if set(got) != {last} or not last.startswith("OK "):
        fail("current through the relay: %r ... and %r" % (got[:2], last))
    ok("%d pipelined admin requests through the relay: all %r" % (n, last))


def refused(port, ca, user, name, want):
    t = Tls(port, context(ca))
    t.send((token(user) + "admin\r\n").encode())
    got = [t.line(), t.line()]
    if got[0] != "STORED" or not got[1].startswith("CLIENT_ERROR " + want):
        fail("admin as %s: %r, not CLIENT_ERROR %s..." % (user, got, want))
    v = t.ask("incr %s 1" % name)
    if not v.isdigit():
        fail("after the refusal the connection does not allocate: %r" % v)
    ok("admin as %s: %r; the connection then allocates (%s)" % (user, got[1],
                                                                v))


def unauth(port, ca):
    t = Tls(port, context(ca), timeout=10)
    r = t.ask("admin")
    if r != "CLIENT_ERROR unauthenticated" or not closed(t):
        fail("admin before the handshake: %r" % r)
    ok("admin before the handshake: %r, closed" % r)


def unread(port, ca, user, name):
    t = relay_open(port, ca, user, sock=small_socket(port))
    other = pm(port, ca)
    other.set("auth", "%s %s" % (user, os.environ["AUTH_" + user.upper()]),
              noreply=False)
    sent, secs, answered, worst = race(
        t.s, ("records %s\r\n" % name).encode(),
        lambda: other.incr(name + "-other", 1), fail)
    ok("a relay asking 'records %s' %d times without reading was closed "
       "after %.1f s; another TLS client was answered %d times meanwhile "
       "(slowest %.3f s)" % (name, sent, secs, answered, worst))


def hold(port, ca, user):
    t = relay_open(port, ca, user)
    print("held", flush=True)
    t.s.settimeout(60)
    t0 = time.time()
    if not closed(t) or time.time() - t0 >= 60:
        fail("the held relay was not closed")
    ok("the held relay was closed after %.1f s" % (time.time() - t0))


def main():
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == "fill":
        fill(a[0], a[1], int(a[2]))
    elif cmd == "relay":
        relay(int(a[0]), a[1], a[2], a[3])
    elif cmd == "refused":
        refused(int(a[0]), a[1], a[2], a[3], a[4])
    elif cmd == "unauth":
        unauth(int(a[0]), a[1])
    elif cmd == "unread":
        unread(int(a[0]), a[1], a[2], a[3])
    elif cmd == "hold":
        hold(int(a[0]), a[1], a[2])
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()
