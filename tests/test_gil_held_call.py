"""A single C call holding the GIL must not stall the event loop.

A big ``json.dumps``, a regex or a NumPy call is one C call that never lets the interpreter
switch threads. Run inline on the loop's thread, it used to stall everything the loop answers
by itself (the health path, static files) until it returned: the watchdog took the loop
over, but the thread it handed the loop to had to take the GIL before serving. Now the new
loop thread serves without the GIL (only an inline app call needs it), and new app requests go
to the pool, where they wait for the GIL as they must.

The fixture (``tests/apps/gil_held.py``) blocks in libc ``read()`` through ``ctypes.PyDLL``,
the GIL held, until the test writes to a FIFO: the call lasts exactly as long as the test
wants, with no timing involved.
"""

import os
import socket
import threading

import pytest

from tests.helpers import wait_for
from tests.http_util import Conn, request_bytes

PROBE_TIMEOUT = 10.0  # a bound for a broken server, not a threshold: answers come at once


def app_calls(metrics_path) -> int:
    """App calls the server has started (inline and on the pool), from `/metrics` over its unix
    socket."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(PROBE_TIMEOUT)
        s.connect(str(metrics_path))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n")
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    total = 0
    for name in (b"sluicegate_inline_calls_total ", b"sluicegate_pool_calls_total "):
        for line in out.splitlines():
            if line.startswith(name):
                total += int(float(line.split()[1]))
    return total


@pytest.mark.parametrize("route,threads", [
    ("/hold", ()),
    ("/hold", ("--threads", "0:4")),
    ("/hold-stream", ()),
    ("/hold-stream", ("--threads", "0:4")),
], ids=["idle-pool-thread", "no-idle-pool-thread", "streaming-idle-pool-thread",
        "streaming-no-idle-pool-thread"])
def test_health_path_and_static_files_are_answered_while_a_c_call_holds_the_gil(
        start_server, tmp_path, route, threads):
    """Regression (fbfb3d5): `/healthz` waited for a GIL-holding C call running inline (5.09 s
    behind `sum(range(int(4e8)))`), as did static files. With no idle pool thread to take the
    loop over, a new pool thread would attach to the interpreter before serving: the loop gets
    a thread of its own instead. A streaming answer hands the loop over at its second block,
    the same way (before 51044a5 a new pool thread, waiting for the GIL). After that
    hand-off the mode stays inline: a new app request made the new loop thread wait for the
    GIL with the loop in its hands, `/healthz` included, until the loop was parked before the
    wait (the watchdog takes it over then, as from a call that blocks)."""
    (tmp_path / "f.txt").write_bytes(b"static while held\n")
    metrics = tmp_path / "metrics.sock"
    srv = start_server("gil_held", "--health-path", "/healthz", "--static", f"/static={tmp_path}",
                       "--metrics-bind", f"unix:{metrics}", *threads)
    fifo = srv.state_path("hold-fifo")
    os.mkfifo(fifo)
    held: dict = {}

    def hold() -> None:
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", route))
            held["resp"] = c.read_response(timeout=60)

    holder = threading.Thread(target=hold)
    holder.start()
    queued: dict = {}
    later = None
    try:
        srv.wait_marks("hold-started", 1)
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", "/healthz"))
            health = c.read_response(timeout=PROBE_TIMEOUT)
        assert health.status == 200 and health.body == b"OK\n"
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", "/static/f.txt"))
            static = c.read_response(timeout=PROBE_TIMEOUT)
        assert static.status == 200 and static.body == b"static while held\n"

        # A new app request waits for the GIL (on the pool, or on the loop's thread, which the
        # watchdog then takes the loop from) without stalling the loop. After a streaming
        # hand-off the mode stays inline, and the new loop thread used to run such a request
        # itself and wait for the GIL with the loop in its hands, the health path included.
        def later_call() -> None:
            with Conn.open(srv.port) as c:
                c.send(request_bytes("GET", "/hello"))
                queued["resp"] = c.read_response(timeout=60)

        later = threading.Thread(target=later_call)
        later.start()
        # It has reached the server once it is counted as an app call (inline calls are
        # counted when the loop is parked for them, before the GIL is asked for); the scrape is
        # answered by the loop too, so on a stalled loop this wait is what fails.
        wait_for(lambda: app_calls(metrics) >= 2, "the second app call counted")
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", "/healthz"))
            again = c.read_response(timeout=PROBE_TIMEOUT)
        assert again.status == 200
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", "/static/f.txt"))
            static = c.read_response(timeout=PROBE_TIMEOUT)
        assert static.status == 200
        assert srv.marks("hold-finished") == [], "the C call was still holding the GIL"
    finally:
        with open(fifo, "wb") as f:  # the app's own read end is open: this does not block
            f.write(b"x")
        holder.join(30)
        if later is not None:
            later.join(30)
    expected = b"first\nsecond\nreleased" if route == "/hold-stream" else b"released"
    assert held["resp"].status == 200 and held["resp"].body == expected
    assert queued["resp"].status == 200 and queued["resp"].body == b"hello"
