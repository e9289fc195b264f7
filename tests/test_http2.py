"""HTTP/2 end to end, over real sockets: h2c with prior knowledge and ALPN `h2` over TLS, with
curl and with the `h2` library as a raw client (tests/h2_client.py). Each stream is one app
call, inline on the HTTP/2 thread or on the same pool as HTTP/1.1 (the inline path has its own
tests in tests/test_http2_inline.py); these tests check what a client sees (environ, bodies
both ways, HEAD, errors on one stream only, concurrency) and the limits (streams, header list,
rapid reset, CONTINUATION flood, a window that never opens, GOAWAY at a graceful stop).
Overlap is shown by counting the calls inside the app, never by timing.
"""

from __future__ import annotations

import collections
import hashlib
import shutil
import signal
import socket
import ssl
import subprocess
import time
import uuid

import h2.errors
import h2.events
import h2.settings
import hpack
import hyperframe.frame as frames
import pytest

from tests.h2_client import H2Client, Response
from tests.tls_certs import TlsCerts, tls_certs  # noqa: F401  (the fixture)

CURL = shutil.which("curl")


def curl_has_http2() -> bool:
    if not CURL:
        return False
    out = subprocess.run([CURL, "-V"], capture_output=True, text=True).stdout
    return "HTTP2" in out


needs_curl_h2 = pytest.mark.skipif(not curl_has_http2(), reason="curl without HTTP/2")


def env_lines(body: bytes) -> dict:
    return dict(line.split("=", 1) for line in body.decode("latin-1").splitlines())


@needs_curl_h2
def test_curl_with_prior_knowledge_gets_http2(servers):
    srv = servers.get("http2")
    r = subprocess.run([CURL, "-s", "-i", "--http2-prior-knowledge",
                        f"http://127.0.0.1:{srv.port}/"], capture_output=True, timeout=20)
    assert r.returncode == 0, r.stderr
    head, _, body = r.stdout.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/2 200")
    assert b"content-length: 13" in head.lower()
    assert body == b"Hello, World!"


def test_http11_on_the_same_listener_is_unchanged(servers):
    srv = servers.get("http2")
    r = srv.request("GET", "/")
    assert (r.status, r.version, r.body) == (200, 11, b"Hello, World!")


def test_environ_over_h2c(servers):
    srv = servers.get("http2")
    c = H2Client(srv.port)
    try:
        r = c.get("/environ?x=1", authority=f"example.org:{srv.port}",
                  headers=[("cookie", "a=1"), ("cookie", "b=2"), ("x-thing", "yes")])
    finally:
        c.close()
    assert r.status == 200
    env = env_lines(bytes(r.body))
    assert env["SERVER_PROTOCOL"] == "HTTP/2"
    assert env["HTTP_HOST"] == f"example.org:{srv.port}"
    assert env["HTTP_COOKIE"] == "a=1; b=2"
    assert env["HTTP_X_THING"] == "yes"
    assert env["QUERY_STRING"] == "x=1"
    assert env["REQUEST_METHOD"] == "GET"
    assert env["wsgi.input_terminated"] == "True"
    assert env["wsgi.url_scheme"] == "http"


def test_scheme_from_a_trusted_h2c_peer(servers):
    # 127.0.0.1 is in the default --forwarded-allow-ips: its :scheme is believed, as its
    # X-Forwarded-Proto would be.
    srv = servers.get("http2")
    c = H2Client(srv.port)
    try:
        r = c.get("/environ", scheme="https")
    finally:
        c.close()
    env = env_lines(bytes(r.body))
    assert env["wsgi.url_scheme"] == "https"
    assert env["HTTPS"] == "on"


def test_scheme_from_an_untrusted_h2c_peer_is_ignored(servers):
    srv = servers.get("http2", "--forwarded-allow-ips", "192.0.2.1")
    c = H2Client(srv.port)
    try:
        r = c.get("/environ", scheme="https")
    finally:
        c.close()
    env = env_lines(bytes(r.body))
    assert env["wsgi.url_scheme"] == "http"
    assert "HTTPS" not in env


