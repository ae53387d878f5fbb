#!/usr/bin/python3
# bin_py.py - pylibmc with binary=True (libmemcached) or python3-memcache
# (text) against logcounterd, for tests/suite_binary.sh: incr on the shared
# counters PREFIXs0..s3 (written to OUT as "NAME ID" lines), get_multi of
# 300 keys, a refused set that changes nothing; pylibmc with USER PASS
# authenticates with SASL PLAIN.
# Usage: bin_py.py pylibmc|memcache PORT OUT PREFIX [USER PASS]
import sys

kind, port, out, pre = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
user = sys.argv[5] if len(sys.argv) > 6 else None
pw = sys.argv[6] if len(sys.argv) > 6 else None
addr = "127.0.0.1:%s" % port


def fail(m):
    sys.exit("%s: %s" % (kind, m))


if kind == "pylibmc":
    import pylibmc
    kw = {"username": user, "password": pw} if user else {}
    slow = {"_poll_timeout": 10000, "connect_timeout": 10000}  # a loaded machine
    c = pylibmc.Client([addr], binary=True, behaviors=slow, **kw)
    # a text client makes the 300 keys: binary incr never creates without
    # an initial value, which pylibmc cannot send
    maker = pylibmc.Client([addr], binary=False, behaviors=slow) if not user else None
else:
    import memcache
    c = memcache.Client([addr], socket_timeout=10)
    maker = c
import os
shared = os.environ.get("BIN_SHARED", pre)  # the text client's counters too
names = ["%ss%d" % (shared, i) for i in range(4)]
ids = []
for r in range(200):
    for n in names:
        v = c.incr(n, 1)
        if not isinstance(v, int) or v <= 0:
            fail("incr %s: %r" % (n, v))
        ids.append((n, v))
keys = ["%sm%d" % (pre, i) for i in range(300)]
if maker is not None:
    for i, k in enumerate(keys):
        v = maker.incr(k, i + 1)
        if v != i + 1:
            fail("incr %s: %r" % (k, v))
    got = c.get_multi(keys + [pre + "none"])
    if len(got) != 300:
        fail("get_multi: %d keys" % len(got))
    for i, k in enumerate(keys):
        if int(got[k]) != i + 1:
            fail("get_multi %s: %r" % (k, got[k]))
try:
    ok = c.set(names[0], "7")
except Exception:
    ok = False
if ok:
    fail("set was accepted")
before = int(c.get(names[1]))
if before <= 0:
    fail("get")
with open(out, "w") as o:
    for n, v in ids:
        o.write("%s %d\n" % (n, v))
print("%s%s: %d ids%s, set refused" % (
    "pylibmc binary" if kind == "pylibmc" else "python3-memcache",
    " (SASL)" if user else "", len(ids),
    ", get_multi 300 keys" if maker is not None else ""))
