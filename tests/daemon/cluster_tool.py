#!/usr/bin/python3
"""cluster_tool.py - the helpers of tests/suite_cluster.sh (automatic
failover on etcd), standard library only, 127.0.0.1 only.

  load DIR COUNTER CLIENTS PORT[,PORT...]
      CLIENTS threads allocate "incr COUNTER 1" through any node: each
      keeps one connection and, on an error answer (SERVER_ERROR ESTANDBY,
      EFENCED, ENOSTANDBY ...), a closed connection or no answer within
      1 s, moves to the next port.  Every acknowledged id goes to
      DIR/client_N.txt as "WALLTIME PORT ID" at once; it stops when
      DIR/stop appears.
  check DIR [DIR...]
      no id twice across all clients (of every DIR), each client's ids strictly
      increasing; prints the counts.  Exit 1 on a violation.
  outage DIR T0 T1 [PORT]
      the longest time without any acknowledged id (every client merged)
      between wall times T0 and T1, in seconds; with PORT, also the last
      id acknowledged by PORT and when ("last PORT T ID").
  roles PORT[,PORT...]
      one line per node: "PORT ROLE TERM LEADER SYNC" from its stats
      ("down" when it does not answer within 1 s).
  etcdauth URL CA CERT KEY PASSWORDFILE
      turns on etcd's auth over its https gateway (client certificate
      CERT/KEY, CA CA): user root with the file's password, role root.
  proxy LPORT:RPORT[,LPORT:RPORT...]
      a TCP proxy on 127.0.0.1 (one per node, between it and etcd):
      SIGUSR1 cuts it (every connection, open or new, is held without a
      byte forwarded: a partition, where requests time out), SIGUSR2
      heals it (the held connections are closed, forwarding resumes).
"""
import asyncio
import os
import signal
import socket
import sys
import threading
import time


def load(d, counter, clients, ports):
    ports = [int(p) for p in ports.split(",")]
    stop = os.path.join(d, "stop")

    def client(n):
        f = open(os.path.join(d, "client_%d.txt" % n), "w", buffering=1)
        k = n % len(ports)
        s = None
        buf = b""
        while not os.path.exists(stop):
            port = ports[k]
            try:
                if s is None:
                    s = socket.create_connection(("127.0.0.1", port), timeout=1)
                    buf = b""
                s.sendall(b"incr %s 1\r\n" % counter.encode())
                while b"\r\n" not in buf:
                    chunk = s.recv(4096)
                    if not chunk:
                        raise OSError("closed")
                    buf += chunk
                line, buf = buf.split(b"\r\n", 1)
                if line.isdigit():
                    f.write("%.6f %d %s\n" % (time.time(), port, line.decode()))
                    continue
            except OSError:
                pass
            if s is not None:
                s.close()
                s = None
            k = (k + 1) % len(ports)
            time.sleep(0.02)
        f.close()

    ts = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def acks(d):
    out = {}
    for name in sorted(os.listdir(d)):
        if name.startswith("client_") and name.endswith(".txt"):
            rows = []
            with open(os.path.join(d, name)) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 3 and line.endswith("\n"):
                        rows.append((float(parts[0]), int(parts[1]), int(parts[2])))
            out[name] = rows
    return out


def check(*dirs):
    seen = {}
    bad = 0
    total = 0
    every = {}
    for d in dirs:
        every.update({os.path.join(d, k): v for k, v in acks(d).items()})
    for name, rows in every.items():
        last = 0
        for t, port, v in rows:
            total += 1
            if v in seen:
                bad += 1
                if bad <= 5:
                    print("# id %d twice: %s and %s (port %d)" % (v, seen[v], name, port))
            seen[v] = name
            if v <= last:
                bad += 1
                if bad <= 5:
                    print("# %s: id %d after %d" % (name, v, last))
            last = v
    print("# %d ids acknowledged, %d distinct, %d violations" % (total, len(seen), bad))
    return 1 if bad or total == 0 else 0


def outage(d, t0, t1, port=None):
    t0, t1 = float(t0), float(t1)
    times = sorted(t for rows in acks(d).values() for t, _, _ in rows)
    prev, worst = t0, 0.0
    for t in times:
        if t <= t0:
            continue
        if t > t1:
            break
        worst = max(worst, t - prev)
        prev = t
    worst = max(worst, t1 - prev)
    print("%.3f" % worst)
    if port:
        last = max(((t, v) for rows in acks(d).values() for t, p, v in rows
                    if p == int(port) and t <= t1), default=(0.0, 0))
        print("last %s %.6f %d" % (port, last[0], last[1]))
    return 0


def roles(ports):
    for p in ports.split(","):
        role, term, leader, sync = "down", "-", "-", "-"
        try:
            s = socket.create_connection(("127.0.0.1", int(p)), timeout=1)
            s.sendall(b"stats\r\n")
            buf = b""
            while not buf.endswith(b"END\r\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
            s.close()
            st = dict(l.split(" ", 2)[1:] for l in buf.decode().split("\r\n")
                      if l.startswith("STAT ") and l.count(" ") >= 2)
            role = st.get("cluster_role", "none")
            term = st.get("cluster_term", "-")
            leader = st.get("cluster_leader", "-")
            sync = st.get("cluster_sync_standby", "-")
        except (OSError, ValueError):
            pass
        print(p, role, term, leader, sync)
    return 0


def etcdauth(url, ca, cert, key, pwfile):
    import json
    import ssl
    import urllib.request
    ctx = ssl.create_default_context(cafile=ca)
    ctx.load_cert_chain(cert, key)
    with open(pwfile) as f:
        pw = f.readline().strip()

    def post(path, body):
        req = urllib.request.Request(url + path, data=json.dumps(body).encode())
        with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
            return json.loads(r.read())

    post("/v3/auth/role/add", {"name": "root"})
    post("/v3/auth/user/add", {"name": "root", "password": pw})
    post("/v3/auth/user/grant", {"user": "root", "role": "root"})
    post("/v3/auth/enable", {})
    return 0


def proxy(maps):
    cut = {"on": False}
    held = set()
    live = set()

    async def pipe(r, w):
        try:
            while True:
                data = await r.read(65536)
                if not data:
                    break
                while cut["on"]:
                    await asyncio.sleep(3600)
                w.write(data)
                await w.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            w.close()

    async def serve(lr, lw, rport):
        if cut["on"]:
            held.add(lw)
            return
        try:
            rr, rw = await asyncio.open_connection("127.0.0.1", rport)
        except OSError:
            lw.close()
            return
        pair = (asyncio.ensure_future(pipe(lr, rw)), asyncio.ensure_future(pipe(rr, lw)))
        live.add(pair)
        await asyncio.wait(pair)
        live.discard(pair)

    def on_cut():
        cut["on"] = True

    def on_heal():
        cut["on"] = False
        for w in list(held):
            w.close()
        held.clear()
        for pair in list(live):
            for t in pair:
                t.cancel()

    async def main():
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, on_cut)
        loop.add_signal_handler(signal.SIGUSR2, on_heal)
        loop.add_signal_handler(signal.SIGTERM, loop.stop)
        for m in maps.split(","):
            lp, rp = (int(x) for x in m.split(":"))
            await asyncio.start_server(lambda r, w, rp=rp: serve(r, w, rp), "127.0.0.1", lp)
        print("ready", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(main())
    except RuntimeError:
        pass
    return 0


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "load":
        load(args[0], args[1], int(args[2]), args[3])
        sys.exit(0)
    sys.exit({"check": check, "outage": outage, "roles": roles, "proxy": proxy,
              "etcdauth": etcdauth}[cmd](*args))
