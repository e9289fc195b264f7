"""Django and Flask over HTTP/2, each both ways a client reaches them: h2c with prior knowledge
and h2 over TLS (ALPN), with the `h2` library as the client (tests/h2_client.py) doing what a
browser does. Django's admin login with its CSRF protection (the form's token and the
``csrftoken`` cookie, then the session cookie to the admin index), a 50 MB multipart upload
read whole by Django (its sha256 compared), and server-sent events from Django's
StreamingHttpResponse and from a Flask generator, the first event reaching the client while the
app still waits to send the second. (Flask's form and upload over h2c: tests/test_http2.py.)
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import ssl
import urllib.parse
import uuid
from http.cookies import SimpleCookie
from typing import Dict, List, Tuple

import pytest

from tests.h2_client import H2Client, Response
from tests.test_frameworks import multipart
from tests.tls_certs import tls_certs  # noqa: F401  (the fixture)

TRANSPORTS = ["h2c", "tls"]
UPLOAD_SIZE = 50 * 1024 * 1024
#: The superuser's password in tests/apps/django_site.py (importing that module here would set
#: Django up in the test process).
ADMIN_PASSWORD = "not-a-secret-pass"
TOKEN_RE = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


class Site:
    """One server over one transport, and how to open an HTTP/2 connection to it."""

    def __init__(self, srv, transport: str, ca_cert=None):
        self.srv, self.transport = srv, transport
        self.scheme = "https" if transport == "tls" else "http"
        self.authority = f"127.0.0.1:{srv.port}"
        self.ca_cert = ca_cert

    def connect(self, timeout: float = 20.0) -> H2Client:
        tls = None
        if self.transport == "tls":
            tls = ssl.create_default_context(cafile=str(self.ca_cert))
            tls.set_alpn_protocols(["h2", "http/1.1"])
        c = H2Client(self.srv.port, tls=tls, timeout=timeout)
        if tls is not None:
            assert c.sock.selected_alpn_protocol() == "h2"
        return c


def site_for(app: str, transport: str, request, servers) -> Site:
    if transport == "h2c":
        return Site(servers.get(app), transport)
    certs = request.getfixturevalue("tls_certs")
    srv = servers.get(app, "--certfile", str(certs.server_chain), "--keyfile",
                      str(certs.server_key))
    return Site(srv, transport, certs.ca_cert)


@pytest.fixture(params=TRANSPORTS)
def django_site(request, servers) -> Site:
    return site_for("django_site", request.param, request, servers)


class Browser:
    """What a browser keeps between requests on one HTTP/2 connection: its cookies."""

    def __init__(self, site: Site, client: H2Client):
        self.site, self.client = site, client
        self.cookies: Dict[str, str] = {}

    def send(self, method: str, path: str, body: bytes = None,
             headers: List[Tuple[str, str]] = ()) -> Response:
        hdrs = list(headers)
        if self.cookies:
            # One cookie field per pair, as browsers send them over HTTP/2.
            hdrs += [("cookie", f"{k}={v}") for k, v in self.cookies.items()]
        if body is not None:
            hdrs.append(("content-length", str(len(body))))
        sid = self.client.request(method, path, headers=hdrs, body=body,
                                  authority=self.site.authority, scheme=self.site.scheme)
        r = self.client.responses([sid])[0]
        for name, value in r.headers:
            if name == b"set-cookie":
                for morsel in SimpleCookie(value.decode()).values():
                    self.cookies[morsel.key] = morsel.value
        return r

    def post_form(self, path: str, fields: Dict[str, str]) -> Response:
        body = urllib.parse.urlencode(fields).encode()
        origin = f"{self.site.scheme}://{self.site.authority}"
        return self.send("POST", path, body, [
            ("content-type", "application/x-www-form-urlencoded"), ("origin", origin),
            ("referer", origin + path)])


def test_django_admin_login_with_csrf(django_site):
    c = django_site.connect()
    try:
        browser = Browser(django_site, c)
        page = browser.send("GET", "/admin/login/?next=/admin/")
        assert page.status == 200
        assert "csrftoken" in browser.cookies
        token = TOKEN_RE.search(bytes(page.body)).group(1).decode()

        # Without the form's token CSRF protection refuses the form.
        refused = browser.post_form("/admin/login/?next=/admin/",
                                    {"username": "admin", "password": "wrong"})
        assert refused.status == 403

        login = browser.post_form("/admin/login/?next=/admin/", {
            "csrfmiddlewaretoken": token, "username": "admin", "password": ADMIN_PASSWORD,
            "next": "/admin/"})
        assert login.status == 302, bytes(login.body)[:2000]
        assert login.header(b"location") == b"/admin/"
        assert "sessionid" in browser.cookies

        index = browser.send("GET", "/admin/")
    finally:
        c.close()
    assert index.status == 200
    html = bytes(index.body)
    assert b"Site administration" in html
    assert b"<strong>admin</strong>" in html  # "Welcome, admin": logged in
    assert b'id="login-form"' not in html
    assert c.goaway() is None  # three requests, one connection


def test_django_reads_a_50_mb_upload_whole(django_site):
    data = random.Random(50).randbytes(UPLOAD_SIZE)
    body, ctype = multipart({"note": "fifty"}, {"file": ("big.bin", data)})
    c = django_site.connect(timeout=120)
    try:
        r = Browser(django_site, c).send("POST", "/upload", body,
                                         [("content-type", ctype)])
    finally:
        c.close()
    assert r.status == 200, bytes(r.body)[:2000]
    assert json.loads(bytes(r.body)) == {"size": UPLOAD_SIZE,
                                         "sha256": hashlib.sha256(data).hexdigest()}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("app", ["django_site", "flask_app"])
def test_server_sent_events_arrive_block_by_block(app, transport, request, servers):
    site = site_for(app, transport, request, servers)
    gate = uuid.uuid4().hex
    c = site.connect()
    try:
        sid = c.request("GET", f"/events?name={gate}", authority=site.authority,
                        scheme=site.scheme)
        r = c.responses_by_id[sid]
        while b"data: one" not in r.body and c.receive_once():
            pass
        # The first event is here while the app waits for the gate: not held back.
        assert bytes(r.body) == b"data: one\n\n" and not r.ended
        assert r.status == 200
        assert r.header(b"content-type").startswith(b"text/event-stream")
        assert r.header(b"content-length") is None
        site.srv.open_gate(gate)
        done = c.responses([sid])[0]
    finally:
        c.close()
    assert bytes(done.body) == b"data: one\n\ndata: two\n\n" and done.reset is None
