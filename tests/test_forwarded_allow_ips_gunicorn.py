"""`--forwarded-allow-ips` with gunicorn's meaning: the scheme (X-Forwarded-Proto,
X-Forwarded-Ssl) of a trusted peer is believed, while REMOTE_ADDR, the host and the access
log's `%(h)s` stay the peer's; the client's address from X-Forwarded-For is sluicegate's own
`--forwarded-for-ips`. Raw sockets from 127.0.0.1, and a gunicorn.conf.py.
"""

from __future__ import annotations

import json
import textwrap

from tests.http_util import Conn

HEADERS = ("X-Forwarded-For: 203.0.113.7\r\n"
           "X-Forwarded-Proto: https\r\n"
           "X-Forwarded-Host: shop.example\r\n")


def environ_for(server) -> dict:
    raw = f"GET /who HTTP/1.1\r\nHost: internal:8000\r\n{HEADERS}\r\n".encode()
    with Conn.open(server.port) as c:
        c.send(raw)
        resp = c.read_response()
    assert resp.status == 200, resp.body[:500]
    return json.loads(resp.body)


LOG = ["--access-log", "-", "--access-logformat", "%(h)s %(r)s"]


def test_forwarded_allow_ips_trusts_the_scheme_and_not_the_client_address(start_server):
    """With --forwarded-allow-ips set, REMOTE_ADDR and the access log's %(h)s came from
    X-Forwarded-For; gunicorn keeps the peer's address and trusts the scheme only."""
    srv = start_server("echo_environ", "--forwarded-allow-ips", "127.0.0.1", *LOG)
    env = environ_for(srv)
    assert env["wsgi.url_scheme"] == "https"
    assert env["REMOTE_ADDR"] == "127.0.0.1"
    assert env["HTTP_HOST"] == "internal:8000"  # X-Forwarded-Host is not believed
    assert env["HTTP_X_FORWARDED_FOR"] == "203.0.113.7"  # passed on, unchanged
    srv.wait_log(r"^127\.0\.0\.1 GET /who HTTP/1\.1$", stream="stdout")


def test_a_gunicorn_configs_forwarded_allow_ips_keeps_remote_addr(start_server, tmp_path):
    """The same from a gunicorn.conf.py's `forwarded_allow_ips = "*"`."""
    conf = tmp_path / "gunicorn.conf.py"
    conf.write_text(textwrap.dedent("""
        forwarded_allow_ips = "*"
        accesslog = "-"
        access_log_format = "%(h)s %(r)s"
    """))
    srv = start_server("echo_environ", "-c", str(conf))
    env = environ_for(srv)
    assert (env["REMOTE_ADDR"], env["wsgi.url_scheme"]) == ("127.0.0.1", "https")
    srv.wait_log(r"^127\.0\.0\.1 GET /who HTTP/1\.1$", stream="stdout")


def test_forwarded_for_ips_is_the_client_address_rewriting(start_server):
    """sluicegate's own rewriting, under its own name: the client, host and scheme of a
    --forwarded-for-ips peer are believed."""
    srv = start_server("echo_environ", "--forwarded-for-ips", "127.0.0.1", *LOG)
    env = environ_for(srv)
    assert (env["REMOTE_ADDR"], env["wsgi.url_scheme"]) == ("203.0.113.7", "https")
    assert env["HTTP_HOST"] == "shop.example"
    srv.wait_log(r"^203\.0\.113\.7 GET /who HTTP/1\.1$", stream="stdout")
