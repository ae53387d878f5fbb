#!/usr/bin/python3
"""standby_load.py - clients of a primary logcounterd and its hot standby
(tests/suite_standby.sh): allocation load that follows a failover, and the
checks made on what it was given.

  standby_load.py load OUT --ports P1[,P2...] --names A,B,... [--conns 8]
          [--seconds S] [--stop FILE] [--switch FILE] [--timeout SECS]
          [--tag T] [--stop-on ERROR] [--tallies X,Y --tally-conns 3
          --tally-out FILE]
      CONNS threads, one TCP connection each, send "incr NAME 1" one at a
      time (each thread goes through the names in turn, from its own
      starting point) until SECONDS pass (default 60) or FILE exists.
      Each thread starts on the first port; when its connection fails
      (refused, closed, reset, or no reply within --timeout seconds,
      default 5) it moves on to the next port of the list and never comes
      back (so a thread's ids of a counter must keep increasing across a
      failover); on the last port it keeps reconnecting.  --switch FILE:
      once FILE exists, holding a port number, every thread moves to that
      port.  A SERVER_ERROR is counted by its name (ESTANDBY,
      ENOSTANDBY, ...), and the thread tries again 10 ms later on the same
      connection (--stop-on ERROR: every thread stops once one got
      SERVER_ERROR ERROR).  Every acknowledged id goes to OUT as it comes (written
      every 50 ms): "NAME ID CLIENT PORT UNIXTIME", a thread's lines in
      the order it got them.
      --tallies: TALLY-CONNS more threads (the same ports) change the
      tallies named (incr/decr tally:X D, D random in 1..50, either sign);
      each change goes to the tally file as "TALLY DELTA STATUS CLIENT
      PORT UNIXTIME", STATUS "ack" (answered with a number), "refused"
      (CLIENT_ERROR, SERVER_ERROR ESTANDBY, or no connection to send it
      on: not applied) or "unknown" (any other SERVER_ERROR, or the
      connection failed after it was sent: it may or may not have been
      counted).
      Prints one line of JSON (ids per port, errors by name -- "timeout":
      no reply within --timeout, "connection": refused or closed --,
      reconnects, the longest time no thread got an id, the longest wait
      for an id and for any reply); exit 1 when an id
      repeated, a reply was neither a number nor a SERVER_ERROR, or
      nothing at all was acknowledged.

  standby_load.py check FILE...
      Reads id files (load's or probe's): every (NAME, ID) at most once
      across all of them, and each client's ids of each name strictly
      increasing.  Prints JSON; exit 1 on a violation or no ids.

  standby_load.py order [--allow-none] LOW... -- HIGH...
      Each argument FILE or FILE@PORT (only that port's ids): for every
      name in both sides, every LOW id is below every HIGH id.  Exit 1 on
      a violation, or when no name is in both (unless --allow-none: LOW
      may hold no id at all).

  standby_load.py first FILE PORT T0
      Prints the seconds from unix time T0 to the first id acknowledged on
      PORT at or after T0; exit 1 if there is none.

  standby_load.py probe PORT OUT --names A,B [--max N] [--tag T]
          [--timeout SECS]
      One connection; for each name in turn sends "incr NAME 1" until the
      first SERVER_ERROR or N requests (default 3000), then "version" (the
      connection must still answer).  Acknowledged ids go to OUT as load
      writes them.  Prints JSON per name; exit 1 when some name got no
      SERVER_ERROR within N requests, or the connection was lost.

  standby_load.py tallies FILE NAME=TOTAL...
      For each tally: TOTAL must be the sum of its acknowledged changes
      plus some subset of its "unknown" ones (none lost, none applied
      twice).  Exit 1 otherwise, or when a tally had no change.

Timings are printed, never asserted.  Only the standard library; talks to
127.0.0.1 only.
"""
import json
import os
import random
import socket
import sys
import threading
import time


def opt(args, name, default):
    return args[args.index(name) + 1] if name in args else default


