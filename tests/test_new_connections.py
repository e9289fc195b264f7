"""A new connection per request: a client that connects and stays silent at first is served
once it speaks (TCP listeners defer accepting until a connection's first bytes, for about a
second); a request head whose first piece came alone is read whole once the rest comes (a new
connection is read at once after `accept` and joins the epoll set only if it is still open
then); REMOTE_ADDR and REMOTE_PORT are each connection's own, one connection after another;
and behind nginx's default `proxy_pass` (HTTP/1.0, a new upstream connection for every request)
every answer arrives whole.
"""

import http.client
import json
import os
import socket
import time

import pytest

from tests import nginx_util
from tests.helpers import wait_for
from tests.http_util import HOST

# Longer than the listener's accept deferral (1 s): the connection reaches `accept` before its
# request does, by the kernel's timer, not with its first bytes.
SILENT_FIRST_S = 1.5


def read_response(sock: socket.socket) -> bytes:
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def test_a_client_silent_after_connecting_is_served_when_it_speaks(servers):
    srv = servers.get("hello")
    with socket.create_connection((HOST, srv.port), timeout=10) as s:
        time.sleep(SILENT_FIRST_S)
        s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        data = read_response(s)
    assert data.startswith(b"HTTP/1.1 200 ")
    assert data.endswith(b"\r\n\r\nHello, World!")


def server_read(pid: int, server_port: int, client_port: int) -> bool:
    """Whether process `pid` holds the server's end of the connection from `client_port` (it
    was accepted) and has read everything sent on it so far (its receive queue is empty)."""
    inodes = set()
    with open("/proc/net/tcp") as f:
        for line in list(f)[1:]:
            fields = line.split()
            local, remote, queues, inode = fields[1], fields[2], fields[4], fields[9]
            if (int(local.split(":")[1], 16) == server_port
                    and int(remote.split(":")[1], 16) == client_port
                    and int(queues.split(":")[1], 16) == 0):
                inodes.add(f"socket:[{inode}]")
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
        except OSError:
            continue
    return False


def test_a_head_whose_first_piece_came_alone_is_read_once_the_rest_comes(servers):
    """The first look at a new connection finds part of a head: the connection must stay and
    be read again when the rest arrives (it joins the epoll set before the loop sleeps), not
    wait for the header timeout."""
    srv = servers.get("hello")
    for first, rest in ((b"GET / HTTP/1.0\r\nHo", b"st: x\r\n\r\n"), (b"G", b"ET / HTTP/1.0\r\n\r\n")):
        with socket.create_connection((HOST, srv.port), timeout=10) as s:
            s.sendall(first)
            client_port = s.getsockname()[1]
            wait_for(lambda: server_read(srv.pid, srv.port, client_port),
                     "the first piece accepted and read")
            s.sendall(rest)
            data = read_response(s)
        assert data.startswith(b"HTTP/1.1 200 "), data
        assert data.endswith(b"\r\n\r\nHello, World!")


def test_remote_address_and_port_are_each_connections_own(servers):
    srv = servers.get("echo_environ")
    for _ in range(3):
        with socket.create_connection((HOST, srv.port), timeout=10) as s:
            mine = s.getsockname()
            s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
            _, _, body = read_response(s).partition(b"\r\n\r\n")
        env = json.loads(body)
        assert env["REMOTE_ADDR"] == mine[0]
        assert env["REMOTE_PORT"] == str(mine[1])


@pytest.mark.skipif(not nginx_util.available(), reason="nginx or openssl missing")
def test_every_answer_arrives_whole_behind_nginx_default_proxy_pass(servers):
    srv = servers.get("hello")
    proxy = nginx_util.Nginx({"default": ("http10", f"127.0.0.1:{srv.port}")}, tls=False)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.ports["default"], timeout=10)
        for _ in range(50):
            conn.request("GET", "/")
            r = conn.getresponse()
            assert (r.status, r.read()) == (200, b"Hello, World!")
        conn.close()
    finally:
        proxy.stop()
