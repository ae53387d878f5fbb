#!/usr/bin/python3
"""admin_load.py - clients that allocate from logcounterd while an operator
works on its admin socket (tests/suite_admin.sh, bench/admin.sh).

  admin_load.py load PORT OUT --names A,B [--conns 8] [--seconds S]
                     [--stop FILE] [--tolerate]
      CONNS threads, one TCP connection each, send "incr NAME 1" (names in
      turn), one at a time, until SECONDS pass or FILE exists.  Every id
      acknowledged goes to OUT ("NAME ID" per line).  Fails (exit 1) when
      an id of a name comes back twice, a reply is not a number (unless
      --tolerate: then errors and dropped connections end that client),
      or nothing was acknowledged.  Prints one line of JSON: ids, rate,
      the largest and the 99th-percentile wait.
  admin_load.py during PORT --names A [--conns 8] [--before S] -- CMD...
      The same clients; after BEFORE seconds (default 2) runs CMD (its
      stdout is counted, not kept) and stops the clients when it exits.
      Prints JSON with the waits before and during CMD, CMD's time, its
      exit status and line count; exit 1 if CMD failed or an id repeated.

  admin_load.py pipe SOCKET NAME COUNT
      One admin-socket connection sends COUNT "next NAME 1" lines from one
      thread while another reads: every answer must be "OK V", V strictly
      increasing.  Exit 1 otherwise.
  admin_load.py stall SOCKET NAME SECONDS
      Asks the admin socket for NAME's records and reads none of them for
      SECONDS (a client that stops reading), then closes.

Waits are measured, never asserted.  Only the standard library; talks to
127.0.0.1 only.
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time


class Client(threading.Thread):
    def __init__(self, port, names, stop, tolerate):
        super().__init__(daemon=True)
        self.port, self.names, self.stop = port, names, stop
        self.tolerate = tolerate
        self.ids = []  # (name, id, t_end, wait)
        self.error = None

    def run(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
            f = s.makefile("rb")
            i = 0
            while not self.stop():
                name = self.names[i % len(self.names)]
                i += 1
                t0 = time.monotonic()
                s.sendall(b"incr %s 1\r\n" % name.encode())
                line = f.readline()
                t1 = time.monotonic()
                if not line:
                    raise EOFError("connection closed")
                text = line.decode("ascii", "replace").strip()
                if not text.isdigit():
                    raise ValueError("answer %r" % text)
                self.ids.append((name, int(text), t1, t1 - t0))
        except Exception as e:  # noqa: BLE001 - reported below
            self.error = "%s: %s" % (type(e).__name__, e)


def run_clients(port, names, conns, stop, tolerate):
    cs = [Client(port, names, stop, tolerate) for _ in range(conns)]
    for c in cs:
        c.start()
    return cs


def finish(cs, tolerate):
    for c in cs:
        c.join(60)
    errors = [c.error for c in cs if c.error]
    got = [x for c in cs for x in c.ids]
    seen, dups = set(), 0
    for name, v, _, _ in got:
        if (name, v) in seen:
            dups += 1
        seen.add((name, v))
    bad = dups > 0 or not got or (errors and not tolerate)
    return got, errors, dups, bad


def waits(got, t_from, t_to):
    sel = [x for x in got if t_from <= x[2] < t_to]
    w = sorted(x[3] for x in sel)
    if not w:
        return {"n": 0, "max_ms": 0.0, "p99_ms": 0.0, "p50_ms": 0.0}
    worst = max(sel, key=lambda x: x[3])
    return {"n": len(w), "max_ms": round(w[-1] * 1000, 2),
            "max_at_s": round(worst[2] - worst[3] - t_from, 2),
            "p99_ms": round(w[int(len(w) * 0.99)] * 1000, 2),
            "p50_ms": round(w[len(w) // 2] * 1000, 3)}


def opt(args, name, default):
    return args[args.index(name) + 1] if name in args else default


def unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    return s


def pipe(path, name, count):
    s = unix(path)
    lines = b"".join(b"next %s 1\r\n" % name.encode() for _ in range(count))
    w = threading.Thread(target=s.sendall, args=(lines,), daemon=True)
    w.start()
    f = s.makefile("rb")
    last = 0
    for i in range(count):
        line = f.readline().decode("ascii", "replace").strip()
        if not line.startswith("OK ") or int(line[3:]) <= last:
            print("answer %d: %r after %d" % (i, line, last))
            return 1
        last = int(line[3:])
    w.join(10)
    print(json.dumps({"answers": count, "last": last}))
    return 0


def stall(path, name, seconds):
    s = unix(path)
    s.sendall(b"records %s\r\n" % name.encode())
    time.sleep(seconds)
    s.close()
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "pipe":
        return pipe(argv[2], argv[3], int(argv[4]))
    if len(argv) == 5 and argv[1] == "stall":
        return stall(argv[2], argv[3], float(argv[4]))
    if len(argv) < 3 or argv[1] not in ("load", "during"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, port = argv[1], int(argv[2])
    args = argv[3:]
    rest = []
    if "--" in args:
        rest = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    names = opt(args, "--names", "c1").split(",")
    conns = int(opt(args, "--conns", "8"))
    tolerate = "--tolerate" in args
    t_start = time.monotonic()
    if mode == "load":
        out = args[0]
        seconds = float(opt(args, "--seconds", "5"))
        stop_file = opt(args, "--stop", None)

        def stop():
            return (time.monotonic() - t_start >= seconds or
                    (stop_file is not None and os.path.exists(stop_file)))
        cs = run_clients(port, names, conns, stop, tolerate)
        got, errors, dups, bad = finish(cs, tolerate)
        with open(out, "w") as f:
            for name, v, _, _ in got:
                f.write("%s %d\n" % (name, v))
        secs = time.monotonic() - t_start
        print(json.dumps({"ids": len(got), "rate": round(len(got) / secs),
                          "dups": dups, "errors": errors[:3],
                          **waits(got, 0, float("inf"))}))
        return 1 if bad else 0
    before = float(opt(args, "--before", "2"))
    done = threading.Event()
    cs = run_clients(port, names, conns, done.is_set, False)
    time.sleep(before)
    t_cmd = time.monotonic()
    p = subprocess.Popen(rest, stdout=subprocess.PIPE)
    lines = sum(1 for _ in p.stdout)
    rc = p.wait()
    t_end = time.monotonic()
    done.set()
    got, errors, dups, bad = finish(cs, False)
    print(json.dumps({"cmd_rc": rc, "cmd_s": round(t_end - t_cmd, 2),
                      "cmd_lines": lines, "ids": len(got), "dups": dups,
                      "errors": errors[:3],
                      "before": waits(got, t_start, t_cmd),
                      "during": waits(got, t_cmd, t_end)}))
    return 1 if bad or rc != 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