class Sink:
    """Lines of many threads to one file, each thread's in its order."""

    def __init__(self, path):
        self.f = open(path, "w")
        self.lock = threading.Lock()
        self.bufs = []
        self.done = threading.Event()
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def buffer(self):
        b = []
        with self.lock:
            self.bufs.append(b)
        return b

    def drain(self):
        with self.lock:
            for b in self.bufs:
                n = len(b)  # list appends from another thread are atomic
                if n:
                    self.f.write("".join(b[:n]))
                    del b[:n]
            self.f.flush()

    def loop(self):
        while not self.done.wait(0.05):
            self.drain()

    def close(self):
        self.done.set()
        self.t.join(5)
        self.drain()
        self.f.close()


class Conn:
    """One connection that moves along a list of ports."""

    def __init__(self, ports, timeout, switch):
        self.ports, self.timeout, self.switch = list(ports), timeout, switch
        self.pi = 0
        self.sent = False
        self.last_port = self.ports[0]
        self.s = self.f = None
        self.reconnects = 0
        self.next_switch_look = 0.0

    @property
    def port(self):
        return self.ports[self.pi]

    def close(self):
        for x in (self.f, self.s):
            try:
                if x is not None:
                    x.close()
            except OSError:
                pass
        self.s = self.f = None

    def failed(self):
        """The connection failed: the next port, if there is one."""
        self.close()
        self.reconnects += 1
        if self.pi < len(self.ports) - 1:
            self.pi += 1

    def look_switch(self):
        if self.switch is None:
            return
        now = time.monotonic()
        if now < self.next_switch_look:
            return
        self.next_switch_look = now + 0.02
        try:
            with open(self.switch) as f:
                p = int(f.read().strip())
        except (OSError, ValueError):
            return
        if p != self.port:
            self.close()
            if p not in self.ports:
                self.ports.append(p)
            self.pi = self.ports.index(p)

    def request(self, line):
        """Sends LINE, answers the reply line (without CRLF), or None when
        the connection failed (it is then closed and moved on); self.sent
        says whether LINE may have reached the daemon."""
        self.look_switch()
        self.last_port = self.port
        self.sent = False
        self.timed_out = False
        try:
            if self.s is None:
                self.s = socket.create_connection(("127.0.0.1", self.port),
                                                  timeout=self.timeout)
                self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.f = self.s.makefile("rb")
            self.sent = True
            self.s.sendall(line)
            reply = self.f.readline()
            if not reply.endswith(b"\n"):
                raise EOFError("connection closed")
            return reply.decode("ascii", "replace").rstrip("\r\n")
        except (OSError, EOFError) as e:
            self.timed_out = isinstance(e, socket.timeout)
            self.failed()
            return None


def error_name(reply):
    """'SERVER_ERROR ENOSTANDBY no standby' -> 'ENOSTANDBY'."""
    parts = reply.split()
    return parts[1] if len(parts) > 1 else parts[0]


class Worker(threading.Thread):
    def __init__(self, client, conn, stop, sink):
        super().__init__(daemon=True)
        self.client, self.conn, self.stop = client, conn, stop
        self.buf = sink.buffer()
        self.errors = {}
        self.longest = 0.0  # the longest wait for any reply (or timeout)
        self.unexpected = []
        self.acks = []  # (monotonic time, wait)
        self.by_port = {}

    def count_error(self, kind):
        self.errors[kind] = self.errors.get(kind, 0) + 1


class IdWorker(Worker):
    def __init__(self, client, conn, stop, sink, names, first, stop_on=None):
        super().__init__(client, conn, stop, sink)
        self.names, self.i = names, first
        self.stop_on = stop_on  # (error name, threading.Event)

    def run(self):
        while not self.stop():
            name = self.names[self.i % len(self.names)]
            self.i += 1
            t0 = time.monotonic()
            reply = self.conn.request(b"incr %s 1\r\n" % name.encode())
            t1 = time.monotonic()
            self.longest = max(self.longest, t1 - t0)
            if reply is None:
                self.count_error("timeout" if self.conn.timed_out
                                 else "connection")
                time.sleep(0.01)
                continue
            if reply.isdigit():
                v = int(reply)
                self.acks.append((t1, t1 - t0))
                port = self.conn.last_port
                self.by_port[port] = self.by_port.get(port, 0) + 1
                self.buf.append("%s %d %s %d %.6f\n" %
                                (name, v, self.client, port, time.time()))
                continue
            if reply.startswith("SERVER_ERROR"):
                self.count_error(error_name(reply))
                if self.stop_on and error_name(reply) == self.stop_on[0]:
                    self.stop_on[1].set()
            else:
                self.count_error("unexpected")
                if len(self.unexpected) < 5:
                    self.unexpected.append(reply)
            time.sleep(0.01)


