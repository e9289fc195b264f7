"""Regression (24f7f74): the memory of a response whose client went away is freed
promptly on an otherwise idle server. The event loop, which never holds the GIL, drops the
queued `bytes`; PyO3 defers that decref until a thread attaches, and before the fix nothing
attached on an idle server: three abandoned 100 MB answers stayed resident. Now the drop rings
the release bell (src/wsgi/release.rs) and the main thread applies it.
"""

import socket

from tests.helpers import wait_for


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_abandoned_large_responses_are_freed_on_an_idle_server(start_server):
    srv = start_server("big")
    baseline = rss_mb(srv.pid)
    socks = []
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.sendall(b"GET /big?mb=100 HTTP/1.1\r\nHost: x\r\n\r\n")
        s.recv(65536)  # the response began; the rest waits in the server's queue
        socks.append(s)
    assert rss_mb(srv.pid) > baseline + 250, "three 100 MB bodies are held while queued"
    for s in socks:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()  # a reset: the server's next write fails and it drops the queue
    # No request comes after: only the release bell can free them.
    wait_for(lambda: rss_mb(srv.pid) <= baseline + 50, "the queued bodies to be freed",
             timeout=20, interval=0.05,
             context=lambda: f"still {rss_mb(srv.pid):.0f} MB resident "
                             f"(baseline {baseline:.0f} MB)")
