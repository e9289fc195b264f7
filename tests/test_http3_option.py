"""`--http3` on the command line in the forms `--http2` takes: the bare switch, `--http3 on`
and `--http3 off` (and `--http3=on`), with the app named after it. Each is seen over real
sockets: HTTP/3 answers over UDP, or the TLS answers carry no Alt-Svc when it is off.
"""

from __future__ import annotations

import http.client
import ssl

import pytest

from tests.h3_client import H3Client
from tests.tls_certs import TlsCerts, tls_certs  # noqa: F401  (the fixture)


def tls(c: TlsCerts):
    return ["--certfile", str(c.server_chain), "--keyfile", str(c.server_key)]


def alt_svc(srv, c: TlsCerts):
    ctx = ssl.create_default_context(cafile=str(c.ca_cert))
    conn = http.client.HTTPSConnection(srv.host, srv.port, timeout=10, context=ctx)
    try:
        conn.request("GET", "/")
        r = conn.getresponse()
        r.read()
    finally:
        conn.close()
    assert r.status == 200
    return r.getheader("alt-svc")


@pytest.mark.parametrize("form", [["--http3", "on"], ["--http3=on"], ["--http3"]])
def test_http3_on_takes_a_value_like_http2_and_serves_http3(start_server, tls_certs, form):
    """`--http3 on` before the app was refused ("unexpected argument" for the app): the flag
    was a bare switch, so `on` was taken for the app's name."""
    srv = start_server("http3", *tls(tls_certs), *form)
    with H3Client(srv.port, str(tls_certs.ca_cert), timeout=30) as c:
        r = c.get("/")
    assert (r.status, bytes(r.body)) == (200, b"Hello, World!")
    assert alt_svc(srv, tls_certs) == f'h3=":{srv.port}"; ma=86400'


def test_http3_off_turns_it_off(start_server, tls_certs):
    """`--http3 off` was refused the same way; off after on is off (the last one wins)."""
    srv = start_server("http3", *tls(tls_certs), "--http3", "--http3", "off")
    assert alt_svc(srv, tls_certs) is None
