"""Admission order: calls waiting for a thread are admitted in the order they came, whatever
class each waits in.

A server runs in a thread of this process on the pool path with one app thread (`--threads
1:1`), so every call after the first waits, and the order in which the app sees them start is
the order admission chose. The first call holds the thread (it sleeps until the test opens a
gate); the others are sent one at a time over their own sockets, each only once the server
counts it queued, so the order they came in is known. The first call's route is seen blocking
(it sleeps), so its later calls wait in the blocking class's queue; calls to another route
(`/fast`, never seen: short) wait in the short class's. When the blocking class's queue was
served before the others whenever it was not empty, every short call started after every
blocking call, even those that came after it: with a capped pool under steady load, a tail of
requests waited for as long as the load lasted.
"""

import socket
import threading
import time

from tests.helpers import wait_for

# More calls than `admission::PROBATION_EVERY` (32): one to the blocking route is judged again.
WAITING = 40
# Which of them go to the other route.
FAST = {2, 3, 9, 20, 33, 39}


class Gated:
    """Records the order calls start in (`?i=N`); on `/wait`, then sleeps until `gate` is set (a
    wait in a system call other than `futex`: the route is seen blocking)."""

    def __init__(self):
        self.gate = threading.Event()
        self.started = []

    def __call__(self, environ, start_response):
        self.started.append(int(environ["QUERY_STRING"].partition("=")[2]))
        while environ["PATH_INFO"] == "/wait" and not self.gate.is_set():
            time.sleep(0.002)
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]


def send(port, i):
    path = "/fast" if i in FAST else "/wait"
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(f"GET {path}?i={i} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode())
    return s


def answer(s):
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    return data


def test_calls_waiting_for_a_thread_start_in_the_order_they_came(pool_server):
    app = Gated()
    sup, port = pool_server(app, threads=(1, 1))
    socks = [send(port, 0)]
    wait_for(lambda: app.started == [0], "the first call to hold the thread", timeout=10,
             interval=0.005)
    for i in range(1, WAITING + 1):
        socks.append(send(port, i))
        wait_for(lambda i=i: sup._server.stats["admission_waits"] == i, f"call {i} to queue",
                 timeout=10, interval=0.002)
        if i == 1:
            # The first call is seen sleeping: its route is blocking, the short room is free,
            # and the short calls to come wait only for the thread, as the blocking ones do.
            wait_for(lambda: sup._server.stats["demotions"] == 1, "the first call's demotion",
                     timeout=10, interval=0.002)
    app.gate.set()
    answers = [answer(s) for s in socks]
    stats = sup._server.stats
    assert all(a.startswith(b"HTTP/1.1 200") for a in answers), answers
    assert app.started == list(range(WAITING + 1)), app.started
    # The calls of the blocking route waited as blocking ones (not judged one by one).
    assert stats["admitted_blocking"] >= WAITING - len(FAST) - 1, stats
