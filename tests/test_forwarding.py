"""Trusted forwarding: what X-Forwarded-* and RFC 7239 `Forwarded` change
in the environ and the access log, from trusted peers only (`--forwarded-for-ips`; the scheme
alone with `--forwarded-allow-ips`: test_forwarded_allow_ips_gunicorn.py). Raw sockets from
127.0.0.1, trusted here, or, for the untrusted cases, a server that trusts another address. The same
through a real nginx is in test_behind_nginx.py.
"""

import json

import pytest

from tests.http_util import Conn

HEADERS = (
    "X-Forwarded-For: 6.6.6.6, 203.0.113.9\r\n"
    "X-Forwarded-Proto: https\r\n"
    "X-Forwarded-Host: shop.example\r\n"
)


def environ_for(server, extra_headers: str = "", target: str = "/", unix: bool = False) -> dict:
    raw = f"GET {target} HTTP/1.1\r\nHost: internal:8000\r\n{extra_headers}\r\n".encode()
    conn = Conn.open_unix(server.addresses[0][1]) if unix else Conn.open(server.port)
    with conn as c:
        c.send(raw)
        resp = c.read_response()
    assert resp.status == 200, resp.body[:500]
    return json.loads(resp.body)


@pytest.fixture(scope="module")
def trusting(servers):
    return servers.get("echo_environ", "--access-log", "-", "--forwarded-for-ips", "127.0.0.1,::1,unix")


@pytest.fixture(scope="module")
def distrusting(servers):
    return servers.get("echo_environ", "--forwarded-allow-ips", "10.0.0.1")


def test_a_trusted_proxy_sets_client_scheme_and_host(trusting):
    env = environ_for(trusting, HEADERS, "/who?x=1")
    assert env["REMOTE_ADDR"] == "203.0.113.9", "the right-most address not trusted"
    assert "REMOTE_PORT" not in env, "the proxy's port is not the client's"
    assert env["wsgi.url_scheme"] == "https"
    assert (env["HTTP_HOST"], env["SERVER_NAME"], env["SERVER_PORT"]) == (
        "shop.example", "shop.example", "443")
    # The headers themselves still reach the app.
    assert env["HTTP_X_FORWARDED_FOR"] == "6.6.6.6, 203.0.113.9"
    trusting.wait_log(r'^203\.0\.113\.9 - - .*"GET /who\?x=1 HTTP/1\.1" 200', stream="stdout")


def test_port_and_ssl_headers(trusting):
    env = environ_for(trusting, "X-Forwarded-Ssl: on\r\nX-Forwarded-Port: 8443\r\n")
    assert env["wsgi.url_scheme"] == "https"
    assert env["SERVER_PORT"] == "8443"
    assert env["HTTP_HOST"] == "internal:8000", "no forwarded host: the request's own"
    env = environ_for(trusting, "X-Forwarded-Proto: https\r\n")
    assert env["SERVER_PORT"] == "8000", "scheme forwarded, port from the Host header"


def test_an_untrusted_peer_changes_nothing(distrusting):
    env = environ_for(distrusting, HEADERS + "Forwarded: for=1.2.3.4;proto=https\r\n")
    assert env["REMOTE_ADDR"] == "127.0.0.1" and env["REMOTE_PORT"].isdigit()
    assert env["wsgi.url_scheme"] == "http"
    assert env["HTTP_HOST"] == "internal:8000"
    assert env["HTTP_X_FORWARDED_PROTO"] == "https", "reaches the app unchanged"
    assert env["HTTP_FORWARDED"] == "for=1.2.3.4;proto=https"


@pytest.mark.parametrize("bad", [
    "X-Forwarded-For: not-an-address\r\n",
    "X-Forwarded-For: 999.1.1.1\r\n",
    "X-Forwarded-Proto: https, http\r\n",
    "X-Forwarded-Proto: https\r\nX-Forwarded-Ssl: off\r\n",
    "X-Forwarded-Host: a b\r\n",
    "X-Forwarded-Port: 0\r\n",
    "X-Forwarded-For: " + ",".join(["10.0.0.1"] * 3000) + "\r\n",
    "X-Forwarded-For: \xff\xfe\r\n",
])
def test_malformed_values_are_ignored_never_an_error(trusting, bad):
    env = environ_for(trusting, bad)
    assert env["wsgi.url_scheme"] == "http"
    assert env["HTTP_HOST"] == "internal:8000"
    assert env["REMOTE_ADDR"] in ("127.0.0.1", "10.0.0.1")


def test_the_other_family_is_not_read(trusting, servers):
    env = environ_for(trusting, "Forwarded: for=198.51.100.7;proto=https\r\n")
    assert (env["REMOTE_ADDR"], env["wsgi.url_scheme"]) == ("127.0.0.1", "http")
    rfc = servers.get("echo_environ", "--forwarded-headers", "forwarded", "--forwarded-for-ips", "127.0.0.1,::1,unix")
    env = environ_for(rfc, HEADERS)
    assert (env["REMOTE_ADDR"], env["wsgi.url_scheme"]) == ("127.0.0.1", "http")


def test_rfc_7239_forwarded(servers):
    rfc = servers.get("echo_environ", "--forwarded-headers", "forwarded", "--forwarded-for-ips", "127.0.0.1,::1,unix")
    env = environ_for(rfc, 'Forwarded: for=6.6.6.6, for="[2001:db8::17]:4711";proto=https;'
                           'host="shop.example:8443", for=127.0.0.1\r\n')
    assert (env["REMOTE_ADDR"], env["REMOTE_PORT"]) == ("2001:db8::17", "4711")
    assert env["wsgi.url_scheme"] == "https"
    assert (env["HTTP_HOST"], env["SERVER_NAME"], env["SERVER_PORT"]) == (
        "shop.example:8443", "shop.example", "8443")


def test_a_unix_socket_peer(start_server, tmp_path):
    path = str(tmp_path / "s.sock")
    srv = start_server("echo_environ", "--forwarded-for-ips", "unix", binds=[f"unix:{path}"])
    env = environ_for(srv, unix=True)
    assert env["REMOTE_ADDR"] == "" and "REMOTE_PORT" not in env, "documented: no address"
    env = environ_for(srv, HEADERS, unix=True)
    assert env["REMOTE_ADDR"] == "203.0.113.9", "unix peers are trusted when listed"
    default = start_server("echo_environ", binds=[f"unix:{tmp_path / 'd.sock'}"])
    env = environ_for(default, HEADERS, unix=True)
    assert (env["REMOTE_ADDR"], env["wsgi.url_scheme"]) == ("", "https"), \
        "by default a unix peer's scheme is believed, not its client address"
    strict = start_server("echo_environ", "--forwarded-for-ips", "127.0.0.1",
                          binds=[f"unix:{tmp_path / 't.sock'}"])
    env = environ_for(strict, HEADERS, unix=True)
    assert env["REMOTE_ADDR"] == ""


def test_bad_allow_list_is_a_usage_error(tmp_path):
    from tests.test_cli import run_cli

    r = run_cli("--forwarded-allow-ips", "10.0.0.0/40", "tests.apps.hello:app", cwd=tmp_path)
    assert r.returncode == 2
    assert "--forwarded-allow-ips '10.0.0.0/40'" in r.stderr
