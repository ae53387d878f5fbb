#!/usr/bin/python3
"""proxy_load.py - clients that speak only to twemproxy (nutcracker) in
front of several logcounterd sharing one memcached, for
tests/suite_proxy.sh.  Every id a client receives is kept in STATE (a
JSON file: each counter's highest id so far), so that later steps can
check that nothing repeats across a daemon's death and restart.

  proxy_load.py alloc PREFIX ROUNDS PROXY MCPORT STATE
      4 threads, each with its own connection to the proxy (2 pymemcache,
      2 pylibmc), incr the 100 counters PREFIX0..PREFIX99 ROUNDS times
      each, in their own shuffled orders, blocks of 1 to 3 ids: no id is
      handed out twice, each thread's answers for a counter increase.
      Then one connection pipelines 50 incr of one counter in one write:
      the answers are consecutive.  Then a multi-key get of the 100
      counters through the proxy (pymemcache get_many and pylibmc
      get_multi, which send one get line; the proxy splits it across the
      daemons) answers every counter at its highest id.  The owners (the
      claims lo:NAME in memcached, MCPORT) must be spread over 3 daemons.
  proxy_load.py longget PREFIX PROXY STATE
      while 4 threads allocate on the 100 counters through the proxy,
      another connection sends 20 gets of 1,000 keys (the 100 and 900
      names never used) through it, which the proxy splits into get
      lines of some 330 keys per daemon: each answers every counter at
      or above its id before the get, no name never used, and no
      allocator sees an error.
  proxy_load.py down PREFIX PROXY MCPORT DEAD_PID TIMEOUT_MS STATE
      one daemon (pid DEAD_PID) is dead: every counter its log owns fails
      with an error within TIMEOUT_MS + 1 s (never a value), twice; 2
      threads allocate on every other counter ROUNDS=5 times, above all
      earlier ids; a multi-key get of all 100 fails as a whole, never a
      partial answer (pymemcache raises; pylibmc returns {}); one of the
      live counters alone answers.
  proxy_load.py eject PREFIX PROXY MCPORT DEAD_PID
      PROXY ejects failed daemons (auto_eject_hosts: true): each counter
      of the dead daemon, asked 3 times, is answered only with errors,
      and once the proxy has ejected the daemon and re-hashed the counter
      to another one, that one's SERVER_ERROR EOWNED (never an id).
  proxy_load.py back PREFIX PROXY STATE
      every counter (the restarted daemon's too) allocates through the
      proxy above every earlier id, and the final get_many of the 100
      equals each counter's highest id.
  proxy_load.py disorder PROXY NAME
      PROXY has server_connections: 4: up to 20 times, one connection
      pipelines 200 incr of NAME in one write; every id is new, and some
      answers come back lower than the one before (the proxy dealt the
      requests over its connections).  Fails if all stay in order.
  proxy_load.py seen STATE NAME=VALUE...
      records ids a test received on its own connection (must lie above
      what STATE held for NAME).

Prints "ok ..." or "FAIL ..." and exits 0 or 1.  Only connects to
127.0.0.1.
"""
import json
import random
import socket
import sys
import threading
import time

import pylibmc
from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheError

NAMES = 100
HOST = "127.0.0.1"


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def pymc(port):
    return Client((HOST, port), connect_timeout=5, timeout=5)


def libmc(port):
    return pylibmc.Client([f"{HOST}:{port}"], behaviors={
        "tcp_nodelay": True, "connect_timeout": 5000,
        "receive_timeout": 5000000, "send_timeout": 5000000})


def names(prefix):
    return [f"{prefix}{i}" for i in range(NAMES)]


def load(path):
    with open(path) as f:
        return json.load(f)


def save(path, state):
    with open(path, "w") as f:
        json.dump(state, f)


