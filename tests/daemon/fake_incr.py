#!/usr/bin/env python3
"""fake_incr.py - a stand-in server that answers "incr NAME N" wrongly on
purpose, so that tests/daemon_test.sh can show lcd_client's checks fail.

  fake_incr.py MODE      listens on 127.0.0.1 (a free port), prints the
                         port, and serves until killed.  Every "incr NAME
                         N" line gets a number; "version" gets VERSION.
  MODE  up        one counter for all connections, +N per reply (correct)
        down      one counter for all connections, -N per reply: distinct
                  and strictly decreasing
        overlap   one counter per connection, +N per reply: each
                  connection's replies increase, but connections overlap
"""
import socket
import sys
import threading

mode = sys.argv[1]
lock = threading.Lock()
state = {"v": 10 ** 9}


def serve(conn):
    mine = 0
    buf = b""
    with conn:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            buf += data
            out = []
            while b"\r\n" in buf:
                line, buf = buf.split(b"\r\n", 1)
                parts = line.split()
                if parts[:1] == [b"version"]:
                    out.append(b"VERSION fake\r\n")
                    continue
                n = int(parts[2]) if len(parts) > 2 else 1
                if mode == "overlap":
                    mine += n
                    v = mine
                else:
                    with lock:
                        state["v"] += n if mode == "up" else -n
                        v = state["v"]
                out.append(b"%d\r\n" % v)
            conn.sendall(b"".join(out))


s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
