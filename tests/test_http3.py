"""HTTP/3 end to end (`--http3`), over real UDP sockets, with an independent client: aioquic's
QUIC and HTTP/3 stack (tests/h3_client.py), and curl where it is built with HTTP/3. Each
request stream is one app call through the same bridge as HTTP/1.1 and HTTP/2: the environ,
bodies both ways byte-exact, concurrency on one connection, an app's failure, close(), the
Alt-Svc advertisement on the TCP side, the header-section limit, and a graceful stop that
finishes a stream in flight. Overlap is shown by counting the calls inside the app, never by
timing.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import shutil
import signal
import ssl
import subprocess
import uuid

import pytest

from tests.apps.http3 import pattern
from tests.h2_client import H2Client
from tests.h3_client import H3Client
from tests.helpers import wait_for
from tests.tls_certs import TlsCerts, make_certs, tls_certs  # noqa: F401  (the fixture)

CURL = shutil.which("curl")


def tls_options(c: TlsCerts):
    return ["--certfile", str(c.server_chain), "--keyfile", str(c.server_key), "--http3"]


def client(srv, c: TlsCerts, timeout: float = 30) -> H3Client:
    return H3Client(srv.port, str(c.ca_cert), timeout=timeout)


def env_lines(body: bytes) -> dict:
    return dict(line.split("=", 1) for line in body.decode("latin-1").splitlines())


def test_a_get_over_http3_is_one_app_call_with_server_protocol_http3(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs))
    with client(srv, tls_certs) as c:
        hello = c.get("/")
        env = c.get("/environ?x=1")
    assert (hello.status, bytes(hello.body)) == (200, b"Hello, World!")
    assert hello.header(b"content-length") == b"13"
    assert hello.header(b"server")
    e = env_lines(bytes(env.body))
    assert e["SERVER_PROTOCOL"] == "HTTP/3"
    assert e["wsgi.url_scheme"] == "https"
    assert e["REQUEST_METHOD"] == "GET" and e["QUERY_STRING"] == "x=1"
    assert e["HTTP_HOST"] == "localhost"


def test_a_2_mib_upload_is_echoed_byte_exact(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs))
    body = pattern(2 * 1024 * 1024 + 7)
    with client(srv, tls_certs) as c:
        r = c.response(c.request("POST", "/echo", [("content-type", "application/octet-stream")],
                                 body=body))
    assert r.status == 200
    assert r.header(b"x-length") == str(len(body)).encode()
    assert r.header(b"x-sha256") == hashlib.sha256(body).hexdigest().encode()
    assert bytes(r.body) == body


def test_an_upload_without_content_length_is_read_to_the_end_of_the_stream(start_server,
                                                                           tls_certs):
    srv = start_server("http3", *tls_options(tls_certs))
    body = pattern(300_001)
    with client(srv, tls_certs) as c:
        r = c.response(c.request("PUT", "/echo", body=body))
    assert r.status == 200 and bytes(r.body) == body


def test_a_16_mib_answer_arrives_byte_exact(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs))
    n = 16 * 1024 * 1024
    with client(srv, tls_certs, timeout=60) as c:
        r = c.get(f"/pattern?n={n}")
    assert r.status == 200 and r.ended and r.reset is None
    assert len(r.body) == n
    assert bytes(r.body) == pattern(n)


def test_many_streams_of_one_connection_run_at_once(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs), "--threads", "4:64")
    n, token = 20, uuid.uuid4().hex
    with client(srv, tls_certs) as c:
        sids = [c.request("GET", f"/together?n={n}&token={token}") for _ in range(n)]
        rs = [c.response(s) for s in sids]
    # Each call waited until all 20 were inside the app together.
    assert [r.status for r in rs] == [200] * n
    assert [int(r.body) for r in rs] == [n] * n


def test_an_app_exception_is_a_500_without_the_traceback(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs))
    with client(srv, tls_certs) as c:
        r = c.get("/boom")
        after = c.get("/")
    assert r.status == 500
    assert b"Traceback" not in r.body and b"boom" not in r.body
    # The connection serves on.
    assert after.status == 200
    srv.wait_log(r"boom \(expected by the test\)")


def test_the_iterable_is_closed_after_the_answer_and_after_a_failure(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs))
    ok, failing = uuid.uuid4().hex, uuid.uuid4().hex
    with client(srv, tls_certs) as c:
        r = c.get(f"/closing?token={ok}")
        bad = c.get(f"/closing?token={failing}&fail=1")
    assert (r.status, bytes(r.body)) == (200, b"closing")
    assert bad.status == 500
    assert srv.wait_marks("closed", 1, prefix=ok)
    assert srv.wait_marks("closed", 1, prefix=failing)


def test_https_answers_advertise_http3_with_alt_svc(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs))
    ctx = ssl.create_default_context(cafile=str(tls_certs.ca_cert))
    conn = http.client.HTTPSConnection(srv.host, srv.port, timeout=10, context=ctx)
    try:
        conn.request("GET", "/")
        r = conn.getresponse()
        r.read()
    finally:
        conn.close()
    assert r.status == 200
    assert r.getheader("alt-svc") == f'h3=":{srv.port}"; ma=86400'


def test_http2_answers_over_tls_advertise_http3_too(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs))
    ctx = ssl.create_default_context(cafile=str(tls_certs.ca_cert))
    ctx.set_alpn_protocols(["h2"])
    c = H2Client(srv.port, tls=ctx)
    try:
        r = c.get("/")
    finally:
        c.close()
    assert r.status == 200
    assert r.header(b"alt-svc") == f'h3=":{srv.port}"; ma=86400'.encode()


def test_without_http3_no_alt_svc_is_sent(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs)[:-1])
    ctx = ssl.create_default_context(cafile=str(tls_certs.ca_cert))
    conn = http.client.HTTPSConnection(srv.host, srv.port, timeout=10, context=ctx)
    try:
        conn.request("GET", "/")
        r = conn.getresponse()
        r.read()
    finally:
        conn.close()
    assert r.status == 200 and r.getheader("alt-svc") is None


def test_a_header_section_over_the_limit_is_refused(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs), "--limit-header-bytes", "4096")
    with client(srv, tls_certs) as c:
        big = c.get("/", [("x-big", "a" * 8000)])
        fine = c.get("/", [("x-small", "a" * 100)])
    assert big.status == 431
    assert fine.status == 200


def test_a_graceful_stop_finishes_the_stream_in_flight(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs), "--graceful-timeout", "60")
    with client(srv, tls_certs) as c:
        sid = c.request("GET", "/gate?name=stop")
        srv.wait_marks("entered", 1)
        srv.signal(signal.SIGTERM)
        wait_for(lambda: c.goaway, "the server's GOAWAY", 10,
                 context=lambda: srv.log_text()[-3000:])
        srv.open_gate("stop")
        r = c.response(sid)
        # The client keeps its connection: the server closes it once its answer is
        # acknowledged, and exits well within --graceful-timeout.
        assert srv.wait_exit(timeout=15) == 0
    assert (r.status, bytes(r.body)) == (200, b"through the gate")


def curl_has_http3() -> bool:
    if not CURL:
        return False
    out = subprocess.run([CURL, "-V"], capture_output=True, text=True).stdout
    return "HTTP3" in out


@pytest.mark.skipif(not curl_has_http3(), reason="curl without HTTP/3")
def test_curl_gets_http3(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs))
    r = subprocess.run([CURL, "-sS", "-i", "--http3-only", "--cacert", str(tls_certs.ca_cert),
                        f"https://localhost:{srv.port}/"], capture_output=True, timeout=20)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(b"HTTP/3 200")
    assert r.stdout.endswith(b"Hello, World!")


def test_a_body_over_the_limit_is_refused_with_413_declared_or_not(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs), "--limit-body", "1000")
    body = pattern(5000)
    with client(srv, tls_certs) as c:
        declared = c.response(c.request("POST", "/echo", [("content-length", "5000")],
                                        body=body))
        undeclared = c.response(c.request("PUT", "/echo", body=body))
        small = c.response(c.request("PUT", "/echo", body=body[:900]))
    # Declared: refused with the head, before the app. Not declared: the read that passes the
    # limit fails, and the failed call is answered 413.
    assert declared.status == 413
    assert undeclared.status == 413
    assert (small.status, bytes(small.body)) == (200, body[:900])


def test_head_has_the_length_and_no_body(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs))
    with client(srv, tls_certs) as c:
        r = c.response(c.request("HEAD", "/"))
    assert r.status == 200 and r.ended
    assert r.header(b"content-length") == b"13"
    assert bytes(r.body) == b""


def test_a_stuck_stream_gets_504_and_the_others_go_on(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs), "--timeout", "1")
    with client(srv, tls_certs) as c:
        stuck = c.request("GET", "/gate?name=never")
        srv.wait_marks("entered", 1)
        fine = c.get("/")
        r = c.response(stuck)
        srv.open_gate("never")
    assert fine.status == 200
    assert r.status == 504


def test_worker_processes_each_bind_http3_on_the_same_port(start_server, tls_certs):
    """Each worker binds its own UDP socket on the listener's port (SO_REUSEPORT): none fails
    to start, and clients are served over HTTP/3."""
    srv = start_server("http3", *tls_options(tls_certs), "--workers", "2")
    for _ in range(4):
        with client(srv, tls_certs) as c:
            r = c.get("/environ")
        assert r.status == 200
        assert env_lines(bytes(r.body))["SERVER_PROTOCOL"] == "HTTP/3"
    log = srv.log_text()
    assert len(re.findall(r"Worker \d+ ready", log)) == 2
    assert "cannot bind" not in log and "failed to boot" not in log and "died" not in log


def test_hup_rotates_the_certificate_http3_serves(start_server, tls_certs, tmp_path):
    """A single process's certificate reload reaches the QUIC endpoints too: a client that
    trusts only the new CA connects over HTTP/3 after the HUP, one that trusts only the old CA
    before it."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    shutil.copy(tls_certs.server_chain, cert)
    shutil.copy(tls_certs.server_key, key)
    (tmp_path / "new").mkdir()
    new = make_certs(tmp_path / "new")
    srv = start_server("http3", "--certfile", str(cert), "--keyfile", str(key), "--http3")
    with H3Client(srv.port, str(tls_certs.ca_cert)) as c:
        assert c.get("/").status == 200
    shutil.copy(new.server_chain, cert)
    shutil.copy(new.server_key, key)
    mark = srv.log_mark()
    srv.signal(signal.SIGHUP)
    srv.wait_log(r"Received SIGHUP: certificate re-read", since=mark, timeout=30)
    with H3Client(srv.port, str(new.ca_cert)) as c:
        assert c.get("/").status == 200
    assert "not served over QUIC" not in srv.log_text()


