"""What the server adds to its answers, and how static mounts fall through, as uWSGI configures
them (parsers/http.py, config.py, src/io/static_expires.rs, src/io/static_files.rs): --add-header,
--static-expires / --static-expires-uri, a mount's `;fallthrough` (uWSGI's check-static), and
uWSGI's buffer-size as --limit-header-bytes on uwsgi packets. Real servers, real sockets.
"""

from __future__ import annotations

import email.utils
import http.client
import os
import socket
import struct

import pytest

from tests import nginx_util


def _get(srv, path, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r, body


def _uwsgi_packet(path: str, extra=()) -> bytes:
    pairs = [("REQUEST_METHOD", "GET"), ("REQUEST_URI", path), ("PATH_INFO", path),
             ("QUERY_STRING", ""), ("SERVER_PROTOCOL", "HTTP/1.1"), ("SERVER_NAME", "x"),
             ("SERVER_PORT", "80"), ("HTTP_HOST", "x"), *extra]
    body = b"".join(struct.pack("<H", len(k)) + k.encode() + struct.pack("<H", len(v))
                    + v.encode() for k, v in pairs)
    return struct.pack("<BHB", 0, len(body), 0) + body


def _ask_tcp(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


@pytest.fixture
def docroot(tmp_path):
    d = tmp_path / "public"
    d.mkdir()
    (d / "a.css").write_text("body{}")
    (d / "a.txt").write_text("text")
    return d


def test_add_header_is_on_app_static_and_uwsgi_answers(start_server, docroot):
    srv = start_server("whoami", "--add-header", "X-Frame-Options: DENY",
                       "--add-header", "X-Served-By:  sluicegate  a", "--static", f"/s={docroot}",
                       binds=["127.0.0.1:0", "uwsgi:127.0.0.1:0"])
    r, body = _get(srv, "/")
    assert body == str(srv.pid).encode()
    assert r.getheader("X-Frame-Options") == "DENY"
    assert r.getheader("X-Served-By") == "sluicegate  a"
    r, body = _get(srv, "/s/a.txt")
    assert body == b"text" and r.getheader("X-Frame-Options") == "DENY"
    uwsgi_port = srv.addresses[1][1][1]
    answer = _ask_tcp(uwsgi_port, _uwsgi_packet("/"))
    assert answer.startswith(b"HTTP/1.1 200 ") and b"\r\nX-Frame-Options: DENY\r\n" in answer


@pytest.mark.parametrize("value, why", [
    ("Connection: close", "is the server's to set"),
    ("Bad Name: x", "expected 'Name: value'"),
    ("X-A: a\x01b", "without control characters"),
])
def test_add_header_refuses_what_an_app_may_not_set(start_server, value, why):
    srv = start_server("whoami", "--add-header", value, wait_ready=False)
    assert srv.wait_exit() == 2
    assert why in srv.log_text()


def test_a_fallthrough_mount_leaves_missing_files_to_the_app(start_server, docroot, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    srv = start_server("whoami", "--static", f"/={docroot};fallthrough",
                       "--static", f"/t={other}")
    r, body = _get(srv, "/a.txt")
    assert (r.status, body) == (200, b"text")
    r, body = _get(srv, "/nothing/here")
    assert (r.status, body) == (200, str(srv.pid).encode())  # the app's answer
    r, body = _get(srv, "/t/missing")
    assert r.status == 404  # a mount without the setting answers itself


def _expires_after_date(r) -> float:
    expires = email.utils.parsedate_to_datetime(r.getheader("Expires"))
    date = email.utils.parsedate_to_datetime(r.getheader("Date"))
    return (expires - date).total_seconds()


def test_static_expires_by_file_path_then_by_uri(start_server, docroot):
    srv = start_server("whoami", "--static", f"/s={docroot}",
                       "--static-expires", f"^{docroot}/.*\\.css$ 3600",
                       "--static-expires-uri", "\\?v=[0-9]+$ 60")
    r, _ = _get(srv, "/s/a.css?v=1")  # both match: the file path rule wins
    assert r.status == 200 and _expires_after_date(r) in (3600, 3601)
    r, _ = _get(srv, "/s/a.txt?v=2")
    assert r.status == 200 and _expires_after_date(r) in (60, 61)
    r, _ = _get(srv, "/s/a.txt")
    assert r.status == 200 and r.getheader("Expires") is None
    r, _ = _get(srv, "/s/missing.css")
    assert r.status == 404 and r.getheader("Expires") is None
    r, _ = _get(srv, "/s/a.css", headers={"Range": "bytes=0-1"})
    assert r.status == 206 and r.getheader("Expires") is not None


def test_a_static_expires_pattern_that_cannot_be_matched_stops_the_start(start_server, docroot):
    srv = start_server("whoami", "--static", f"/s={docroot}",
                       "--static-expires", "(?<=a)b 60", wait_ready=False)
    assert srv.wait_exit() != 0
    assert "--static-expires \"(?<=a)b\": not a pattern sluicegate can match" in srv.log_text()


def test_buffer_size_a_uwsgi_packet_over_limit_header_bytes_gets_431(start_server):
    """uWSGI's buffer-size bounds the uwsgi packet; --limit-header-bytes does here."""
    srv = start_server("whoami", "--limit-header-bytes", "4096",
                       binds=["127.0.0.1:0", "uwsgi:127.0.0.1:0"])
    port = srv.addresses[1][1][1]
    fits = _uwsgi_packet("/", [("HTTP_X_PAD", "a" * 3800)])
    assert len(fits) - 4 <= 4096
    assert _ask_tcp(port, fits).startswith(b"HTTP/1.1 200 ")
    over = _uwsgi_packet("/", [("HTTP_X_PAD", "a" * 4000)])
    assert len(over) - 4 > 4096
    answer = _ask_tcp(port, over)
    assert answer.startswith(b"HTTP/1.1 431 ") and b"Connection: close" in answer


@pytest.mark.skipif(not nginx_util.available(), reason="nginx or openssl missing")
def test_buffer_size_behind_nginx_uwsgi_pass_the_client_gets_431(start_server, tmp_path):
    sock = tmp_path / "app.sock"
    os.chmod(tmp_path, 0o755)
    start_server("whoami", "--limit-header-bytes", "4096", binds=[f"uwsgi:unix:{sock};mode=666"])
    proxy = nginx_util.Nginx({"u": ("uwsgi", f"unix:{sock}")}, tls=False)
    try:
        c = http.client.HTTPConnection("127.0.0.1", proxy.ports["u"], timeout=10)
        c.request("GET", "/", headers={"X-Pad": "a" * 300})
        r = c.getresponse()
        assert r.status == 200, r.read()
        r.read()
        c.request("GET", "/", headers={"X-Pad": "a" * 5000})
        r = c.getresponse()
        assert r.status == 431
        r.read()
        c.close()
    finally:
        proxy.stop()
