"""Graceful shutdown on SIGTERM and SIGINT.

Each test runs its own server. A request blocked in the app (on a gate, so it is certainly in
flight) must complete fully after the signal; idle keep-alive connections must be closed; a
connection attempted after the signal is never served; the process exits 0. With a short
--graceful-timeout, a request that never finishes must not keep the process alive. A server
started and stopped in one process leaves no descriptor behind and frees its app.
"""

import signal
import uuid

import pytest

from tests.helpers import wait_for
from tests.http_util import TIMEOUT, Closed, Conn, Truncated, connect_refused, request_bytes


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_finishes_in_flight_request_closes_idle_and_exits_0(start_server, sig):
    srv = start_server("blocking", "--graceful-timeout", "20")
    port = srv.port
    idle = Conn.open(port)
    idle.send(request_bytes("GET", "/fast"))
    assert idle.read_response().body == b"fast"

    tok, gate = uuid.uuid4().hex, uuid.uuid4().hex
    busy = Conn.open(port)
    busy.send(request_bytes("GET", f"/slow?token={tok}&gate={gate}"))
    srv.wait_marks("started", prefix=tok)

    srv.signal(sig)
    # The idle keep-alive connection is closed; that also shows the signal was handled.
    idle.expect_closed()

    # A new connection after the signal: refused, or (if it reached the kernel's backlog of a
    # listener not yet closed) never answered.
    late = None
    try:
        late = Conn.open(port)
        late.send(request_bytes("GET", "/fast"))
    except (ConnectionRefusedError, ConnectionResetError, BrokenPipeError):
        late = None

    # The in-flight request still completes, in full.
    srv.open_gate(gate)
    resp = busy.read_response()
    assert resp.status == 200 and resp.body == f"slow {tok} gate=open".encode()
    busy.expect_closed()

    if late is not None:
        with pytest.raises(Closed):
            late.read_response()
        late.close()
    assert srv.wait_exit() == 0, f"exit code {srv.proc.returncode}\n{srv.log_text()[-3000:]}"
    assert connect_refused(port)
    idle.close()
    busy.close()


def test_shutdown_with_no_connections_exits_0(start_server):
    srv = start_server("hello")
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/", headers=[("Connection", "close")]))
        assert c.read_response().status == 200
    srv.signal(signal.SIGTERM)
    assert srv.wait_exit() == 0


def stuck_request(srv) -> Conn:
    """A request the app holds past any timeout of these tests (its gate is never opened: the
    app blocks for 15 s), once the app has it. Returns its connection."""
    tok = uuid.uuid4().hex
    busy = Conn.open(srv.port)
    busy.send(request_bytes("GET", f"/slow?token={tok}&gate=never-{tok}"))
    srv.wait_marks("started", prefix=tok)
    return busy


def test_graceful_timeout_bounds_the_wait_for_a_stuck_request(start_server):
    """Regression (7b360a4): shutdown joined the loop thread even when a takeover had made it
    the pool thread stuck in the app call, so --graceful-timeout did not bound the exit."""
    srv = start_server("blocking", "--graceful-timeout", "1")
    busy = stuck_request(srv)
    srv.signal(signal.SIGTERM)
    # Exit status 1: a request was cut (it used to be 0 whatever was cut, until 939d89d).
    assert srv.wait_exit(timeout=TIMEOUT) == 1
    assert "Shutdown cut 1 request(s)" in srv.log_text()
    # The client is not left hanging with something that looks complete.
    try:
        resp = busy.read_response()
    except (Closed, Truncated):
        resp = None
    assert resp is None or resp.status >= 500
    busy.close()


def test_a_second_sigint_stops_at_once(start_server):
    """Regression (939d89d): a second SIGINT logged "stopping now" and still waited the whole
    graceful timeout for the app thread of an in-flight request; now it stops at once, and the
    exit status says a request was cut. (The graceful timeout here is far longer than the wait
    below, so the old behaviour fails it.)"""
    srv = start_server("blocking", "--graceful-timeout", "60")
    busy = stuck_request(srv)
    srv.signal(signal.SIGINT)
    srv.wait_log("Received SIGINT")
    srv.signal(signal.SIGINT)
    assert srv.wait_exit(timeout=TIMEOUT) == 1
    assert "stopping now" in srv.log_text()
    busy.close()