def test_a_connection_opens_at_most_its_stream_credit_of_requests_at_once(start_server, tls_certs):
    """The QUIC stream credit is --http2-max-streams and a quarter more (at least one: the
    credit of a finished stream comes back only once the client acknowledged its end): with 4,
    5 streams; the client's sixth request stream waits (aioquic holds it as blocked by the
    server's limit) until one of the first five is answered, then it is served too."""
    srv = start_server("http3", *tls_options(tls_certs), "--http2-max-streams", "4")
    with client(srv, tls_certs) as c:
        assert c.proto._quic._remote_max_streams_bidi == 5
        sids = [c.request("GET", f"/gate?name=g{i}") for i in range(6)]
        srv.wait_marks("entered", 5)
        assert len(c.proto._quic._streams_blocked_bidi) == 1
        for i in range(5):
            srv.open_gate(f"g{i}")
        srv.wait_marks("entered", 6)
        srv.open_gate("g5")
        rs = [c.response(s) for s in sids]
    assert [(r.status, bytes(r.body)) for r in rs] == [(200, b"through the gate")] * 6
    assert sorted(srv.marks("entered")) == [f"g{i}" for i in range(6)]


def test_an_idle_connection_gets_goaway_then_is_closed(start_server, tls_certs):
    """Without a request for --keepalive-timeout the server sends GOAWAY, then closes the
    connection (H3_NO_ERROR), the client still holding it."""
    srv = start_server("http3", *tls_options(tls_certs), "--keepalive-timeout", "1")
    with client(srv, tls_certs) as c:
        assert c.get("/").status == 200
        wait_for(lambda: c.goaway, "the server's GOAWAY", 10)
        ended = wait_for(lambda: c.terminated, "the server's close", 10)
    assert ended.error_code == 0x100  # H3_NO_ERROR