def test_post_large_upload_and_download(servers):
    srv = servers.get("http2")
    body = hashlib.sha256(b"seed").digest() * (8 * 1024 * 1024 // 32)  # 8 MiB
    c = H2Client(srv.port, timeout=30)
    try:
        up = c.responses([c.request("POST", "/echo", body=body,
                                    headers=[("content-type", "application/octet-stream")])])[0]
        down = c.get("/big?n=20000000")
    finally:
        c.close()
    assert up.status == 200
    assert up.header(b"x-length") == str(len(body)).encode()
    assert up.header(b"x-sha256") == hashlib.sha256(body).hexdigest().encode()
    assert bytes(up.body) == body
    assert down.status == 200 and len(down.body) == 20_000_000
    assert down.header(b"content-length") is None  # streamed: DATA frames, never chunked


def _post_expecting_continue(c: H2Client, path: str) -> int:
    """Open a POST of 11 body bytes with `expect: 100-continue`, its body not sent."""
    sid = c.conn.get_next_available_stream_id()
    c.conn.send_headers(sid, [(":method", "POST"), (":path", path), (":scheme", "http"),
                              (":authority", "127.0.0.1"), ("expect", "100-continue"),
                              ("content-length", "11")])
    c.responses_by_id[sid] = Response()
    c.flush()
    return sid


def _informational(c: H2Client, sid: int) -> list:
    return [ev for ev in c.events if isinstance(ev, h2.events.InformationalResponseReceived)
            and ev.stream_id == sid]


def test_expect_100_continue_gets_an_interim_100_when_the_app_reads(servers):
    """A client that asks `expect: 100-continue` waits for the interim 100 before it sends the
    body (as on HTTP/1.1: sent at the app's first read). Without it this client would wait for
    ever: the test would time out."""
    srv = servers.get("http2")
    c = H2Client(srv.port)
    try:
        sid = _post_expecting_continue(c, "/echo")
        deadline = time.monotonic() + c.timeout
        while not _informational(c, sid):
            assert time.monotonic() < deadline, "no interim 100 came"
            assert c.receive_once()
        (interim,) = _informational(c, sid)
        assert dict(interim.headers)[b":status"] == b"100"
        c.send_body(sid, b"hello world")
        (r,) = c.responses([sid])
    finally:
        c.close()
    assert r.status == 200 and bytes(r.body) == b"hello world"


def test_no_interim_100_for_an_app_that_does_not_read_the_body(servers):
    srv = servers.get("http2")
    c = H2Client(srv.port)
    try:
        sid = _post_expecting_continue(c, "/q?unread")
        (r,) = c.responses([sid])
    finally:
        c.close()
    assert r.status == 200 and bytes(r.body) == b"unread"
    assert _informational(c, sid) == []


def test_upload_without_content_length(servers):
    srv = servers.get("http2")
    c = H2Client(srv.port)
    try:
        r = c.responses([c.request("POST", "/echo", body=b"abc" * 1000)])[0]
    finally:
        c.close()
    assert r.header(b"x-length") == b"3000"


def test_streams_of_one_connection_run_at_once(servers):
    srv = servers.get("http2")
    n, token = 20, uuid.uuid4().hex
    c = H2Client(srv.port, timeout=30)
    try:
        sids = [c.request("GET", f"/together?n={n}&token={token}") for _ in range(n)]
        rs = c.responses(sids)
    finally:
        c.close()
    # Each call waited until all 20 were inside the app together.
    assert [r.status for r in rs] == [200] * n
    assert [int(r.body) for r in rs] == [n] * n


def test_head_has_the_length_and_no_body(servers):
    srv = servers.get("http2")
    c = H2Client(srv.port)
    try:
        r = c.responses([c.request("HEAD", "/")])[0]
    finally:
        c.close()
    assert r.status == 200
    assert r.header(b"content-length") == b"13"
    assert r.ended_on_headers and bytes(r.body) == b""


def test_app_error_is_a_500_on_its_stream_only(servers):
    srv = servers.get("http2")
    c = H2Client(srv.port)
    try:
        boom, ok = c.responses([c.request("GET", "/boom"), c.request("GET", "/")])
        again = c.get("/")
    finally:
        c.close()
    assert boom.status == 500
    assert (ok.status, bytes(ok.body)) == (200, b"Hello, World!")
    assert again.status == 200 and c.goaway() is None


def test_connection_specific_headers_are_dropped(servers):
    srv = servers.get("http2")
    c = H2Client(srv.port)
    try:
        r = c.get("/hop")  # the h2 library refuses a response that carries them
    finally:
        c.close()
    names = {n for n, _ in r.headers}
    assert r.status == 200 and bytes(r.body) == b"no hop-by-hop"
    assert not names & {b"connection", b"keep-alive", b"transfer-encoding", b"upgrade"}


def test_header_values_lose_their_surrounding_spaces(servers):
    """Regression: Django's Set-Cookie value starts with a space (fine in HTTP/1.1); sent as is
    over HTTP/2 it made the `h2` library refuse the whole response (RFC 9113 §8.2.1)."""
    srv = servers.get("http2")
    c = H2Client(srv.port)
    try:
        r = c.get("/spaced")
    finally:
        c.close()
    assert r.status == 200 and bytes(r.body) == b"spaced"
    assert r.header(b"set-cookie") == b"a=1; Path=/"
    assert r.header(b"x-padded") == b"v w"


def test_access_log_says_http2(start_server):
    srv = start_server("http2", "--access-log", "-", "--access-log-format", "json")
    c = H2Client(srv.port)
    try:
        assert c.get("/").status == 200
    finally:
        c.close()
    srv.stop()
    assert '"protocol":"HTTP/2"' in srv.stdout_text()


def test_http2_off_leaves_the_preface_to_http11(start_server):
    srv = start_server("http2", "--http2", "off")
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    answer = s.recv(4096)
    s.close()
    assert answer.startswith(b"HTTP/1.1 505")


# --- TLS: ALPN h2 -------------------------------------------------------------------------

def tls_options(c: TlsCerts):
    return ["--certfile", str(c.server_chain), "--keyfile", str(c.server_key)]


def test_alpn_h2_with_the_h2_library_and_http11_beside(start_server, tls_certs):
    srv = start_server("http2", *tls_options(tls_certs))
    ctx = ssl.create_default_context(cafile=str(tls_certs.ca_cert))
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    c = H2Client(srv.port, tls=ctx)
    try:
        assert c.sock.selected_alpn_protocol() == "h2"
        r = c.get("/environ", scheme="https")
    finally:
        c.close()
    env = env_lines(bytes(r.body))
    assert env["SERVER_PROTOCOL"] == "HTTP/2" and env["wsgi.url_scheme"] == "https"
    assert env["HTTPS"] == "on" and env["SSL_PROTOCOL"].startswith("TLSv1.")
    # A client that offers only http/1.1 still gets it.
    ctx11 = ssl.create_default_context(cafile=str(tls_certs.ca_cert))
    ctx11.set_alpn_protocols(["http/1.1"])
    s = ctx11.wrap_socket(socket.create_connection(("127.0.0.1", srv.port)),
                          server_hostname="127.0.0.1")
    assert s.selected_alpn_protocol() == "http/1.1"
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert s.recv(4096).startswith(b"HTTP/1.1 200")
    s.close()


@needs_curl_h2
def test_curl_http2_over_tls(start_server, tls_certs):
    srv = start_server("http2", *tls_options(tls_certs))
    r = subprocess.run([CURL, "-s", "--http2", "--cacert", str(tls_certs.ca_cert),
                        "-w", "\n%{http_version}", f"https://127.0.0.1:{srv.port}/"],
                       capture_output=True, timeout=20)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"Hello, World!\n2"


# --- limits ----------------------------------------------------------------------------------

def test_max_concurrent_streams_is_announced_and_enforced(start_server):
    srv = start_server("http2", "--http2-max-streams", "3")
    c = H2Client(srv.port)
    try:
        c.receive_once()
        assert c.conn.remote_settings.max_concurrent_streams == 3
        gates = [f"g{i}" for i in range(3)]
        sids = [c.request("GET", f"/gate?name={g}") for g in gates]
        srv.wait_marks("entered", 3)
        # Past the limit the client library would refuse: pretend the server allowed more.
        c.conn.remote_settings._settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] = \
            collections.deque([100])
        extra = c.request("GET", "/")
        refused = c.responses([extra])[0]
        assert refused.reset == h2.errors.ErrorCodes.REFUSED_STREAM
        for g in gates:
            srv.open_gate(g)
        assert [r.status for r in c.responses(sids)] == [200] * 3
        assert len(srv.marks("entered")) == 3
    finally:
        c.close()