def owners(prefix, mcport):
    """The pid in each counter's claim (lo:NAME holds LOGID HOST PID)."""
    mc = pymc(mcport)
    got = mc.get_many([f"lo:{n}" for n in names(prefix)])
    mc.close()
    out = {}
    for n in names(prefix):
        v = got.get(f"lo:{n}")
        if v is None:
            fail(f"{n}: no claim lo:{n} in memcached")
        out[n] = int(v.split()[2])
    return out


class Ids:
    """Every block handed out, checked for overlap as it arrives."""

    def __init__(self, state):
        self.lock = threading.Lock()
        self.floor = dict(state)      # ids up to here were handed out before
        self.taken = {}               # name -> set of ids handed out now
        self.errors = []

    def add(self, who, name, last, n, prev):
        if not isinstance(last, int) or last < n:
            self.errors.append(f"{who}: {name} answered {last!r}")
            return prev
        if last <= prev:
            self.errors.append(f"{who}: {name} answered {last} after {prev}")
        with self.lock:
            if last - n + 1 <= self.floor.get(name, 0):
                self.errors.append(f"{who}: {name} block {last - n + 1}.."
                                   f"{last} not above earlier "
                                   f"{self.floor.get(name, 0)}")
            s = self.taken.setdefault(name, set())
            for v in range(last - n + 1, last + 1):
                if v in s:
                    self.errors.append(f"{who}: {name} id {v} twice")
                s.add(v)
        return last

    def high(self):
        h = dict(self.floor)
        for name, s in self.taken.items():
            h[name] = max(s)
        return h


def worker(ids, who, make, incr, todo, rounds, seed, fails=None):
    client = make()
    rnd = random.Random(seed)
    last = {}
    for _ in range(rounds):
        order = list(todo)
        rnd.shuffle(order)
        for name in order:
            n = rnd.randint(1, 3)
            try:
                v = incr(client, name, n)
            except (MemcacheError, pylibmc.Error, OSError) as e:
                if fails is not None:
                    fails.append(f"{who}: {name}: {e!r}")
                    continue
                ids.errors.append(f"{who}: {name}: {e!r}")
                return
            last[name] = ids.add(who, name, v, n, last.get(name, 0))


def run_threads(ids, todo, rounds, proxy, count=4):
    kinds = [("pymemcache", lambda: pymc(proxy),
              lambda c, k, n: c.incr(k, n)),
             ("pylibmc", lambda: libmc(proxy),
              lambda c, k, n: c.incr(k, n))]
    ts = []
    for i in range(count):
        who, make, incr = kinds[i % 2]
        t = threading.Thread(target=worker, args=(
            ids, f"{who}#{i}", make, incr, todo, rounds, 1000 + i))
        ts.append(t)
        t.start()
    for t in ts:
        t.join()
    if ids.errors:
        fail("; ".join(ids.errors[:5]) + f" ({len(ids.errors)} in all)")


def pipe_incr(proxy, name, count):
    """count "incr NAME 1" lines in one write; the answers, as ints."""
    s = socket.create_connection((HOST, proxy), timeout=5)
    s.sendall(f"incr {name} 1\r\n".encode() * count)
    buf = b""
    while buf.count(b"\r\n") < count:
        b = s.recv(65536)
        if not b:
            fail(f"pipelined incr {name}: closed after {buf[:200]!r}")
        buf += b
    s.close()
    try:
        return [int(v) for v in buf.split(b"\r\n")[:count]]
    except ValueError:
        fail(f"pipelined incr {name}: {buf[:200]!r}")


def pipelined(proxy, name, count=50):
    """count incr lines in one write: answers one apart, in order."""
    vals = pipe_incr(proxy, name, count)
    if len(vals) != count or any(b != a + 1 for a, b in zip(vals, vals[1:])):
        fail(f"pipelined incr {name}: {vals}")
    return vals[-1]


