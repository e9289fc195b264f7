"""Behind a real HAProxy: the PROXY protocol from `send-proxy` and `send-proxy-v2`
(IPv4 and IPv6 clients), and failover and draining between two servers with the options a
deployment would use (`retry-on all-retryable-errors`, `option redispatch`, health checks
every 100 ms, `fall 2 rise 2`). Failures are counted at the client; HAProxy's own view comes
from its stats socket.
"""

import json
import signal
import socket

import pytest

from tests import haproxy_util
from tests.helpers import wait_for
from tests.http_util import Conn, request_bytes
from tests.load import Load

pytestmark = pytest.mark.skipif(not haproxy_util.available(), reason="haproxy not installed")


def get_from(port, path, host="127.0.0.1", source=None):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family)
    s.settimeout(10)
    if source:
        s.bind((source, 0))
    s.connect((host, port))
    with Conn(s) as c:
        c.send(request_bytes("GET", path))
        return c.read_response()


@pytest.mark.parametrize("send_proxy", ["send-proxy", "send-proxy-v2"])
def test_the_client_behind_haproxy_is_seen_through_the_proxy_protocol(start_server, send_proxy):
    srv = start_server("echo_environ", "--proxy-protocol")
    proxy = haproxy_util.HAProxy(srv.port, "/", server_options=send_proxy, ipv6=True)
    try:
        # IPv4 from another loopback address than HAProxy's own 127.0.0.1.
        resp = get_from(proxy.port, "/v4", source="127.0.0.9")
        assert resp.status == 200
        env = json.loads(resp.body)
        assert env["REMOTE_ADDR"] == "127.0.0.9" and env["REMOTE_PORT"].isdigit()
        resp = get_from(proxy.port, "/v6", host="::1")
        env = json.loads(resp.body)
        assert env["REMOTE_ADDR"] == "::1"
        assert env["PATH_INFO"] == "/v6"
    finally:
        proxy.stop()


FAILOVER = "    retries 3\n    retry-on all-retryable-errors\n    option redispatch 1\n"


def two_servers(start_server, *options):
    a = start_server("workers", "--health-path", "/healthz", *options)
    b = start_server("workers", "--health-path", "/healthz", *options)
    proxy = haproxy_util.HAProxy(a.port, "/healthz", more_ports=(b.port,),
                                 backend_options=FAILOVER)
    wait_for(lambda: proxy.stats()["app2"]["status"] == "UP", "HAProxy to mark app2 UP",
             timeout=10, interval=0.05)
    return a, b, proxy


def wait_down(proxy, name):
    wait_for(lambda: proxy.stats()[name]["status"].startswith("DOWN"),
             f"HAProxy to mark {name} DOWN", timeout=10)


def test_kill_9_of_one_server_fails_no_request(start_server):
    a, b, proxy = two_servers(start_server)
    try:
        with Load(proxy.port) as load:
            load.wait_for(300)
            assert load.pids == {a.pid, b.pid}, "both serve"
            b.kill()
            load.wait_for(300)
            wait_down(proxy, "app2")
            load.wait_for(300)
        assert load.failed == []
    finally:
        proxy.stop()


def test_a_graceful_stop_drains_out_of_haproxy_before_its_listener_closes(start_server):
    a, b, proxy = two_servers(start_server, "--drain-delay", "2")
    try:
        with Load(proxy.port) as load:
            load.wait_for(300)
            b.proc.send_signal(signal.SIGTERM)
            # HAProxy sees the health path's 503 and takes b out while b still accepts.
            wait_down(proxy, "app2")
            assert b.proc.poll() is None
            socket.create_connection(("127.0.0.1", b.port), timeout=5).close()
            assert b.proc.wait(30) == 0
            load.wait_for(300)
        assert load.failed == []
    finally:
        proxy.stop()