def test_oversized_header_list_is_431(start_server):
    srv = start_server("http2", "--limit-header-bytes", "8192")
    c = H2Client(srv.port)
    try:
        r = c.get("/", headers=[("x-big", "a" * 20000)])
        assert r.status == 431
        assert c.get("/").status == 200  # the connection lives on
    finally:
        c.close()


def test_rapid_reset_flood_ends_in_goaway(start_server):
    srv = start_server("http2")
    c = H2Client(srv.port)
    try:
        c.receive_once()
        for i in range(2000):
            sid = c.conn.get_next_available_stream_id()
            c.conn.send_headers(sid, [(":method", "GET"), (":path", "/"), (":scheme", "http"),
                                      (":authority", "x")], end_stream=True)
            c.conn.reset_stream(sid)
            if i % 50 == 49:
                try:
                    c.flush()
                except OSError:
                    break
        c.read_until_closed()
    finally:
        c.close()
    ended = c.goaway()
    assert ended is not None and ended.error_code == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM
    assert srv.alive()
    fresh = H2Client(srv.port)
    try:
        assert fresh.get("/").status == 200
    finally:
        fresh.close()


def test_continuation_flood_is_cut(start_server):
    srv = start_server("http2", "--limit-header-bytes", "16384")
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frames.SettingsFrame(0).serialize())
    enc = hpack.Encoder()
    h = frames.HeadersFrame(1)
    h.data = enc.encode([(":method", "GET"), (":path", "/"), (":scheme", "http"),
                         (":authority", "x")])
    s.sendall(h.serialize())
    sent, cut = 0, False
    while sent < 64 * 1024 * 1024:  # never END_HEADERS: the server must stop it long before
        cf = frames.ContinuationFrame(1)
        cf.data = enc.encode([(f"x-junk-{sent}", "v" * 1000)])
        try:
            s.sendall(cf.serialize())
        except OSError:
            cut = True
            break
        sent += len(cf.data)
    if not cut:
        s.settimeout(5)
        cut = s.recv(65536) != b"" or True
    s.close()
    assert cut and sent < 64 * 1024 * 1024
    assert srv.alive()