def check_gets(proxy, want, what):
    keys = sorted(want)
    got = {k: int(v) for k, v in pymc(proxy).get_many(keys).items()}
    lib = {k: int(v) for k, v in libmc(proxy).get_multi(keys).items()}
    for who, g in (("pymemcache get_many", got), ("pylibmc get_multi", lib)):
        if g != {k: want[k] for k in keys}:
            bad = [k for k in keys if g.get(k) != want[k]][:5]
            fail(f"{what}: {who} of {len(keys)} keys: "
                 + ", ".join(f"{k}={g.get(k)} (want {want[k]})"
                             for k in bad))


def alloc(prefix, rounds, proxy, mcport, path):
    ids = Ids({})
    t0 = time.time()
    run_threads(ids, names(prefix), rounds, proxy)
    high = ids.high()
    n0 = f"{prefix}0"
    high[n0] = pipelined(proxy, n0)
    if high[n0] <= ids.high()[n0]:
        fail(f"pipelined {n0} ended at {high[n0]}")
    check_gets(proxy, high, "after allocating")
    own = owners(prefix, mcport)
    spread = {}
    for p in own.values():
        spread[p] = spread.get(p, 0) + 1
    if len(spread) != 3:
        fail(f"owners of the {NAMES} counters: {spread} (want 3 daemons)")
    save(path, high)
    total = sum(len(s) for s in ids.taken.values())
    print(f"ok proxy: 4 connections (pymemcache, pylibmc) allocated {total} "
          f"ids on {NAMES} counters in {time.time() - t0:.1f}s, none twice, "
          f"each connection's ids rising; 50 pipelined incr consecutive; "
          f"get_many/get_multi of {NAMES} keys exact; owners per daemon "
          f"{sorted(spread.values())}")


def longget(prefix, proxy, path):
    ids = Ids(load(path))
    keys = names(prefix) + [f"{prefix}-unused-{i}" for i in range(900)]
    errors = []

    def reader():
        client = pymc(proxy)
        for _ in range(20):
            with ids.lock:
                before = ids.high()
            try:
                got = client.get_many(keys)
            except (MemcacheError, OSError) as e:
                errors.append(f"get_many of {len(keys)}: {e!r}")
                return
            for k in names(prefix):
                if k not in got or int(got[k]) < before.get(k, 0):
                    errors.append(f"{k}: {got.get(k)!r} below {before.get(k)}")
                    return
            if len(got) != NAMES:
                errors.append(f"answered {len(got)} keys, want {NAMES}")
                return

    t = threading.Thread(target=reader)
    t.start()
    run_threads(ids, names(prefix), 3, proxy)
    t.join()
    if errors:
        fail("; ".join(errors[:3]))
    save(path, ids.high())
    print(f"ok proxy: 20 gets of {len(keys)} keys through the proxy while 4 "
          f"connections allocated: every counter at or above its id, no "
          f"name never used, no allocator error")


def down(prefix, proxy, mcport, dead, timeout_ms, path):
    state = load(path)
    own = owners(prefix, mcport)
    dead_names = [n for n in names(prefix) if own[n] == dead]
    live = [n for n in names(prefix) if own[n] != dead]
    if not dead_names or not live:
        fail(f"daemon {dead} owns {len(dead_names)} of {NAMES} counters")
    limit = timeout_ms / 1000 + 1
    slowest = 0
    for who, c in (("pymemcache", pymc(proxy)), ("pylibmc", libmc(proxy))):
        for _ in range(2):
            for n in dead_names:
                t = time.time()
                try:
                    v = c.incr(n, 1)
                    fail(f"{who}: {n} (its daemon is dead) answered {v!r}")
                except (MemcacheError, pylibmc.Error) as e:
                    if who == "pymemcache" and "Connection refused" not in str(e):
                        fail(f"{who}: {n}: unexpected error {e!r}")
                took = time.time() - t
                slowest = max(slowest, took)
                if took > limit:
                    fail(f"{who}: {n} failed only after {took:.2f}s")
    ids = Ids(state)
    run_threads(ids, live, 5, proxy, count=2)
    high = ids.high()
    try:
        got = pymc(proxy).get_many(names(prefix))
        fail(f"get_many of all {NAMES} with a daemon dead answered "
             f"{len(got)} keys, no error")
    except MemcacheError as e:
        whole = repr(e)
    try:    # libmemcached hides the error: the answer is empty
        got = libmc(proxy).get_multi(names(prefix))
        if got:
            fail(f"pylibmc get_multi of all {NAMES} with a daemon dead "
                 f"answered {len(got)} keys")
        lib = "{} (no error)"
    except pylibmc.Error as e:
        lib = f"{e!r}"
    check_gets(proxy, {live[0]: high[live[0]]}, "one live counter")
    save(path, high)
    print(f"ok one daemon dead: its {len(dead_names)} counters fail (slowest "
          f"{slowest * 1000:.0f} ms), the other {len(live)} allocate above "
          f"every earlier id; a multi-key get of all {NAMES}: pymemcache "
          f"{whole}, pylibmc {lib}")


