"""A request body that stalls past `--read-timeout`, the same over HTTP/1.1 and HTTP/2: the
app's `wsgi.input` read raises `TimeoutError` (not `ClientDisconnected`: the client is still
there), and the client gets 408 if no response head was sent yet, or, over HTTP/2, a
RST_STREAM if one was. The connection's other streams go on.
"""

from __future__ import annotations

import h2.errors

from tests.h2_client import H2Client, Response
from tests.http_util import Conn

STALLED_LENGTH = 100_000  # declared; the client sends the first SENT bytes and then nothing
SENT = 1000


def stalled_stream(c: H2Client, path: str, token: str) -> int:
    """Open a POST stream, send part of its body, and leave it open."""
    sid = c.conn.get_next_available_stream_id()
    c.conn.send_headers(sid, [(":method", "POST"), (":path", path), (":scheme", "http"),
                              (":authority", "127.0.0.1"), ("x-token", token),
                              ("content-length", str(STALLED_LENGTH))])
    c.conn.send_data(sid, b"x" * SENT)
    c.flush()
    c.responses_by_id[sid] = Response()
    return sid


def test_a_stalled_body_is_408_and_timeout_error_over_http11_and_http2(start_server):
    srv = start_server("body_reader", "--read-timeout", "1")
    # HTTP/1.1: the behaviour HTTP/2 follows.
    with Conn.open(srv.port) as c11:
        c11.send(f"POST /read HTTP/1.1\r\nHost: x\r\nX-Token: stall-h1\r\n"
                 f"Content-Length: {STALLED_LENGTH}\r\n\r\n".encode() + b"x" * SENT)
        assert c11.read_response().status == 408
    srv.wait_log(r"body_reader token=stall-h1 outcome=error type=TimeoutError")

    c = H2Client(srv.port, timeout=20)
    try:
        sid = stalled_stream(c, "/read", "stall-h2")
        stalled = c.responses([sid])[0]
        after = c.responses([c.request("POST", "/read", body=b"fine" * 10,
                                       headers=[("x-token", "after")])])[0]
    finally:
        c.close()
    assert stalled.status == 408
    assert stalled.reset in (None, h2.errors.ErrorCodes.NO_ERROR)  # a complete answer
    srv.wait_log(r"body_reader token=stall-h2 outcome=error type=TimeoutError")
    assert after.status == 200 and b'"len": 40' in bytes(after.body)
    assert c.goaway() is None
    assert "ClientDisconnected" not in srv.log_text()


def test_a_body_stalled_after_the_head_resets_the_stream(start_server):
    srv = start_server("http2", "--read-timeout", "1")
    c = H2Client(srv.port, timeout=20)
    try:
        sid = stalled_stream(c, "/read-after-head", "-")
        r = c.responses([sid])[0]
        fine = c.get("/")
    finally:
        c.close()
    assert r.status == 200 and bytes(r.body) == b"head sent\n"
    assert r.reset == h2.errors.ErrorCodes.INTERNAL_ERROR
    assert srv.wait_marks("read-error", 1) == ["TimeoutError"]
    assert fine.status == 200 and c.goaway() is None