def test_a_response_finished_during_a_graceful_stop_says_connection_close(start_server):
    """Regression (9e7fa76): a request in flight when the stop began was answered with a
    keep-alive head, and then the connection was closed under the client (RFC 9112 9.6)."""
    srv = start_server("blocking", "--graceful-timeout", "10")
    tok = uuid.uuid4().hex
    with Conn.open(srv.port) as busy:
        busy.send(request_bytes("GET", f"/slow?token={tok}&gate=g-{tok}"))
        srv.wait_marks("started", prefix=tok)
        srv.signal(signal.SIGTERM)
        srv.wait_log("Received SIGTERM")
        srv.open_gate(f"g-{tok}")
        resp = busy.read_response()
        assert resp.status == 200 and resp.body.startswith(b"slow " + tok.encode())
        assert resp.has_token("Connection", "close")
        busy.expect_closed()
    assert srv.wait_exit(timeout=TIMEOUT) == 0



class _CountedApp:
    """A WSGI app that can be weakly referenced (to see whether a stopped server freed it)."""

    def __call__(self, environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]


def _serve_once():
    """Start a server in this process, answer one request, stop it; return a weak reference
    to its app."""
    import gc
    import http.client
    import weakref

    from tests.inprocess import start_pool_server

    app = _CountedApp()
    ref = weakref.ref(app)
    sup, port, t = start_pool_server(app)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    c.request("GET", "/")
    assert c.getresponse().read() == b"ok"
    c.close()
    sup.shutdown()
    t.join(TIMEOUT)
    assert not t.is_alive()
    del sup, app
    gc.collect()
    return ref


def test_a_stopped_server_leaves_no_descriptor_and_frees_its_app():
    """A server started and stopped in one process (tests, embedding) leaves nothing behind:
    the event loop's epoll and eventfd descriptors are closed and the app is freed. Before the
    fix the pool's job closure held the server's shared state, which held the pool: each start
    and stop kept two descriptors and the app for the life of the process."""
    import gc
    import os

    _serve_once()  # the first start imports and allocates what later ones reuse
    before = len(os.listdir("/proc/self/fd"))
    refs = [_serve_once() for _ in range(3)]
    gc.collect()
    after = len(os.listdir("/proc/self/fd"))
    assert after <= before, f"{after - before} descriptors more after three starts and stops"
    assert all(r() is None for r in refs), "a stopped server still holds its app"


def test_with_workers_a_new_connection_during_a_graceful_stop_is_refused(start_server):
    """Regression: with --workers, the master kept its copy of the listening socket open until
    it exited, so a connection made during a graceful stop waited in a backlog nobody accepted
    from, and was reset at the exit. Now it is refused as soon as the workers stop accepting,
    while a request in flight still finishes."""
    srv = start_server("blocking", "--workers", "2", "--graceful-timeout", "60")
    port = srv.port
    tok, gate = uuid.uuid4().hex, uuid.uuid4().hex
    busy = Conn.open(port)
    busy.send(request_bytes("GET", f"/slow?token={tok}&gate={gate}"))
    srv.wait_marks("started", prefix=tok)
    mark = srv.log_mark()
    srv.signal(signal.SIGTERM)
    srv.wait_log(r"Received SIGTERM", since=mark)

    def refused_or_answered() -> bool:
        """A new connection and a request on it: refused (True), or answered or closed
        (False: not yet refused, but not left hanging either)."""
        try:
            with Conn.open(port) as c:
                c.send(request_bytes("GET", "/fast"))
                try:
                    c.read_response(timeout=5)
                except Closed:
                    pass
            return False
        except (ConnectionRefusedError, ConnectionResetError, BrokenPipeError):
            return True

    wait_for(refused_or_answered, "new connections to be refused", timeout=30, interval=0.1)
    assert srv.marks("finished", prefix=tok) == [], "the stop ended before the check"
    srv.open_gate(gate)
    resp = busy.read_response()
    assert resp.status == 200 and resp.body == f"slow {tok} gate=open".encode()
    assert srv.wait_exit() == 0, srv.log_text()[-3000:]
    busy.close()
