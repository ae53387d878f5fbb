"""unread.py - a client that sends and never reads, for clients.py and
tls_clients.py: the socket helper and the race between it and a client
that keeps allocating."""
import socket
import threading
import time


def small_socket(port):
    """A TCP connection to 127.0.0.1:PORT with a small receive buffer, set
    BEFORE connect so that the window the kernel advertises fits it: set
    after, the window already offered is larger than the buffer, the
    kernel drops what overflows and both sides back off retransmitting
    for seconds, a trickle the daemon rightly counts as progress."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(1)
    s.connect(("127.0.0.1", port))
    return s


def race(s, req, incr, fail, limit=40):
    """Sends req on s again and again (never reading) from a thread until
    the daemon closes s, while incr() allocates here: every answer must
    rise.  Returns (requests sent, seconds until closed, answers, slowest
    answer); fails if s is not closed within limit seconds."""
    state = {"sent": 0, "closed": None}

    def sender():
        t0 = time.time()
        while time.time() - t0 < limit:
            try:
                s.sendall(req)
                state["sent"] += 1
            except socket.timeout:
                continue
            except OSError:  # ssl.SSLError is one
                state["closed"] = time.time() - t0
                return

    th = threading.Thread(target=sender)
    th.start()
    answered, last, worst = 0, 0, 0.0
    while th.is_alive():
        t = time.time()
        v = incr()
        worst = max(worst, time.time() - t)
        if v is None or v <= last:
            fail("the other client got %r after %d" % (v, last))
        last = v
        answered += 1
    th.join()
    if state["closed"] is None:
        fail("the unread connection was not closed in %d s" % limit)
    return state["sent"], state["closed"], answered, worst
