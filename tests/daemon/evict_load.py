#!/usr/bin/python3
"""evict_load.py - logcounterd's --idle-evict while clients allocate, for
tests/suite_evict.sh.  Only connects to 127.0.0.1.

  evict_load.py burst PORT PREFIX N
      While two pymemcache threads allocate without pause on hot counters
      (each value above the one before), a burst of N new names arrives
      as one pipeline of "incr NAME 1 noreply" on a raw socket, and is
      read back with get_many (each 1); their first uses were batched
      (the stats: served by lc_next_each, far fewer synced writes than
      names).  Once the daemon's stats count N
      evictions more (the names idle past --idle-evict), each name is
      incremented again through pylibmc and answers exactly 2: an evicted
      counter goes on at its last value + 1, loaded from the log.  The hot
      threads saw no error, the counters gauge fell below N while they
      ran, and no value of theirs went down.
  evict_load.py again PORT PREFIX N
      After a restart of the daemon: each name answers exactly 3.

Prints "ok ..." for each check and "FAIL ..." (then exits 1) on the
first failure.
"""
import socket
import sys
import threading
import time

import pylibmc
from pymemcache.client.base import Client as PmClient


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def ok(msg):
    print("ok " + msg)


def stats(port):
    c = PmClient(("127.0.0.1", port), timeout=5)
    try:
        return {k.decode(): v for k, v in c.stats().items()}
    finally:
        c.close()


class Hot(threading.Thread):
    def __init__(self, port, name):
        super().__init__(daemon=True)
        self.port, self.name = port, name
        self.stop = threading.Event()
        self.err, self.calls = None, 0

    def run(self):
        c = PmClient(("127.0.0.1", self.port), timeout=5)
        last = 0
        try:
            while not self.stop.is_set():
                v = c.incr(self.name, 1)
                if v is None or v <= last:
                    self.err = "%s: %r after %d" % (self.name, v, last)
                    return
                last, self.calls = v, self.calls + 1
        except Exception as e:  # noqa: BLE001 - reported as a failure
            self.err = "%s: %r" % (self.name, e)
        finally:
            c.close()


def pipeline(port, lines):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"".join(lines) + b"mn\r\n")
    buf = b""
    while not buf.endswith(b"MN\r\n"):
        d = s.recv(65536)
        if not d:
            fail("the daemon closed the pipeline")
        buf += d
    s.close()
    if buf != b"MN\r\n":
        fail("noreply pipeline answered %r" % buf[:200])


def burst(port, prefix, n):
    hot = [Hot(port, "%shot%d" % (prefix, i)) for i in range(2)]
    for h in hot:
        h.start()
    st0 = stats(port)
    before = int(st0["evictions"])
    names = ["%s%d" % (prefix, i) for i in range(n)]
    pipeline(port, [b"incr %s 1 noreply\r\n" % x.encode() for x in names])
    c = PmClient(("127.0.0.1", port), timeout=5)
    got = {}
    for i in range(0, n, 100):
        got.update(c.get_many(names[i:i + 100]))
    c.close()
    bad = [x for x in names if got.get(x) != b"1"]
    if bad:
        fail("after the burst %d names are not 1: %s=%r" %
             (len(bad), bad[0], got.get(bad[0])))
    ok("a burst of %d new names in one noreply pipeline, each at 1" % n)
    st1 = stats(port)
    batched = (int(st1["incr_batched_counters"]) -
               int(st0["incr_batched_counters"]))
    syncs = int(st1["log_syncs"]) - int(st0["log_syncs"])
    if batched == 0 or syncs > n // 3:
        fail("the burst's first uses were not batched: %d counters in "
             "batched calls, %d synced writes for %d names" %
             (batched, syncs, n))
    ok("the burst's first uses shared synced writes: %d synced writes for "
       "%d names (%d served in batched calls)" % (syncs, n, batched))
    low, deadline = None, time.time() + 30
    while time.time() < deadline:
        st = stats(port)
        ev, cnt = int(st["evictions"]), int(st["counters"])
        low = cnt if low is None or cnt < low else low
        if ev - before >= n:
            break
        time.sleep(0.05)
    else:
        fail("only %d evictions in 30 s, expected %d" % (ev - before, n))
    ok("%d evictions while two clients allocate (counters fell to %d)" %
       (ev - before, low))
    if low >= n:
        fail("the counters gauge never fell below %d" % n)
    m = pylibmc.Client(["127.0.0.1:%d" % port])
    bad = [(x, v) for x in names for v in [m.incr(x, 1)] if v != 2]
    if bad:
        fail("after eviction %d names did not go on at 2: %r" %
             (len(bad), bad[0]))
    ok("each evicted name goes on at exactly 2 (pylibmc)")
    for h in hot:
        h.stop.set()
    for h in hot:
        h.join()
        if h.err:
            fail("hot client: " + h.err)
        if h.calls == 0:
            fail("a hot client made no call")
    ok("the hot clients allocated throughout (%s calls), always upwards" %
       "+".join(str(h.calls) for h in hot))


def again(port, prefix, n):
    m = pylibmc.Client(["127.0.0.1:%d" % port])
    bad = [(x, v) for i in range(n) for x in ["%s%d" % (prefix, i)]
           for v in [m.incr(x, 1)] if v != 3]
    if bad:
        fail("after the restart %d names are not at 3: %r" %
             (len(bad), bad[0]))
    ok("after a restart each name goes on at exactly 3")


def main():
    cmd, port, prefix, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], \
        int(sys.argv[4])
    {"burst": burst, "again": again}[cmd](port, prefix, n)


if __name__ == "__main__":
    main()