def test_a_window_that_never_opens_is_cut_at_the_write_timeout(start_server):
    srv = start_server("http2", "--write-timeout", "1")
    c = H2Client(srv.port, timeout=20)
    try:
        c.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        c.flush()
        stuck = c.request("GET", "/big?n=100000")
        # Never acknowledge: no WINDOW_UPDATE for the stream, so nothing can be sent.
        deadline = time.monotonic() + 15
        while c.responses_by_id[stuck].reset is None and time.monotonic() < deadline:
            if not c.receive_once():
                break
        r = c.responses_by_id[stuck]
    finally:
        c.close()
    assert r.reset == h2.errors.ErrorCodes.CANCEL
    assert srv.alive()


def test_graceful_stop_sends_goaway_and_finishes_inflight_streams(start_server):
    srv = start_server("http2")
    c = H2Client(srv.port, timeout=20)
    try:
        sid = c.request("GET", "/gate?name=stop")
        srv.wait_marks("entered", 1)
        srv.signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while c.goaway() is None and time.monotonic() < deadline:
            c.receive_once()
        assert c.goaway() is not None
        srv.open_gate("stop")
        r = c.responses([sid])[0]
        assert (r.status, bytes(r.body)) == (200, b"through the gate")
    finally:
        c.close()
    assert srv.wait_exit() == 0


def test_static_files_and_health_path_over_http2(start_server, tmp_path):
    data = bytes(i % 251 for i in range(3_000_000))
    (tmp_path / "big.bin").write_bytes(data)
    srv = start_server("http2", "--static", f"/s={tmp_path}", "--health-path", "/healthz")
    c = H2Client(srv.port, timeout=30)
    try:
        got, head, health, missing = c.responses([
            c.request("GET", "/s/big.bin"), c.request("HEAD", "/s/big.bin"),
            c.request("GET", "/healthz"), c.request("GET", "/s/nothing-here")])
        ranged = c.get("/s/big.bin", headers=[("range", "bytes=100-199")])
    finally:
        c.close()
    assert got.status == 200 and bytes(got.body) == data
    assert got.header(b"content-length") == b"3000000"
    assert head.status == 200 and head.ended_on_headers and not head.body
    assert health.status == 200
    assert missing.status == 404
    assert ranged.status == 206 and bytes(ranged.body) == data[100:200]