class TallyWorker(Worker):
    def __init__(self, client, conn, stop, sink, tallies, seed):
        super().__init__(client, conn, stop, sink)
        self.tallies = tallies
        self.rnd = random.Random(seed)
        self.status = {"ack": 0, "refused": 0, "unknown": 0}

    def run(self):
        i = 0
        while not self.stop():
            t = self.tallies[i % len(self.tallies)]
            i += 1
            d = self.rnd.randint(1, 50)
            if self.rnd.random() < 0.4:
                d = -d
            verb = b"incr" if d > 0 else b"decr"
            t0 = time.monotonic()
            reply = self.conn.request(b"%s tally:%s %d\r\n" %
                                      (verb, t.encode(), abs(d)))
            t1 = time.monotonic()
            port = self.conn.last_port
            if reply is None:
                # never sent (no connection): certainly not applied
                status = "unknown" if self.conn.sent else "refused"
                self.count_error("connection")
            elif reply.isdigit():
                status = "ack"
                self.acks.append((t1, t1 - t0))
                self.by_port[port] = self.by_port.get(port, 0) + 1
            elif reply.startswith("CLIENT_ERROR"):
                status = "refused"
                self.count_error("CLIENT_ERROR")
            elif reply.startswith("SERVER_ERROR"):
                kind = error_name(reply)
                status = "refused" if kind == "ESTANDBY" else "unknown"
                self.count_error(kind)
            else:
                status = "unknown"
                self.count_error("unexpected")
                if len(self.unexpected) < 5:
                    self.unexpected.append(reply)
            self.status[status] += 1
            self.buf.append("%s %d %s %s %d %.6f\n" %
                            (t, d, status, self.client, port, time.time()))
            if status != "ack":
                time.sleep(0.01)


def longest_pause(acks, t_from):
    """The longest time between two acknowledgements (from t_from on)."""
    ts = sorted(t for t, _ in acks)
    best, at, last = 0.0, 0.0, t_from
    for t in ts:
        if t - last > best:
            best, at = t - last, last - t_from
        last = t
    return round(best, 3), round(at, 3)


def merge(dicts):
    out = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