def test_static_files_and_the_health_path_are_answered_without_the_app(start_server, tls_certs,
                                                                        tmp_path):
    data = pattern(3_000_001)
    (tmp_path / "big.bin").write_bytes(data)
    srv = start_server("http3", *tls_options(tls_certs), "--static", f"/s={tmp_path}",
                       "--health-path", "/healthz")
    with client(srv, tls_certs) as c:
        got = c.get("/s/big.bin")
        head = c.response(c.request("HEAD", "/s/big.bin"))
        health = c.get("/healthz")
        missing = c.get("/s/nothing-here")
        ranged = c.get("/s/big.bin", [("range", "bytes=100-199")])
    assert got.status == 200 and bytes(got.body) == data
    assert got.header(b"content-length") == b"3000001"
    assert head.status == 200 and bytes(head.body) == b""
    # The loop's answers, not the app's (which says Hello, World! to any other path).
    assert (health.status, bytes(health.body)) == (200, b"OK\n")
    assert missing.status == 404
    assert ranged.status == 206 and bytes(ranged.body) == data[100:200]


def test_fast_requests_run_inline_and_the_access_log_says_http3(start_server, tls_certs):
    """A whole request (no body) runs on the loop's thread while the scheduler is inline, as an
    HTTP/2 stream's does (io/h2/inline.rs, server/drive.rs): no hand-off to the pool."""
    srv = start_server("http3", *tls_options(tls_certs), "--access-log", "-",
                       "--access-log-format", "json")
    with client(srv, tls_certs) as c:
        sids = [(c.request("GET", f"/q?i={i}"), f"i={i}") for i in range(40)]
        rs = [(c.response(s), want) for s, want in sids]
    assert [(r.status, bytes(r.body).decode()) for r, _ in rs] == [(200, w) for _, w in sids]
    srv.stop()
    lines = [json.loads(line) for line in srv.stdout_text().splitlines()
             if line.startswith("{")]
    lines = [x for x in lines if x.get("protocol") == "HTTP/3"]
    assert len(lines) == 40
    assert sum(1 for x in lines if x["scheduler"] == "inline") >= 30, \
        [x["scheduler"] for x in lines]


