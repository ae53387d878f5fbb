#!/usr/bin/python3
# bin_text.py - the text client of tests/suite_binary.sh: allocates on the
# shared counters PREFIXs0..s3 over the text protocol ("incr NAME 1",
# pipelined four at a time) until STOPFILE exists (at least 400 ids),
# while the binary and other clients allocate on the same counters.
# Writes "NAME ID" lines to OUT; touches OUT.ready once every counter has
# handed out an id.  Usage: bin_text.py PORT OUT PREFIX STOPFILE
import os, socket, sys, time

port, out, pre, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
names = ["%ss%d" % (pre, i) for i in range(4)]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
f = s.makefile("rb")
if len(sys.argv) > 6:
    tok = ("%s %s" % (sys.argv[5], sys.argv[6])).encode()
    s.sendall(b"set auth 0 0 %d\r\n%s\r\n" % (len(tok), tok))
    if f.readline().strip() != b"STORED":
        sys.exit("bin_text: the handshake failed")
ids = []
rounds = 0
deadline = time.time() + 120
while time.time() < deadline:
    s.sendall(b"".join(b"incr %s 1\r\n" % n.encode() for n in names))
    for n in names:
        line = f.readline().strip()
        if not line.isdigit():
            sys.exit("bin_text: incr %s answered %r" % (n, line))
        ids.append((n, int(line)))
    rounds += 1
    if rounds == 1:
        open(out + ".ready", "w").close()
    if rounds >= 100 and os.path.exists(stop):
        break
    time.sleep(0.002)
with open(out, "w") as o:
    for n, v in ids:
        o.write("%s %d\n" % (n, v))
print("text: %d ids in %d rounds" % (len(ids), rounds))
