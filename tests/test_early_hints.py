"""`environ["wsgi.early_hints"]`: the app's hints reach an HTTP/1.1 client as a `103 Early
Hints` before the final answer (curl shows both), at once (while the app still works), and
several of them; an HTTP/1.0 client gets none; over HTTP/2 they are an informational HEADERS
frame before the final one; a call after start_response, or a value with CR LF, is an error the
app sees; `--early-hints false` sends none, which keeps answers whole behind an nginx older
than 1.29. The app is tests/apps/early_hints.py.
"""

import re
import shutil
import socket
import subprocess

import h2.events
import pytest

from tests import nginx_util
from tests.apps.early_hints import SCRIPT, STYLE
from tests.h2_client import H2Client
from tests.tls_certs import tls_certs  # noqa: F401  (the fixture)

CURL = shutil.which("curl")


def read_head(s: socket.socket, buf: bytes = b"") -> tuple:
    """One head (through its blank line) from `s`, and what came after it."""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        assert chunk, f"the connection ended in a head: {buf!r}"
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


def read_all(s: socket.socket, buf: bytes = b"") -> bytes:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return buf
        buf += chunk


@pytest.mark.skipif(CURL is None, reason="curl missing")
def test_curl_sees_the_103_then_the_200(servers):
    srv = servers.get("early_hints")
    r = subprocess.run([CURL, "-sv", "--http1.1", f"http://127.0.0.1:{srv.port}/page"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout == "page", r
    received = [line[2:] for line in r.stderr.splitlines() if line.startswith("< ")]
    # Two calls, two 103s, each with its own hint, both before the final head.
    assert received.count("HTTP/1.1 103 Early Hints") == 2, r.stderr
    first_103 = received.index("HTTP/1.1 103 Early Hints")
    final = received.index("HTTP/1.1 200 OK")
    assert first_103 < final, r.stderr
    assert received[first_103 + 1] == f"Link: {STYLE}", r.stderr
    assert f"Link: {SCRIPT}" in received[first_103 + 2:final], r.stderr


def test_the_103_leaves_while_the_app_still_works(servers):
    srv = servers.get("early_hints")
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    try:
        s.sendall(b"GET /wait?name=w1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        srv.wait_marks("hinted", prefix="w1")
        # The app waits for the gate: the 103 is on the wire already.
        head, rest = read_head(s)
        assert head == f"HTTP/1.1 103 Early Hints\r\nLink: {STYLE}".encode()
        assert rest == b""
        srv.open_gate("w1")
        final = read_all(s, rest)
    finally:
        s.close()
    assert final.startswith(b"HTTP/1.1 200 OK\r\n") and final.endswith(b"after the gate")


@pytest.mark.skipif(CURL is None, reason="curl missing")
def test_over_tls_curl_sees_the_103_then_the_200(start_server, tls_certs):  # noqa: F811
    srv = start_server("early_hints", "--certfile", str(tls_certs.server_chain),
                       "--keyfile", str(tls_certs.server_key))
    r = subprocess.run([CURL, "-sv", "--http1.1", "--cacert", str(tls_certs.ca_cert),
                        "--resolve", f"localhost:{srv.port}:127.0.0.1",
                        f"https://localhost:{srv.port}/page"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout == "page", r
    received = [line[2:] for line in r.stderr.splitlines() if line.startswith("< ")]
    assert received[:2] == ["HTTP/1.1 103 Early Hints", f"Link: {STYLE}"], r.stderr
    assert "HTTP/1.1 200 OK" in received, r.stderr


def test_an_http10_client_gets_no_103(servers):
    srv = servers.get("early_hints")
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    try:
        s.sendall(b"GET /page HTTP/1.0\r\nHost: x\r\n\r\n")
        raw = read_all(s)
    finally:
        s.close()
    assert raw.startswith(b"HTTP/1.1 200 OK\r\n") and raw.endswith(b"page"), raw
    assert b"103" not in raw


def test_a_hint_after_start_response_is_an_error_the_app_sees(servers):
    srv = servers.get("early_hints")
    assert srv.request("GET", "/after").body == b"refused: RuntimeError"


def test_a_hint_with_cr_lf_is_refused_and_nothing_of_it_is_sent(servers):
    srv = servers.get("early_hints")
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    try:
        s.sendall(b"GET /bad HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        raw = read_all(s)
    finally:
        s.close()
    assert raw.startswith(b"HTTP/1.1 200 OK\r\n"), raw
    assert raw.endswith(b"refused: ValueError") and b"evil" not in raw and b"103" not in raw


def test_http2_gets_informational_headers_before_the_final_ones(servers):
    srv = servers.get("early_hints")
    c = H2Client(srv.port, timeout=20)
    try:
        sid = c.request("GET", "/page")
        r = c.responses([sid])[0]
        events = [e for e in c.events if getattr(e, "stream_id", None) == sid]
    finally:
        c.close()
    assert r.status == 200 and bytes(r.body) == b"page"
    kinds = [type(e) for e in events]
    informational = [e for e in events if isinstance(e, h2.events.InformationalResponseReceived)]
    assert len(informational) == 2, kinds
    assert kinds.index(h2.events.InformationalResponseReceived) \
        < kinds.index(h2.events.ResponseReceived), kinds
    links = [dict(e.headers) for e in informational]
    assert [h[b":status"] for h in links] == [b"103", b"103"]
    assert [h[b"link"] for h in links] == [STYLE.encode(), SCRIPT.encode()]


def test_over_http2_the_103_leaves_while_the_app_still_works(servers):
    srv = servers.get("early_hints")
    c = H2Client(srv.port, timeout=20)
    try:
        sid = c.request("GET", "/wait?name=h2w")
        srv.wait_marks("hinted", prefix="h2w")

        def informational():
            return [e for e in c.events
                    if isinstance(e, h2.events.InformationalResponseReceived)]

        # The app waits for the gate; the informational HEADERS frame arrives meanwhile.
        while not informational() and not c.responses_by_id[sid].ended:
            assert c.receive_once(), "the connection ended"
        assert not c.responses_by_id[sid].ended, "the final answer came first"
        assert dict(informational()[0].headers)[b"link"] == STYLE.encode()
        srv.open_gate("h2w")
        r = c.responses([sid])[0]
    finally:
        c.close()
    assert r.status == 200 and bytes(r.body) == b"after the gate"


def nginx_version() -> tuple:
    out = subprocess.run([nginx_util.NGINX, "-v"], capture_output=True, text=True).stderr
    m = re.search(r"nginx/(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def test_with_early_hints_false_the_app_call_sends_nothing(start_server):
    srv = start_server("early_hints", "--early-hints", "false")
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    try:
        s.sendall(b"GET /page HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        raw = read_all(s)
    finally:
        s.close()
    assert raw.startswith(b"HTTP/1.1 200 OK\r\n") and raw.endswith(b"page"), raw
    assert b"103" not in raw


@pytest.mark.skipif(not nginx_util.available(), reason="nginx or openssl missing")
def test_behind_nginx_before_129_with_early_hints_false_answers_stay_whole(start_server):
    """nginx before 1.29 (Debian 12 has 1.22) takes an upstream's 103 for the final answer
    when it speaks HTTP/1.1 to the server (as docs/deploying.md configures it): it sends the
    103 as its answer and the rest unframed, and the connection hangs. With `--early-hints
    false` the app's calls send nothing, and two answers on one kept-alive client connection
    arrive whole. (nginx 1.29+ passes 103s with its `early_hints` directive.)"""
    if nginx_version() >= (1, 29):
        pytest.skip("nginx 1.29+ handles 103s; this is the older nginx's workaround")
    srv = start_server("early_hints", "--early-hints", "false")
    proxy = nginx_util.Nginx({"app": ("http", f"127.0.0.1:{srv.port}")}, tls=False)
    s = socket.create_connection(("127.0.0.1", proxy.ports["app"]), timeout=30)
    try:
        answers = []
        for _ in range(2):
            s.sendall(b"GET /page HTTP/1.1\r\nHost: x\r\n\r\n")
            head, rest = read_head(s)
            length = int(re.search(rb"\r\nContent-Length: (\d+)", head).group(1))
            while len(rest) < length:
                rest += s.recv(65536)
            answers.append((head.split(b"\r\n")[0], rest))
    finally:
        s.close()
        proxy.stop()
    assert answers == [(b"HTTP/1.1 200 OK", b"page")] * 2


def test_a_timeout_during_a_half_sent_103_never_writes_the_504_into_it(start_server):
    """The 103 of a client that does not read is half sent when `--timeout` passes: the watcher
    wrote its 504 into the free room of the socket, in the middle of the 103's header block
    (the client read `HTTP/1.1 504` as part of a Link value). Now the connection is closed
    after the 103's partial bytes; a 504, if any, only ever follows a whole 103."""
    srv = start_server("early_hints", "--timeout", "2", "--limit-response-headers", "16777216")
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(20)
    s.connect((srv.host, srv.port))
    try:
        s.sendall(b"GET /big-hints?name=g HTTP/1.1\r\nHost: t\r\n\r\n")
        # Take a little of the 103: room in the socket, not enough to wake its writer.
        got = s.recv(2048)
        assert got.startswith(b"HTTP/1.1 103"), got[:300]
        while len(got) < 2048:
            got += s.recv(2048 - len(got))
        srv.wait_log("still in the app after", timeout=20)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    finally:
        s.close()
        srv.open_gate("g")
    at = got.find(b"HTTP/1.1 504")
    if at >= 0:
        end_of_103 = got.find(b"\r\n\r\n")
        assert 0 <= end_of_103 < at, f"the 504 began inside the 103, at byte {at}"