def load(args):
    out = args[0]
    ports = [int(p) for p in opt(args, "--ports", "11311").split(",")]
    names = opt(args, "--names", "c1").split(",")
    conns = int(opt(args, "--conns", "8"))
    seconds = float(opt(args, "--seconds", "60"))
    stop_file = opt(args, "--stop", None)
    switch = opt(args, "--switch", None)
    timeout = float(opt(args, "--timeout", "5"))
    tag = opt(args, "--tag", "c")
    tallies = opt(args, "--tallies", None)
    stop_on = opt(args, "--stop-on", None)
    stop_ev = threading.Event()
    t_start = time.monotonic()
    stopping = {"v": False, "next": 0.0}

    def stop():
        if stopping["v"] or stop_ev.is_set():
            return True
        now = time.monotonic()
        if now - t_start >= seconds:
            stopping["v"] = True
        elif stop_file is not None and now >= stopping["next"]:
            stopping["next"] = now + 0.02
            stopping["v"] = os.path.exists(stop_file)
        return stopping["v"]

    sink = Sink(out)
    ws = [IdWorker("%s%d" % (tag, i), Conn(ports, timeout, switch), stop,
                   sink, names, i * len(names) // conns,
                   (stop_on, stop_ev) if stop_on else None)
          for i in range(conns)]
    tsink = None
    if tallies:
        tsink = Sink(opt(args, "--tally-out", out + ".tally"))
        tn = tallies.split(",")
        for i in range(int(opt(args, "--tally-conns", "3"))):
            ws.append(TallyWorker("%st%d" % (tag, i),
                                  Conn(ports, timeout, switch), stop, tsink,
                                  tn, os.getpid() * 100 + i))
    for w in ws:
        w.start()
    for w in ws:
        w.join(timeout + 30)
    sink.close()
    if tsink:
        tsink.close()
    secs = time.monotonic() - t_start
    idw = [w for w in ws if isinstance(w, IdWorker)]
    acks = [a for w in idw for a in w.acks]
    wait = sorted(x for _, x in acks)
    res = {"ids": len(acks), "seconds": round(secs, 2),
           "by_port": merge(w.by_port for w in idw),
           "errors": merge(w.errors for w in idw),
           "reconnects": sum(w.conn.reconnects for w in idw),
           "longest_pause_s": longest_pause(acks, t_start),
           "max_wait_ms": round(wait[-1] * 1000, 1) if wait else 0,
           "max_reply_wait_ms": round(max(w.longest for w in idw) * 1000, 1),
           "p99_wait_ms": round(wait[int(len(wait) * 0.99)] * 1000, 2)
           if wait else 0}
    unexpected = [u for w in ws for u in w.unexpected]
    if unexpected:
        res["unexpected"] = unexpected[:5]
    tw = [w for w in ws if isinstance(w, TallyWorker)]
    if tw:
        res["tally"] = merge(w.status for w in tw)
        res["tally_errors"] = merge(w.errors for w in tw)
    # Within this run, an id twice is a failure already (check does it
    # across runs and daemons).
    seen, dups = set(), 0
    with open(out) as f:
        for line in f:
            k = tuple(line.split()[:2])
            dups += k in seen
            seen.add(k)
    res["dups"] = dups
    print(json.dumps(res, sort_keys=True))
    return 1 if dups or unexpected or not acks else 0


def read_ids(spec):
    """FILE or FILE@PORT -> [(name, id, client, port, t)]."""
    path, port = spec, None
    if "@" in spec:
        path, p = spec.rsplit("@", 1)
        port = int(p)
    out = []
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) < 5:
                continue
            r = (w[0], int(w[1]), w[2], int(w[3]), float(w[4]))
            if port is None or r[3] == port:
                out.append(r)
    return out


def check(files):
    seen = {}
    dups, nonmono = [], []
    last = {}
    n, by_port, names = 0, {}, set()
    for fi, spec in enumerate(files):
        for name, v, client, port, _ in read_ids(spec):
            n += 1
            names.add(name)
            by_port[port] = by_port.get(port, 0) + 1
            where = "%s:%s@%d" % (os.path.basename(spec), client, port)
            if (name, v) in seen:
                dups.append("%s %d: %s and %s" % (name, v, seen[(name, v)],
                                                   where))
            else:
                seen[(name, v)] = where
            k = (fi, client, name)
            if k in last and v <= last[k]:
                nonmono.append("%s %s: %d after %d" % (client, name, v,
                                                      last[k]))
            last[k] = v
    res = {"ids": n, "names": len(names), "clients": len(
        {(k[0], k[1]) for k in last}), "by_port": by_port,
        "dups": len(dups), "nonmonotonic": len(nonmono)}
    if dups:
        res["dup_examples"] = dups[:5]
    if nonmono:
        res["nonmonotonic_examples"] = nonmono[:5]
    print(json.dumps(res, sort_keys=True))
    return 1 if dups or nonmono or n == 0 else 0