def test_own_answers_over_http2_carry_the_fields_http1_gives_them(start_server, tmp_path):
    """The loop's own answers (a kept small file, a 304, a 404 with its text, a redirect, the
    health path) say the same over HTTP/2 as over HTTP/1.1: the same status, fields and body,
    less HTTP/1.1's connection fields, and no Content-Length where HTTP/1.1 sends none."""
    (tmp_path / "small.txt").write_bytes(b"hello, static\n")
    (tmp_path / "docs").mkdir()
    srv = start_server("http2", "--static", f"/s={tmp_path}", "--health-path", "/healthz")
    small = http1_get(srv.port, "/s/small.txt")
    etag = small[1]["etag"]
    cases = [("/s/small.txt", ()), ("/s/small.txt", (("if-none-match", etag),)),
             ("/s/nothing-here", ()), ("/s/docs?x=1", ()), ("/healthz", ())]
    c = H2Client(srv.port, timeout=30)
    try:
        for path, headers in cases:
            status, fields, body = http1_get(srv.port, path, headers)
            got = c.get(path, headers=list(headers))
            h2_fields = {n.decode(): v.decode() for n, v in got.headers if not n.startswith(b":")}
            for name in ("connection", "keep-alive", "date"):
                fields.pop(name, None)
                h2_fields.pop(name, None)
            assert (got.status, h2_fields, bytes(got.body)) == (status, fields, body), path
    finally:
        c.close()
    assert [s for s, _, _ in map(lambda p: http1_get(srv.port, p[0], p[1]), cases)] == [
        200, 304, 404, 301, 200]


