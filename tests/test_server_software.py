"""SERVER_SOFTWARE, one of PEP 3333's CGI variables, is `sluicegate/VERSION` in every environ:
HTTP/1.1, HTTP/2 and a uwsgi request (gunicorn sets `gunicorn/VERSION`). It was unset: an app
or middleware reading it got a KeyError."""

import json

import sluicegate
from tests.h2_client import H2Client
from tests.uwsgi_packet import exchange, nginx_vars

EXPECTED = f"sluicegate/{sluicegate.__version__}"


def test_http11_environ_has_server_software(servers):
    srv = servers.get("echo_environ")
    r = srv.request("GET", "/?x=1")
    assert json.loads(r.body)["SERVER_SOFTWARE"] == EXPECTED


def test_http2_environ_has_server_software(servers):
    srv = servers.get("http2")
    c = H2Client(srv.port)
    try:
        r = c.get("/environ")
    finally:
        c.close()
    env = dict(line.split("=", 1) for line in bytes(r.body).decode("latin-1").splitlines())
    assert env["SERVER_SOFTWARE"] == EXPECTED


def test_uwsgi_environ_has_server_software(start_server):
    srv = start_server("echo_environ", binds=["uwsgi:127.0.0.1:0"])
    answer = exchange((srv.host, srv.port), nginx_vars())
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), answer[:300]
    assert json.loads(body)["SERVER_SOFTWARE"] == EXPECTED
