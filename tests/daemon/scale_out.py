#!/usr/bin/python3
"""scale_out.py - several logcounterd sharing one memcached, reached by
stock clients that list every daemon (issue 14), for tests/suite_owner.sh.

  scale_out.py run PREFIX ROUNDS PORT...
      pylibmc (libmemcached) listing every daemon incr's 100 counters
      PREFIX0..PREFIX99 ROUNDS times each; then pymemcache's HashClient
      (rendezvous hashing: a different server for most keys) and pylibmc
      with the daemons in reverse order incr each counter 3 times.  Every
      answer must be above every earlier answer for its counter (so no id
      twice); an answer may instead be SERVER_ERROR EOWNED (the counter
      reached a daemon whose log does not own it; pylibmc hides the text,
      so afterwards each counter must stand exactly at its last answer:
      a refusal took nothing).  Prints the counts.
  scale_out.py down PREFIX DEAD_PORT PORT...
      pylibmc listing every daemon (one of them, DEAD_PORT, killed) incr's
      the 100 counters once: those that hash to the dead daemon fail, the
      others are answered (nothing is remapped).

Prints "ok ..." or "FAIL ..." and exits 0 or 1.  Only connects to
127.0.0.1.
"""
import sys

import pylibmc
from pymemcache.client.hash import HashClient
from pymemcache.exceptions import MemcacheServerError

NAMES = 100


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def libmc(ports):
    return pylibmc.Client([f"127.0.0.1:{p}" for p in ports],
                          behaviors={"tcp_nodelay": True})


def run(prefix, rounds, ports):
    last = {}
    owned = refused = 0

    def seen(name, v, who):
        if v is None or v <= last.get(name, 0):
            fail(f"{who}: {name} answered {v} after {last.get(name)}")
        last[name] = v

    first = libmc(ports)
    for _ in range(rounds):
        for i in range(NAMES):
            seen(f"{prefix}{i}", first.incr(f"{prefix}{i}", 1), "pylibmc")
    others = [("pymemcache HashClient",
               HashClient([("127.0.0.1", p) for p in ports],
                          default_noreply=False, timeout=5)),
              ("pylibmc, reversed list", libmc(list(reversed(ports))))]
    for who, client in others:
        for _ in range(3):
            for i in range(NAMES):
                name = f"{prefix}{i}"
                try:
                    seen(name, client.incr(name, 1), who)
                    owned += 1
                except MemcacheServerError as e:
                    if "EOWNED" not in str(e):
                        fail(f"{who}: {name}: {e}")
                    refused += 1
                except pylibmc.ServerError:
                    refused += 1    # pylibmc hides the text: checked below
    # a refusal took nothing: each counter stands where its last answer
    # left it (get asks the owner, through the first client's hashing)
    for i in range(NAMES):
        name = f"{prefix}{i}"
        if int(first.get(name)) != last[name]:
            fail(f"{name} stands at {first.get(name)}, last answer "
                 f"{last[name]}")
    if refused == 0:
        fail("no counter reached a daemon that does not own it: "
             "the clients hashed alike")
    print(f"ok scale-out: {len(ports)} daemons, {NAMES} counters x {rounds} "
          f"through pylibmc; then {owned} answered by the owner and "
          f"{refused} refused with EOWNED through clients that hash "
          f"differently; every answer above the last")


def down(prefix, dead, ports):
    client = libmc(ports)
    ok = failed = 0
    for i in range(NAMES):
        try:
            v = client.incr(f"{prefix}{i}", 1)
            if v is None or v < 2:
                fail(f"{prefix}{i} answered {v}")
            ok += 1
        except pylibmc.Error:
            failed += 1
    if ok == 0 or failed == 0:
        fail(f"daemon on {dead} killed: {ok} answered, {failed} failed "
             "(want some of each)")
    print(f"ok one daemon down: {failed} of its counters fail, the other "
          f"{ok} are answered")


def main():
    a = sys.argv[1:]
    if len(a) >= 4 and a[0] == "run":
        run(a[1], int(a[2]), [int(p) for p in a[3:]])
    elif len(a) >= 4 and a[0] == "down":
        down(a[1], int(a[2]), [int(p) for p in a[3:]])
    else:
        print(__doc__)
        sys.exit(2)


main()
