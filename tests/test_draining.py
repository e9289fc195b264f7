"""Health and draining: `--health-path` answers 503 from the moment a
graceful stop begins, and `--drain-delay` keeps the server accepting and serving meanwhile, so
that a load balancer sees the 503 before the listener closes. (With a real HAProxy:
test_behind_haproxy.py.)
"""

import signal
import socket

from tests.helpers import wait_for
from tests.test_workers import get


def health(port):
    return get(port, "/healthz")[0]


def refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        return False
    except ConnectionRefusedError:
        return True


def test_a_draining_server_fails_its_health_check_and_serves_on(start_server):
    srv = start_server("hello", "--health-path", "/healthz", "--drain-delay", "2")
    assert health(srv.port) == 200
    srv.proc.send_signal(signal.SIGTERM)
    srv.wait_log("Received SIGTERM")
    # From now on: 503 for the balancer, and every other request is served as before.
    assert health(srv.port) == 503
    assert get(srv.port, "/")[0] == 200
    assert not refused(srv.port)
    # After the delay the listener closes and the process ends cleanly.
    wait_for(lambda: refused(srv.port), "the listener to close", timeout=30, interval=0.05)
    assert srv.proc.wait(30) == 0


def test_without_a_drain_delay_the_listener_closes_at_once(start_server):
    srv = start_server("hello", "--health-path", "/healthz")
    c = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert c.recv(4096).startswith(b"HTTP/1.1 200 ")
    srv.proc.send_signal(signal.SIGTERM)
    srv.wait_log("Received SIGTERM")
    # A health check on a connection still open during the stop gets 503 (or, once the
    # stop's short grace for idle connections has passed, finds the connection closed):
    # never a 200.
    try:
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = c.recv(4096)
    except OSError:
        answer = b""
    assert answer == b"" or answer.startswith(b"HTTP/1.1 503 "), answer
    c.close()
    assert srv.proc.wait(30) == 0


def test_with_workers_the_drain_delay_still_serves_then_the_listener_closes(start_server):
    """The master closes its copy of the listening socket as the stop begins: the workers'
    copies keep it open through --drain-delay, and once they stop accepting it is closed."""
    srv = start_server("hello", "--workers", "2", "--health-path", "/healthz",
                       "--drain-delay", "2")
    srv.proc.send_signal(signal.SIGTERM)
    srv.wait_log("Received SIGTERM")
    wait_for(lambda: health(srv.port) == 503, "the health path failing", timeout=30)
    assert get(srv.port, "/")[0] == 200
    wait_for(lambda: refused(srv.port), "the listener to close", timeout=30, interval=0.05)
    assert srv.proc.wait(30) == 0
