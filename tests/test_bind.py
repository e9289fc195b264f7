"""Listening addresses (`--bind`, as used for serving): a Unix
socket, IPv6 loopback, and several --bind options at once. Each must serve real requests
(http.client over the socket, and the environ seen by the app)."""

import http.client
import json
import os
import socket
import tempfile

import pytest

from tests.http_util import Conn, request_bytes


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str):
        super().__init__("localhost", timeout=10)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


@pytest.fixture
def unix_path():
    d = tempfile.mkdtemp(prefix="sgsock-")
    yield os.path.join(d, "server.sock")
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)


def test_unix_socket_bind_serves_http(start_server, unix_path):
    srv = start_server("hello", binds=[f"unix:{unix_path}"])
    assert srv.addresses == [("unix", unix_path)]
    conn = UnixHTTPConnection(unix_path)
    for path, body in (("/", b"Hello, World!"), ("/again", b"path=/again")):  # keep-alive
        conn.request("GET", path)
        resp = conn.getresponse()
        assert resp.status == 200 and resp.read() == body
    conn.close()


def test_unix_socket_environ(start_server, unix_path):
    start_server("echo_environ", binds=[f"unix:{unix_path}"])
    with Conn.open_unix(unix_path) as c:
        c.send(request_bytes("GET", "/u?x=1"))
        env = json.loads(c.read_response().body)
    assert env["PATH_INFO"] == "/u" and env["QUERY_STRING"] == "x=1"
    assert isinstance(env["SERVER_NAME"], str) and isinstance(env["SERVER_PORT"], str)
    assert isinstance(env["REMOTE_ADDR"], str)
    # A unix-socket client has no port: the key is absent, not empty.
    assert "REMOTE_PORT" not in env


def test_tcp_and_unix_binds_together(start_server, unix_path):
    srv = start_server("hello", binds=["127.0.0.1:0", f"unix:{unix_path}"])
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/tcp"))
        assert c.read_response().body == b"path=/tcp"
    with Conn.open_unix(unix_path) as c:
        c.send(request_bytes("GET", "/unix"))
        assert c.read_response().body == b"path=/unix"


def _has_ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_ipv6_loopback_bind_serves_http(start_server):
    srv = start_server("echo_environ", binds=["[::1]:0"])
    assert srv.host == "::1"
    with Conn.open(srv.port, host="::1") as c:
        c.send(request_bytes("GET", "/six", host="[::1]"))
        env = json.loads(c.read_response().body)
    assert env["REMOTE_ADDR"] == "::1"
    assert env["PATH_INFO"] == "/six"
    assert env["SERVER_PORT"] == str(srv.port)
