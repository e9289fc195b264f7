"""HTTP/2 under attack and on a bad day, over real sockets with the `h2` library as a raw client
(tests/h2_client.py): each test names what a hostile or unlucky client does and asserts what
would break if the defence went. Run the group alone with ``./dev test -k h2_attack`` (the
fault-suite rows for a stop that cuts streams and for a zero window are in
tests/faults/test_h2_attack_faults.py).

- streams that outlive ``--graceful-timeout`` are reset (RST_STREAM) after the GOAWAY, counted
  in the log, and the process exits without aborting;
- ``--limit-body`` holds for a body without a content-length: 413, the app never reads past it;
- the one Host check: ``:authority``, ``host`` and HTTP/1.1's Host refuse userinfo and spaces;
  a ``host`` that differs from ``:authority`` is malformed; CONNECT is refused; ``cookie``
  fields count toward ``--limit-headers``;
- a malformed field on one stream resets that stream only;
- a client that never opens its window holds no thread per stream.
"""

from __future__ import annotations

import signal
import socket
import uuid

import h2.errors
import pytest

from tests.h2_client import H2Client, Response
from tests.http_util import Conn

APP = "h2_attack"
CUT_CODES = (h2.errors.ErrorCodes.CANCEL, h2.errors.ErrorCodes.INTERNAL_ERROR)


def raw_client(port: int, **kw) -> H2Client:
    """A client whose library sends what it is given: no lower-casing, no checks."""
    c = H2Client(port, **kw)
    c.conn.config.validate_outbound_headers = False
    c.conn.config.normalize_outbound_headers = False
    c.conn.config.validate_inbound_headers = False
    return c


def send(c: H2Client, headers, end: bool = True) -> int:
    sid = c.conn.get_next_available_stream_id()
    c.conn.send_headers(sid, headers, end_stream=end)
    c.responses_by_id[sid] = Response()
    c.flush()
    return sid


def refused(r: Response) -> bool:
    """Answered 400 on its stream, or reset as malformed (a stream error, RFC 9113 §8.1.1)."""
    if r.headers:
        return r.status == 400
    return r.reset == h2.errors.ErrorCodes.PROTOCOL_ERROR


# --- a stop whose graceful time runs out ---------------------------------------------------------

@pytest.mark.parametrize("workers", [None, "1"], ids=["single-process", "workers"])
def test_h2_streams_past_the_graceful_timeout_are_reset_and_counted(start_server, workers):
    """Streams whose calls outlive --graceful-timeout used to get neither END_STREAM nor
    RST_STREAM (the client could not tell a cut answer from a whole one), and a single process
    aborted at exit (`Fatal Python error: Aborted`). Now each is reset after the GOAWAY, the
    stop's log line counts them, and the process exits as an HTTP/1.1 cut does."""
    opts = ["--graceful-timeout", "1"] + (["--workers", workers] if workers else [])
    srv = start_server(APP, *opts)
    c = H2Client(srv.port, timeout=30)
    tok = uuid.uuid4().hex
    try:
        silent = c.request("GET", f"/hold?name=s{tok}")
        partial = c.request("GET", f"/partial?name=p{tok}")
        srv.wait_marks("entered", 2)
        # The first block is in before the stop (the client library drops the frames that
        # share a read with the GOAWAY).
        while not c.responses_by_id[partial].body:
            assert c.receive_once()
        srv.signal(signal.SIGTERM)
        rs = c.responses([silent, partial])
    finally:
        c.close()
    assert c.goaway() is not None
    assert [r.reset for r in rs] == [h2.errors.ErrorCodes.CANCEL] * 2, rs
    assert bytes(rs[1].body) == b"first block\n"  # the DATA sent, then the reset
    code = srv.wait_exit(timeout=30)
    log = srv.log_text()
    assert "Fatal Python error" not in log and code >= 0, log[-3000:]
    assert "Shutdown cut 2 request(s)" in log, log[-3000:]
    if not workers:
        assert code == 1  # as an HTTP/1.1 request cut by the stop


# --- --limit-body without a content-length ----------------------------------------------------

def test_h2_body_without_length_past_limit_body_is_413(start_server):
    limit = 1024 * 1024
    srv = start_server(APP, "--limit-body", str(limit))
    c = H2Client(srv.port, timeout=30)
    try:
        r = c.responses([c.request("POST", "/read?step=65536", body=b"b" * (3 * limit))])[0]
        after = c.get("/")
    finally:
        c.close()
    assert r.status == 413, (r.status, bytes(r.body))
    read = [int(n) for n in srv.marks("read")]
    assert read and max(read) <= limit, read[-3:]
    assert srv.marks("read-error") == ["BodyError"]
    assert after.status == 200  # the connection goes on