def test_a_blocking_inline_request_holds_no_other_request(start_server, tls_certs):
    """The first request runs inline and blocks: the loop is taken over, and the connection's
    other requests, and another connection's, are answered meanwhile."""
    srv = start_server("http3", *tls_options(tls_certs))
    gate = uuid.uuid4().hex
    with client(srv, tls_certs, timeout=10) as a, client(srv, tls_certs, timeout=10) as b:
        stuck = a.request("GET", f"/gate?name={gate}")
        srv.wait_marks("entered", 1)
        same = a.get("/q?same")
        other = b.get("/q?other")
        srv.open_gate(gate)
        r = a.response(stuck)
    assert (same.status, bytes(same.body)) == (200, b"same")
    assert (other.status, bytes(other.body)) == (200, b"other")
    assert (r.status, bytes(r.body)) == (200, b"through the gate")


def test_http3_without_http2_runs_its_calls_on_the_pool(start_server, tls_certs):
    """With --http2 off there is no inline queue: every HTTP/3 call goes to the pool, and
    HTTP/1.1 answers still advertise HTTP/3."""
    srv = start_server("http3", *tls_options(tls_certs), "--http2", "off", "--access-log", "-",
                       "--access-log-format", "json")
    with client(srv, tls_certs) as c:
        r = c.get("/environ")
    assert r.status == 200
    assert env_lines(bytes(r.body))["SERVER_PROTOCOL"] == "HTTP/3"
    ctx = ssl.create_default_context(cafile=str(tls_certs.ca_cert))
    conn = http.client.HTTPSConnection(srv.host, srv.port, timeout=10, context=ctx)
    try:
        conn.request("GET", "/")
        h1 = conn.getresponse()
        h1.read()
    finally:
        conn.close()
    assert h1.getheader("alt-svc") == f'h3=":{srv.port}"; ma=86400'
    srv.stop()
    lines = [json.loads(line) for line in srv.stdout_text().splitlines()
             if line.startswith("{")]
    assert [x["scheduler"] for x in lines if x.get("protocol") == "HTTP/3"] == ["pool"]