def order(args):
    if "--" not in args:
        print(__doc__, file=sys.stderr)
        return 2
    allow_none = args[0] == "--allow-none"
    if allow_none:
        args = args[1:]
    k = args.index("--")
    lo, hi = {}, {}
    nlo = 0
    for spec in args[:k]:
        for name, v, *_ in read_ids(spec):
            nlo += 1
            lo[name] = max(lo.get(name, v), v)
    for spec in args[k + 1:]:
        for name, v, *_ in read_ids(spec):
            hi[name] = min(hi.get(name, v), v)
    common = sorted(set(lo) & set(hi))
    bad = ["%s: %d not below %d" % (n, lo[n], hi[n])
           for n in common if lo[n] >= hi[n]]
    margins = [hi[n] - lo[n] for n in common]
    res = {"names": len(common), "violations": len(bad), "low_ids": nlo,
           "min_margin": min(margins) if margins else None,
           "max_margin": max(margins) if margins else None}
    if bad:
        res["examples"] = bad[:5]
    print(json.dumps(res, sort_keys=True))
    if allow_none and nlo == 0:
        return 0
    return 1 if bad or not common else 0


def first(path, port, t0):
    ts = [t for _, _, _, p, t in read_ids(path) if p == port and t >= t0]
    if not ts:
        print("none")
        return 1
    print("%.3f" % (min(ts) - t0))
    return 0


def probe(args):
    port, out = int(args[0]), args[1]
    names = opt(args, "--names", "c1").split(",")
    limit = int(opt(args, "--max", "3000"))
    tag = opt(args, "--tag", "probe")
    timeout = float(opt(args, "--timeout", "15"))
    conn = Conn([port], timeout, None)
    res, ok = {}, True
    with open(out, "w") as f:
        for name in names:
            r = {"acked": 0, "requests": 0, "error": None}
            t0 = time.monotonic()
            while r["requests"] < limit:
                r["requests"] += 1
                reply = conn.request(b"incr %s 1\r\n" % name.encode())
                if reply is None:
                    r["error"] = "connection lost"
                    break
                if reply.isdigit():
                    r["acked"] += 1
                    r["last"] = int(reply)
                    r.setdefault("first", int(reply))
                    f.write("%s %s %s %d %.6f\n" %
                            (name, reply, tag, port, time.time()))
                    continue
                r["error"] = reply[:120]
                break
            r["seconds"] = round(time.monotonic() - t0, 3)
            if r["error"] is None or not r["error"].startswith("SERVER_ERROR"):
                ok = False
            elif conn.request(b"version\r\n") is None:
                r["kept"] = False
                ok = False
            else:
                r["kept"] = True
            res[name] = r
            f.flush()
    print(json.dumps(res, sort_keys=True))
    return 0 if ok else 1


def tallies(args):
    path = args[0]
    want = dict(a.split("=", 1) for a in args[1:])
    acked, unknown, refused = {}, {}, {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) < 3:
                continue
            t, d, st = w[0], int(w[1]), w[2]
            if st == "ack":
                acked[t] = acked.get(t, 0) + d
            elif st == "unknown":
                unknown.setdefault(t, []).append(d)
            else:
                refused[t] = refused.get(t, 0) + 1
    res, ok = {}, True
    for t, total in sorted(want.items()):
        total = int(total)
        s = acked.get(t)
        u = unknown.get(t, [])
        r = {"total": total, "acked_sum": s, "unknown": len(u),
             "refused": refused.get(t, 0)}
        if s is None:
            r["ok"] = False
        else:
            diff = total - s
            r["diff"] = diff
            if len(u) <= 20:
                sums = {0}
                for d in u:
                    sums |= {x + d for x in sums}
                r["ok"] = diff in sums
            else:  # too many to enumerate: the range they span
                r["ok"] = (sum(d for d in u if d < 0) <= diff <=
                           sum(d for d in u if d > 0))
                r["range_only"] = True
        ok = ok and r["ok"]
        res[t] = r
    print(json.dumps(res, sort_keys=True))
    return 0 if ok and want else 1


def main(argv):
    cmd, args = (argv[1], argv[2:]) if len(argv) > 1 else ("", [])
    if cmd == "load" and args:
        return load(args)
    if cmd == "check" and args:
        return check(args)
    if cmd == "order":
        return order(args)
    if cmd == "first" and len(args) == 3:
        return first(args[0], int(args[1]), float(args[2]))
    if cmd == "probe" and len(args) >= 2:
        return probe(args)
    if cmd == "tallies" and args:
        return tallies(args)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
