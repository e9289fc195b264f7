"""A TLS listener in the deployments around it: behind a real HAProxy in TCP mode that passes
the client's address with PROXY protocol v2 (`send-proxy-v2`) and leaves TLS to the server,
and through a binary upgrade (USR2): the new master serves TLS on the inherited socket while
clients keep sending, without a failed request.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl

import pytest

from tests import haproxy_util
from tests.helpers import wait_for
from tests.test_tls import client_context, read_until_closed, tls_options
from tests.load import Load
from tests.test_workers import _pid_from, children
from tests.tls_certs import tls_certs  # noqa: F401  (the fixture)

# A second loopback address for the client: HAProxy itself connects from 127.0.0.1, so an app
# that sees this one saw the PROXY header, not the TCP peer.
CLIENT_ADDR = "127.0.0.2"


@pytest.mark.skipif(not haproxy_util.available(), reason="haproxy is not installed")
def test_behind_haproxy_tcp_mode_with_proxy_v2_the_client_address_reaches_the_app(
        start_server, tls_certs):
    srv = start_server("echo_environ", *tls_options(tls_certs),
                       binds=["https:proxy:127.0.0.1:0"])
    proxy = haproxy_util.HAProxy(srv.port, None, server_options="send-proxy-v2")
    try:
        raw = socket.socket()
        raw.settimeout(10)
        raw.bind((CLIENT_ADDR, 0))
        client_port = raw.getsockname()[1]
        raw.connect(("127.0.0.1", proxy.port))
        with client_context(tls_certs).wrap_socket(raw, server_hostname="127.0.0.1") as s:
            assert s.version() in ("TLSv1.3", "TLSv1.2")  # the server's handshake, through
            s.sendall(b"GET /behind HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"GET /again HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = read_until_closed(s)
        answers = [json.loads(part.split(b"\r\n\r\n", 1)[1].split(b"HTTP/1.1 ")[0])
                   for part in data.split(b"HTTP/1.1 200 OK")[1:]]
        assert [env["PATH_INFO"] for env in answers] == ["/behind", "/again"]
        for env in answers:
            assert env["REMOTE_ADDR"] == CLIENT_ADDR
            assert env["REMOTE_PORT"] == str(client_port)
            assert env["wsgi.url_scheme"] == "https" and env["HTTPS"] == "on"
    finally:
        proxy.stop()


def test_usr2_new_master_serves_tls_on_the_same_socket_without_a_failed_request(
        start_server, tls_certs, tmp_path):
    pid_file = str(tmp_path / "sg.pid")
    srv = start_server("workers", "--workers", "2", "--pid", pid_file, *tls_options(tls_certs))
    old_workers = set(children(srv.pid))
    ctx = client_context(tls_certs)

    def connect() -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", srv.port, timeout=30, context=ctx)

    new_master = None
    try:
        with Load(srv.port, clients=4, connect=connect) as load:
            load.wait_for(50)
            srv.signal(signal.SIGUSR2)
            wait_for(lambda: _pid_from(pid_file) not in (None, srv.pid), "the new master's pid",
                     timeout=30)
            new_master = _pid_from(pid_file)
            wait_for(lambda: len(children(new_master)) == 2, "the new master's workers", timeout=30)
            srv.wait_log(rf"\[{new_master}\] \[INFO\] Listening at: https://127.0.0.1:{srv.port}")
            load.wait_for(50)
            srv.signal(signal.SIGTERM)  # the operator stops the old master
            assert srv.wait_exit() == 0
            load.wait_for(100)
        assert load.failed == []
        new_workers = set(children(new_master))
        assert new_workers & load.pids and not (new_workers & old_workers)
        # A new connection after the old master left: a fresh handshake with the new master.
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=10),
                             server_hostname="127.0.0.1") as s:
            assert isinstance(s, ssl.SSLSocket) and s.version()
            s.sendall(b"GET /pid HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            body = read_until_closed(s).split(b"\r\n\r\n", 1)[1]
        assert int(body) in new_workers
    finally:
        if new_master:
            os.kill(new_master, signal.SIGTERM)
            wait_for(lambda: not os.path.exists(f"/proc/{new_master}") or
                     open(f"/proc/{new_master}/stat").read().split()[2] == "Z",
                     "the new master to end", timeout=30)
