#!/usr/bin/python3
"""notify.py - stands in for systemd's end of sd_notify, and a client that
allocates until the daemon goes away, for tests/suite_systemd.sh.

  notify.py listen SOCKET OUT PORT SECONDS
      binds the unix datagram socket SOCKET (a path, or an abstract name
      when it starts with '@', as in $NOTIFY_SOCKET), writes OUT.bound
      once bound, then appends every message received to OUT, one line
      per message with its newlines shown as '|'.  As soon as a message
      holds READY=1 it connects to 127.0.0.1:PORT and asks "version" and
      "incr notify-probe 1", and writes "probe: <the two answer lines>"
      (or "probe: failed <why>") to OUT: so the test sees what a client
      of a just-ready daemon gets.  Ends after a message with STOPPING=1
      and one more second of listening, or after SECONDS.
  notify.py alloc PORT NAME CONNS OUT
      CONNS connections each send "incr NAME 1" and read the answer, one
      at a time, until the daemon closes the connection or answers
      anything but a number; each number answered is written to
      OUT.<i> (one per line, flushed), the reason each ended to OUT.end
      ("closed by the daemon", or "reset by the daemon" when it closed
      with the next request unread).

Only connects to 127.0.0.1.
"""
import os
import socket
import sys
import threading
import time


def listen(where, out, port, seconds):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if where.startswith("@"):
        s.bind("\0" + where[1:])
    else:
        if os.path.exists(where):
            os.unlink(where)  # left by an earlier listener
        s.bind(where)
    open(out + ".bound", "w").close()
    deadline = time.monotonic() + seconds
    stop_at = None
    with open(out, "a") as f:
        while True:
            now = time.monotonic()
            end = deadline if stop_at is None else min(deadline, stop_at)
            if now >= end:
                break
            s.settimeout(end - now)
            try:
                msg = s.recv(65536).decode("utf-8", "replace")
            except socket.timeout:
                break
            f.write(msg.replace("\n", "|") + "\n")
            f.flush()
            lines = msg.split("\n")
            if "READY=1" in lines:
                f.write("probe: " + probe(port) + "\n")
                f.flush()
            if "STOPPING=1" in lines and stop_at is None:
                stop_at = time.monotonic() + 1.0


def probe(port):
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=5)
        c.sendall(b"version\r\nincr notify-probe 1\r\n")
        buf = b""
        while buf.count(b"\r\n") < 2:
            chunk = c.recv(4096)
            if not chunk:
                break
            buf += chunk
        c.close()
        return "|".join(buf.decode("utf-8", "replace").split("\r\n")[:2])
    except OSError as e:
        return "failed " + str(e)


def alloc_one(port, name, path, ends, i):
    why = "?"
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=30)
        r = c.makefile("rb")
        with open(path, "w") as f:
            while True:
                try:
                    c.sendall(("incr %s 1\r\n" % name).encode())
                except OSError as e:
                    why = "send: " + str(e)
                    break
                try:
                    line = r.readline()
                except ConnectionResetError:
                    # closed with our next request unread: a reset, not EOF
                    why = "reset by the daemon"
                    break
                if not line:
                    why = "closed by the daemon"
                    break
                text = line.decode("utf-8", "replace").rstrip("\r\n")
                if not text.isdigit():
                    why = "answered " + text
                    break
                f.write(text + "\n")
                f.flush()
    except OSError as e:
        why = "error: " + str(e)
    ends[i] = why


def alloc(port, name, conns, out):
    ends = [None] * conns
    threads = [threading.Thread(target=alloc_one,
                                args=(port, name, "%s.%d" % (out, i), ends, i))
               for i in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(out + ".end", "w") as f:
        for i, why in enumerate(ends):
            f.write("%d %s\n" % (i, why))


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "listen":
        listen(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    elif len(sys.argv) == 6 and sys.argv[1] == "alloc":
        alloc(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