def test_h2_body_within_limit_body_is_read_whole(start_server):
    srv = start_server(APP, "--limit-body", "100000")
    c = H2Client(srv.port)
    try:
        r = c.responses([c.request("POST", "/read?step=4096", body=b"b" * 100000)])[0]
    finally:
        c.close()
    assert (r.status, bytes(r.body)) == (200, b"100000")


# --- Host, :authority, CONNECT, cookies ---------------------------------------------------------

BAD_HOSTS = ["good.example@evil.example", "user:pw@example.org", "a b"]


@pytest.mark.parametrize("value", BAD_HOSTS)
def test_h2_authority_and_host_get_the_http11_host_check(servers, value):
    srv = servers.get(APP)
    c = raw_client(srv.port)
    try:
        as_authority = send(c, [(":method", "GET"), (":path", "/host"), (":scheme", "http"),
                                (":authority", value)])
        as_host = send(c, [(":method", "GET"), (":path", "/host"), (":scheme", "http"),
                           ("host", value)])
        rs = c.responses([as_authority, as_host])
        fine = c.get("/host", authority="good.example")
    finally:
        c.close()
    assert all(refused(r) for r in rs), [(r.reset, r.headers, bytes(r.body)) for r in rs]
    assert (fine.status, bytes(fine.body)) == (200, b"good.example")
    # HTTP/1.1 refuses the same value.
    with Conn(socket.create_connection(("127.0.0.1", srv.port), timeout=10)) as h1:
        h1.send(f"GET /host HTTP/1.1\r\nHost: {value}\r\n\r\n".encode())
        assert h1.read_response().status == 400


def test_h2_host_that_differs_from_authority_is_malformed(servers):
    srv = servers.get(APP)
    c = raw_client(srv.port)
    try:
        differs = send(c, [(":method", "GET"), (":path", "/host"), (":scheme", "http"),
                           (":authority", "good.example"), ("host", "evil.example")])
        same = send(c, [(":method", "GET"), (":path", "/host"), (":scheme", "http"),
                        (":authority", "good.example"), ("host", "Good.Example")])
        r_differs, r_same = c.responses([differs, same])
    finally:
        c.close()
    assert refused(r_differs), (r_differs.reset, r_differs.headers, bytes(r_differs.body))
    assert r_same.status == 200 and bytes(r_same.body).lower() == b"good.example"


def test_h2_connect_is_refused(servers):
    srv = servers.get(APP)
    c = raw_client(srv.port)
    try:
        sid = send(c, [(":method", "CONNECT"), (":authority", "example.org:443")], end=False)
        r = c.responses([sid])[0]
        after = c.get("/")
    finally:
        c.close()
    assert refused(r), (r.reset, r.headers, bytes(r.body))
    assert after.status == 200
    with Conn(socket.create_connection(("127.0.0.1", srv.port), timeout=10)) as h1:
        h1.send(b"CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n")
        assert h1.read_response().status == 400


def test_h2_cookie_fields_count_toward_limit_headers(start_server):
    srv = start_server(APP, "--limit-headers", "20")
    c = H2Client(srv.port)
    try:
        many = c.get("/", headers=[("cookie", f"c{i}=v") for i in range(50)])
        few = c.get("/", headers=[("cookie", f"c{i}=v") for i in range(10)])
    finally:
        c.close()
    assert many.status == 431
    assert few.status == 200


# --- one malformed field, one stream ------------------------------------------------------------

@pytest.mark.parametrize("field", [("X-Upper", "v"), ("x-crlf", "a\r\nb"), ("x-nul", "a\x00b")],
                         ids=["uppercase-name", "cr-lf-in-value", "nul-in-value"])
def test_h2_malformed_field_resets_its_stream_only(start_server, field):
    srv = start_server(APP)
    c = raw_client(srv.port, timeout=20)
    tok = uuid.uuid4().hex
    try:
        inflight = c.request("GET", f"/hold?name={tok}")
        srv.wait_marks("entered", 1)
        bad = send(c, [(":method", "GET"), (":path", "/"), (":scheme", "http"),
                       (":authority", "x"), field])
        r_bad = c.responses([bad])[0]
        srv.open_gate(tok)
        r_inflight = c.responses([inflight])[0]
        after = c.get("/")
    finally:
        c.close()
    assert r_bad.reset == h2.errors.ErrorCodes.PROTOCOL_ERROR, (r_bad.reset, r_bad.headers)
    assert (r_inflight.status, bytes(r_inflight.body)) == (200, b"held")
    assert after.status == 200 and c.goaway() is None
