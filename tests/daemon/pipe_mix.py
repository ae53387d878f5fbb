#!/usr/bin/python3
"""pipe_mix.py - mixed deep pipelines and stock Python clients against
logcounterd, for tests/suite_pipeline.sh.

  pipe_mix.py mix PORT PREFIX COUNT SEED
      One connection sends COUNT random requests in one go, while a thread
      reads: incr on 50 new counters (blocks of 1..5, a third noreply),
      incr/decr on 10 new tallies, get/gets of several counters and
      tallies, version, and refused or unknown commands (never 16 in a
      row).  A model computes every reply; the replies must be exactly
      those, once each and in order.
  pipe_mix.py pymemcache PORT PREFIX COUNT
      pymemcache: COUNT incr(noreply=True) on one new counter and on a new
      tally, then get on the same client: COUNT each.
  pipe_mix.py pylibmc PORT PREFIX ROUNDS
      pylibmc: incr_multi over 500 new counters ROUNDS times, then
      get_multi (100 keys a call: logcounterd's request lines are at most
      2048 bytes): ROUNDS each.

Prints "ok ..." or "FAIL ..." and exits 0 or 1.  Only connects to
127.0.0.1.
"""
import random
import socket
import sys
import threading
import time


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def mix(port, prefix, count, seed):
    rnd = random.Random(seed)
    counters = [f"{prefix}c{i}" for i in range(50)]
    tallies = [f"tally:{prefix}t{i}" for i in range(10)]
    value = {}          # counter -> last id handed out
    total = {}          # tally -> signed total
    reqs, want = [], []  # request lines; expected reply lines
    last_error = False
    for _ in range(count):
        r = rnd.random()
        if r < 0.55:
            c = rnd.choice(counters)
            n = rnd.randint(1, 5)
            nr = rnd.random() < 0.33
            value[c] = value.get(c, 0) + n
            reqs.append(f"incr {c} {n}" + (" noreply" if nr else ""))
            if not nr:
                want.append(str(value[c]))
            last_error = False
        elif r < 0.80:
            t = rnd.choice(tallies)
            d = rnd.randint(1, 1000)
            up = rnd.random() < 0.6
            nr = rnd.random() < 0.25
            total[t] = total.get(t, 0) + (d if up else -d)
            reqs.append(f"{'incr' if up else 'decr'} {t} {d}" +
                        (" noreply" if nr else ""))
            if not nr:
                want.append(str(max(total[t], 0)))
            last_error = False
        elif r < 0.93:
            keys = rnd.sample(counters + tallies, rnd.randint(1, 4))
            gets = rnd.random() < 0.3
            reqs.append(("gets " if gets else "get ") + " ".join(keys))
            for k in keys:
                if k.startswith("tally:"):
                    v = total.get(k, 0)
                elif value.get(k, 0) > 0:
                    v = value[k]
                else:
                    continue
                s = str(v)
                cas = f" {s if v >= 0 else 0}" if gets else ""
                want.append(f"VALUE {k} 0 {len(s)}{cas}")
                want.append(s)
            want.append("END")
            last_error = False
        elif r < 0.97 or last_error:
            reqs.append("version")
            want.append("VERSION*")
            last_error = False
        else:
            c = rnd.choice(counters)
            if rnd.random() < 0.5:
                reqs.append(f"decr {c} 1")
                want.append("CLIENT_ERROR*")
            else:
                reqs.append(f"frobnicate {c}")
                want.append("ERROR")
            last_error = True
    data = ("\r\n".join(reqs) + "\r\n").encode()
    s = socket.create_connection(("127.0.0.1", port))
    got = []

    def reader():
        buf = b""
        s.settimeout(60)
        try:
            while len(got) < len(want):
                d = s.recv(1 << 16)
                if not d:
                    break
                buf += d
                *lines, buf = buf.split(b"\r\n")
                got.extend(x.decode() for x in lines)
        except OSError:
            pass

    t = threading.Thread(target=reader)
    t.start()
    t0 = time.time()
    s.sendall(data)
    t.join(120)
    secs = time.time() - t0
    s.close()
    for i, (w, g) in enumerate(zip(want, got)):
        ok = g.startswith(w[:-1]) if w.endswith("*") else g == w
        if not ok:
            fail(f"mix: reply {i} is '{g}', want '{w}'")
    if len(got) != len(want):
        fail(f"mix: {len(got)} reply lines, want {len(want)}")
    print(f"ok mix: {count} mixed requests, {len(want)} reply lines exactly "
          f"as modelled, in {secs:.2f} s")


def with_pymemcache(port, prefix, count):
    from pymemcache.client.base import Client
    c = Client(("127.0.0.1", port), connect_timeout=5, timeout=60)
    key, tally = f"{prefix}pm", f"tally:{prefix}pm"
    t0 = time.time()
    for _ in range(count):
        c.incr(key, 1, noreply=True)
        c.incr(tally, 1, noreply=True)
    got = c.get_many([key, tally])
    secs = time.time() - t0
    c.close()
    want = {key: str(count).encode(), tally: str(count).encode()}
    if got != want:
        fail(f"pymemcache: get_many {got}, want {want}")
    print(f"ok pymemcache: {2 * count} noreply incr, read back in "
          f"{secs:.2f} s")


def with_pylibmc(port, prefix, rounds):
    import pylibmc
    c = pylibmc.Client([f"127.0.0.1:{port}"], binary=False)
    keys = [f"{prefix}lm{i}" for i in range(500)]
    t0 = time.time()
    for _ in range(rounds):
        c.incr_multi(keys, delta=1)
    got = {}
    for i in range(0, len(keys), 100):   # one get line: at most 2048 bytes
        got.update(c.get_multi(keys[i:i + 100]))
    secs = time.time() - t0
    bad = [k for k in keys if int(got.get(k, 0)) != rounds]
    if bad:
        fail(f"pylibmc: {len(bad)} counters wrong, e.g. {bad[0]} = "
             f"{got.get(bad[0])}, want {rounds}")
    print(f"ok pylibmc: incr_multi of {len(keys)} counters x {rounds}, "
          f"read back in {secs:.2f} s")


def main():
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    mode, port, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    n = int(sys.argv[4])
    if mode == "mix":
        mix(port, prefix, n, int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    elif mode == "pymemcache":
        with_pymemcache(port, prefix, n)
    elif mode == "pylibmc":
        with_pylibmc(port, prefix, n)
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
