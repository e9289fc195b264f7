"""A Host whose brackets do not enclose a whole IP-literal (`[::1`, `[::1]x`, `a]b`, `[zz]`) is
refused with 400 (RFC 9112 §3.2, RFC 3986 §3.2.2's `IP-literal [":" port]`). HTTP/1.1 let them
through to the app as HTTP_HOST (a 200), which frameworks build absolute URLs and allowed-host
checks from; the uwsgi listener (nginx's HTTP_HOST) and HTTP/2's `:authority` are held to the
same check."""

import json

import pytest

from tests.h2_client import H2Client
from tests.http_util import Conn
from tests.uwsgi_packet import exchange, nginx_vars

BAD = [b"[::1", b"[::1]x", b"a]b", b"[zz]", b"[::1]:80x", b"x[::1]"]
GOOD = [b"[::1]", b"[::1]:8000", b"[2001:db8::1]:443", b"example.org:8000"]


def status_for_host(port: int, host: bytes) -> int:
    with Conn.open(port) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
        return c.read_response().status


@pytest.mark.parametrize("host", BAD, ids=lambda h: h.decode())
def test_http11_malformed_ip_literal_host_is_400(servers, host):
    assert status_for_host(servers.get("echo_environ").port, host) == 400


@pytest.mark.parametrize("host", GOOD, ids=lambda h: h.decode())
def test_http11_ip_literal_hosts_pass(servers, host):
    srv = servers.get("echo_environ")
    with Conn.open(srv.port) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
        r = c.read_response()
    assert r.status == 200
    assert json.loads(r.body)["HTTP_HOST"] == host.decode()


def test_uwsgi_malformed_host_is_400_and_a_literal_passes(start_server):
    srv = start_server("echo_environ", binds=["uwsgi:127.0.0.1:0"])
    for host in BAD:
        answer = exchange((srv.host, srv.port), nginx_vars(host=host))
        assert answer.startswith(b"HTTP/1.1 400"), (host, answer[:200])
    answer = exchange((srv.host, srv.port), nginx_vars(host=b"[::1]:8000"))
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


def test_http2_malformed_authority_never_reaches_the_app(servers):
    srv = servers.get("http2")
    for host in BAD:
        c = H2Client(srv.port)
        try:
            r = c.get("/environ", authority=host.decode())
        except Exception:  # the client or the server ended the connection: refused either way
            continue
        finally:
            c.close()
        assert r.reset is not None or r.status == 400, (host, r.headers)