def http1_get(port, path, headers=()):
    """An HTTP/1.1 GET: its status, fields (lower-case names) and body."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=dict(headers))
        r = conn.getresponse()
        return r.status, {n.lower(): v for n, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def test_an_unread_body_is_dropped_and_the_connection_goes_on(servers):
    srv = servers.get("http2")
    c = H2Client(srv.port)
    try:
        unread = c.responses([c.request("POST", "/", body=b"u" * 500_000)])[0]
        after = c.get("/")
    finally:
        c.close()
    assert unread.status == 200 and bytes(unread.body) == b"Hello, World!"
    assert after.status == 200 and c.goaway() is None


def rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@pytest.mark.parametrize("flood", ["ping", "settings"])
def test_ping_and_settings_floods_from_a_client_that_never_reads(start_server, flood):
    srv = start_server("http2")
    before = rss_kib(srv.pid)
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and never read: answers pile up
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frames.SettingsFrame(0).serialize())
    if flood == "ping":
        one = frames.PingFrame(0, opaque_data=b"12345678").serialize()
    else:
        one = frames.SettingsFrame(0, settings={frames.SettingsFrame.INITIAL_WINDOW_SIZE: 65535})
        one = one.serialize()
    batch = one * 1000
    sent = 0
    try:
        while sent < 32 * 1024 * 1024:
            s.sendall(batch)  # the server stops reading (a timeout) or closes: both bound it
            sent += len(batch)
    except OSError:
        pass
    grown = rss_kib(srv.pid) - before
    s.close()
    assert srv.alive()
    assert grown < 64 * 1024, f"the server grew by {grown} KiB after {sent} bytes of {flood}"
    c = H2Client(srv.port)
    try:
        assert c.get("/").status == 200
    finally:
        c.close()


# --- behind a proxy that speaks HTTP/2 to its backends -----------------------------------------

def test_behind_haproxy_with_proto_h2(start_server):
    from concurrent.futures import ThreadPoolExecutor

    from tests import haproxy_util
    from tests.http_util import Conn, request_bytes
    if not haproxy_util.available():
        pytest.skip("haproxy not installed")
    srv = start_server("http2")
    proxy = haproxy_util.HAProxy(srv.port, "/", server_options="proto h2")

    def get(path):
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=20)
        with Conn(s) as c:
            c.send(request_bytes("GET", path))
            return c.read_response()

    try:
        env = env_lines(get("/environ").body)
        assert env["SERVER_PROTOCOL"] == "HTTP/2"  # HAProxy to us: h2c with prior knowledge
        n, token = 8, uuid.uuid4().hex
        with ThreadPoolExecutor(n) as pool:
            answers = list(pool.map(lambda _: get(f"/together?n={n}&token={token}"), range(n)))
        assert [(a.status, int(a.body)) for a in answers] == [(200, n)] * n
    finally:
        proxy.stop()


def test_a_stuck_stream_gets_504_and_the_others_go_on(start_server):
    srv = start_server("http2", "--timeout", "1")
    c = H2Client(srv.port, timeout=20)
    try:
        stuck = c.request("GET", "/gate?name=never")
        srv.wait_marks("entered", 1)
        fine = c.get("/")
        answered = c.responses([stuck])[0]
        after = c.get("/")
        srv.open_gate("never")  # let the stuck call end
    finally:
        c.close()
    assert fine.status == 200
    assert answered.status == 504
    assert after.status == 200 and c.goaway() is None
    srv.wait_log(r"GET /gate\?name=never HTTP/2")


def test_server_sent_events_are_never_held_back(servers):
    srv = servers.get("http2")
    gate = uuid.uuid4().hex
    c = H2Client(srv.port)
    try:
        sid = c.request("GET", f"/events?name={gate}")
        r = c.responses_by_id[sid]
        deadline = time.monotonic() + 10
        while b"data: one" not in r.body and time.monotonic() < deadline:
            c.receive_once()
        # The first event arrived while the app waits for the gate: not held back.
        assert bytes(r.body) == b"data: one\n\n" and not r.ended
        assert r.header(b"content-type") == b"text/event-stream"
        srv.open_gate(gate)
        assert bytes(c.responses([sid])[0].body) == b"data: one\n\ndata: two\n\n"
    finally:
        c.close()


@needs_curl_h2
def test_flask_form_and_upload_over_h2c(servers, tmp_path):
    srv = servers.get("flask_app")
    base = f"http://127.0.0.1:{srv.port}"
    r = subprocess.run([CURL, "-s", "--http2-prior-knowledge", "-d", "name=ada&lang=py",
                        f"{base}/form"], capture_output=True, timeout=20)
    assert r.returncode == 0 and b'"name":"ada"' in r.stdout.replace(b" ", b"")
    f = tmp_path / "up.bin"
    f.write_bytes(b"z" * 3_000_000)
    r = subprocess.run([CURL, "-s", "--http2-prior-knowledge", "-F", f"file=@{f}",
                        "-F", "note=hi", f"{base}/upload"], capture_output=True, timeout=60)
    assert r.returncode == 0
    assert hashlib.sha256(b"z" * 3_000_000).hexdigest().encode() in r.stdout


def test_h2c_with_worker_processes(start_server):
    srv = start_server("http2", "--workers", "2")
    clients = [H2Client(srv.port) for _ in range(4)]
    try:
        for c in clients:
            assert c.get("/").status == 200
    finally:
        for c in clients:
            c.close()


def test_http2_tls_mode_leaves_plain_listeners_to_http11(start_server):
    srv = start_server("http2", "--http2", "tls")
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    answer = s.recv(4096)
    s.close()
    assert answer.startswith(b"HTTP/1.1 505")


def test_a_reload_with_hup_sends_goaway_and_finishes_inflight_streams(start_server):
    srv = start_server("http2", "--workers", "1")
    c = H2Client(srv.port, timeout=30)
    try:
        sid = c.request("GET", "/gate?name=reload")
        srv.wait_marks("entered", 1)
        srv.signal(signal.SIGHUP)
        srv.wait_log(r"Reload done", timeout=30)  # the new worker serves; the old one drains
        deadline = time.monotonic() + 10
        while c.goaway() is None and time.monotonic() < deadline:
            c.receive_once()
        assert c.goaway() is not None
        srv.open_gate("reload")
        r = c.responses([sid])[0]
        assert (r.status, bytes(r.body)) == (200, b"through the gate")
    finally:
        c.close()
    fresh = H2Client(srv.port)
    try:
        assert fresh.get("/").status == 200
    finally:
        fresh.close()
    assert srv.alive()


@pytest.mark.skipif(not shutil.which("h2load"), reason="h2load missing (nghttp2-client)")
def test_h2load_and_nghttp_as_clients(servers):
    srv = servers.get("http2")
    url = f"http://127.0.0.1:{srv.port}/"
    r = subprocess.run(["h2load", "-c4", "-m20", "-n", "2000", url], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2000 succeeded, 0 failed, 0 errored" in r.stdout, r.stdout
    if shutil.which("nghttp"):
        r = subprocess.run(["nghttp", "-v", url], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and "Hello, World!" in r.stdout
        assert ":status: 200" in r.stdout
