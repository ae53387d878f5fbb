#!/usr/bin/python3
"""diskfault.py - a client of logcounterd for tests/suite_diskfault.sh.

  diskfault.py run PORT OUT --fault-on CMD --fault-off CMD [--tally NAME]
      Allocates "incr c1 1" (pipelined, 16 deep; with --tally, one
      "incr tally:NAME 1" per round) and writes every id acknowledged to
      OUT (one per line) and the count of acknowledged tally changes to
      OUT.tally.  Phases: 2,000 ids; then CMD --fault-on (a full disk, or
      the fault shim switched on) and allocation until 50 answers were
      SERVER_ERROR ELOG; then --fault-off and allocation until ids come
      back (at most 30 s) and 2,000 more are acknowledged.  With --tally
      it then waits (at most 30 s) until "stats tally NAME" shows nothing
      pending, so the changes are flushed.  Exit 1 if no error was seen
      (the fault did not happen), an error other than ELOG was, or ids
      never came back.
  diskfault.py check PORT OUT [--tally NAME]
      After a restart with memcached flushed: allocates until the counter
      is past every id acknowledged, and fails (exit 1) if any id
      acknowledged is handed out again, or the tally's total is not the
      count of acknowledged changes.

Only the standard library; talks to 127.0.0.1 only.
"""
import socket
import subprocess
import sys
import time

DEPTH = 16


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        l, self.buf = self.buf.split(b"\r\n", 1)
        return l.decode("ascii", "replace")

    def ask(self, lines):
        self.s.sendall("".join(x + "\r\n" for x in lines).encode())
        return [self.line() for _ in lines]

    def stats(self, what):
        self.s.sendall(("stats %s\r\n" % what).encode())
        out = {}
        while True:
            l = self.line()
            if l == "END" or not l.startswith("STAT "):
                return out
            p = l.split(" ", 2)
            out[p[1]] = p[2] if len(p) > 2 else ""


class Run:
    def __init__(self, conn, tally):
        self.c, self.tally = conn, tally
        self.ids, self.tacks, self.errors = [], 0, 0
        self.first_error = None

    def round(self):
        """One pipelined round: True if every answer was an id."""
        req = ["incr c1 1"] * DEPTH
        if self.tally:
            req.append("incr tally:%s 1" % self.tally)
        ok = True
        for i, a in enumerate(self.c.ask(req)):
            if a.isdigit():
                if i < DEPTH:
                    self.ids.append(int(a))
                else:
                    self.tacks += 1
                continue
            ok = False
            self.errors += 1
            if self.first_error is None:
                self.first_error = a
            if not a.startswith("SERVER_ERROR ELOG"):
                raise SystemExit("diskfault: unexpected answer: %s" % a)
        return ok

    def until_ids(self, n):
        want = len(self.ids) + n
        while len(self.ids) < want:
            self.round()


def sh(cmd):
    if subprocess.call(cmd, shell=True) != 0:
        raise SystemExit("diskfault: '%s' failed" % cmd)


def opt(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def run(port, out, args):
    r = Run(Conn(port), opt(args, "--tally"))
    r.until_ids(2000)
    sh(opt(args, "--fault-on"))
    t0 = time.time()
    while r.errors < 50 and time.time() - t0 < 60:
        r.round()
    faulty = len(r.ids)
    if r.errors == 0:
        raise SystemExit("diskfault: no error in 60 s: the fault did not bite")
    sh(opt(args, "--fault-off"))
    t1 = time.time()
    while not r.round():
        if time.time() - t1 > 30:
            raise SystemExit("diskfault: ids did not come back within 30 s")
        time.sleep(0.01)
    back = time.time() - t1
    r.until_ids(2000)
    with open(out, "w") as f:
        f.write("".join("%d\n" % v for v in r.ids))
    with open(out + ".tally", "w") as f:
        f.write("%d\n" % r.tacks)
    if r.tally:
        t2 = time.time()
        while True:
            st = r.c.stats("tally " + r.tally)
            if st.get("pending") == "0":
                break
            if time.time() - t2 > 30:
                raise SystemExit("diskfault: tally still pending: %s" % st)
            time.sleep(0.1)
    print("diskfault: %d ids acknowledged (max %d), %d during the fault, "
          "%d errors (first: %s), ids back %.2f s after the fault ended; "
          "%d tally changes" % (len(r.ids), max(r.ids), faulty - 2000,
                                r.errors, r.first_error, back, r.tacks))


def check(port, out, args):
    acked = [int(x) for x in open(out)]
    top = max(acked)
    if len(set(acked)) != len(acked):
        raise SystemExit("diskfault: an id was acknowledged twice before "
                         "the restart")
    c = Conn(port)
    first = None
    a = c.ask(["incr c1 1"])[0]
    if not a.isdigit():
        raise SystemExit("diskfault: after the restart: %s" % a)
    first = int(a)
    if first <= top:
        raise SystemExit("diskfault: REISSUED: the restart handed out %d, "
                         "at or below %d acknowledged before" % (first, top))
    tally = opt(args, "--tally")
    if tally:
        want = int(open(out + ".tally").read())
        c.s.sendall(("get tally:%s\r\n" % tally).encode())
        head = c.line()
        got = c.line() if head.startswith("VALUE ") else head
        if head.startswith("VALUE "):
            c.line()  # END
        if not got.lstrip("-").isdigit() or int(got) != want:
            raise SystemExit("diskfault: LOST: tally %s is %s after the "
                             "restart, %d changes were acknowledged and "
                             "flushed" % (tally, got, want))
        print("diskfault: tally %s holds all %d changes" % (tally, want))
    print("diskfault: after the restart the counter goes on at %d, above "
          "all %d ids acknowledged (max %d)" % (first, len(acked), top))


def main(argv):
    if len(argv) < 4 or argv[1] not in ("run", "check"):
        sys.stderr.write(__doc__)
        return 2
    (run if argv[1] == "run" else check)(int(argv[2]), argv[3], argv[4:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