def eject(prefix, proxy, mcport, dead):
    own = owners(prefix, mcport)
    dead_names = [n for n in names(prefix) if own[n] == dead]
    c = pymc(proxy)
    replies = {}
    for _ in range(3):
        for n in dead_names:
            try:
                fail(f"{n} (its daemon is dead) answered {c.incr(n, 1)!r} "
                     "through the ejecting proxy")
            except MemcacheError as e:
                r = str(e).split(":")[0][:60]
                replies[r] = replies.get(r, 0) + 1
                if "EOWNED" in str(e) and f"pid {dead})" not in str(e):
                    fail(f"{n}: EOWNED not naming the dead owner: {e}")
    if not any("EOWNED" in r for r in replies):
        fail(f"no EOWNED through the ejecting proxy: {replies}")
    print(f"ok ejecting proxy: the dead daemon's {len(dead_names)} counters "
          f"x 3: {replies}")


def back(prefix, proxy, path):
    state = load(path)
    ids = Ids(state)
    run_threads(ids, names(prefix), 2, proxy, count=2)
    high = ids.high()
    check_gets(proxy, high, "after the restart")
    save(path, high)
    print(f"ok restarted: all {NAMES} counters allocate through the proxy "
          f"above every earlier id; get_many exact")


def disorder(proxy, name, count=200):
    taken = set()
    for r in range(20):
        vals = pipe_incr(proxy, name, count)
        if taken & set(vals) or len(set(vals)) != count:
            fail(f"pipelined incr {name}: an id twice")
        taken |= set(vals)
        down = sum(1 for a, b in zip(vals, vals[1:]) if b < a)
        if down:
            print(f"ok server_connections: 4: round {r + 1}: {down} of "
                  f"{count} pipelined answers lower than the one before; "
                  f"no id twice")
            return
    fail(f"server_connections: 4: 20 x {count} pipelined answers in order")


def seen(path, pairs):
    state = load(path)
    for p in pairs:
        name, v = p.split("=")
        if int(v) <= state.get(name, 0):
            fail(f"{name} answered {v}, not above {state.get(name, 0)}")
        state[name] = int(v)
    save(path, state)
    print(f"ok seen {' '.join(pairs)}")


def main():
    a = sys.argv[1:]
    if len(a) == 6 and a[0] == "alloc":
        alloc(a[1], int(a[2]), int(a[3]), int(a[4]), a[5])
    elif len(a) == 4 and a[0] == "longget":
        longget(a[1], int(a[2]), a[3])
    elif len(a) == 7 and a[0] == "down":
        down(a[1], int(a[2]), int(a[3]), int(a[4]), int(a[5]), a[6])
    elif len(a) == 3 and a[0] == "disorder":
        disorder(int(a[1]), a[2])
    elif len(a) >= 3 and a[0] == "seen":
        seen(a[1], a[2:])
    elif len(a) == 5 and a[0] == "eject":
        eject(a[1], int(a[2]), int(a[3]), int(a[4]))
    elif len(a) == 4 and a[0] == "back":
        back(a[1], int(a[2]), a[3])
    else:
        print(__doc__)
        sys.exit(2)


main()
