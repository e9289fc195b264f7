"""HTTP/1.1 connection handling and message framing, over raw sockets.

Covers: keep-alive by default on 1.1; 1.0 closing unless it asks for keep-alive; Connection:
close from the client; pipelining in order (with an unread body in between); HEAD sending no
body bytes at all; request bodies framed by Content-Length and chunked (extensions, trailers),
byte-exact from 0 B to 5 MB; Expect: 100-continue (100 only once the app reads; no 100 when it
answers without reading); chunked responses when the app sets no Content-Length and
close-delimited ones for HTTP/1.0; Date and Server headers; 400 for a 1.1 request without Host.
"""

import email.utils
import hashlib
import json
import re
import socket
import time
import uuid

import pytest

from tests.apps.streaming import expected_chunks
from tests.http_util import Closed, Conn, chunked, request_bytes


@pytest.fixture(scope="module")
def hello(servers):
    return servers.get("hello")


@pytest.fixture(scope="module")
def streaming(servers):
    return servers.get("streaming")


@pytest.fixture(scope="module")
def body_reader(servers):
    return servers.get("body_reader")


@pytest.fixture(scope="module")
def expect(servers):
    return servers.get("expect_continue")


# -- persistence -----------------------------------------------------------------------------

def test_http11_connection_is_kept_alive_by_default(hello):
    with Conn.open(hello.port) as c:
        for i in range(3):
            c.send(request_bytes("GET", f"/r{i}"))
            resp = c.read_response()
            assert resp.status == 200 and resp.body == f"path=/r{i}".encode()
            assert not resp.has_token("Connection", "close"), \
                "server announced close on a plain HTTP/1.1 request"
        assert not c.is_closed_now(), "server closed a keep-alive HTTP/1.1 connection"


def test_http10_connection_closes_after_response_by_default(hello):
    with Conn.open(hello.port) as c:
        c.send(request_bytes("GET", "/", version="HTTP/1.0"))
        resp = c.read_response()
        assert resp.status == 200 and resp.body == b"Hello, World!"
        assert resp.version in ("HTTP/1.1", "HTTP/1.0")
        c.expect_closed()


def test_http10_with_keepalive_header_keeps_connection_open(hello):
    with Conn.open(hello.port) as c:
        for i in range(2):
            c.send(request_bytes("GET", f"/k{i}", version="HTTP/1.0",
                                 headers=[("Connection", "keep-alive")]))
            resp = c.read_response()
            assert resp.status == 200 and resp.body == f"path=/k{i}".encode()
            assert resp.has_token("Connection", "keep-alive"), \
                "an HTTP/1.0 client is only told the connection persists by Connection: keep-alive"
        assert not c.is_closed_now()


def test_http10_keepalive_with_unframed_response_is_close_delimited(streaming):
    """A 1.0 response without Content-Length cannot be chunked: the body ends at close, even if
    the client asked for keep-alive."""
    with Conn.open(streaming.port) as c:
        c.send(request_bytes("GET", "/chunks?n=3&size=100", version="HTTP/1.0",
                             headers=[("Connection", "keep-alive")]))
        resp = c.read_response()
        assert resp.status == 200
        assert resp.framing == "close"
        assert resp.body == expected_chunks(3, 100)


def test_client_connection_close_closes_after_the_response(hello):
    with Conn.open(hello.port) as c:
        c.send(request_bytes("GET", "/bye", headers=[("Connection", "close")]))
        resp = c.read_response()
        assert resp.status == 200 and resp.body == b"path=/bye"
        assert resp.has_token("Connection", "close"), "server did not echo Connection: close"
        c.expect_closed()


def test_a_client_that_half_closes_after_its_request_sees_the_close_after_the_answer(
        start_server):
    """Regression: when a client's FIN came in the same readiness event as its request (a
    client that sends its request and shuts its side, as HTTP/1.0 tools do), the loop returned
    the request before reading to the end, and nothing told it again: the connection stayed
    open after the answer until the keep-alive timeout (1 in 20 connections on a loopback).
    Now the socket is looked at again when the request is done. Many tries, as the race is."""
    srv = start_server("hello", "--keepalive-timeout", "300")
    for i in range(200):
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", f"/half{i}"))
            c.sock.shutdown(socket.SHUT_WR)
            assert c.read_response().body == f"path=/half{i}".encode()
            c.expect_closed()  # bounded; the keep-alive timeout is far beyond the bound


def test_requests_pipelined_after_connection_close_are_not_answered(hello):
    with Conn.open(hello.port) as c:
        c.send(request_bytes("GET", "/first", headers=[("Connection", "close")])
               + request_bytes("GET", "/second"))
        resp = c.read_response()
        assert resp.body == b"path=/first"
        c.expect_closed()


# -- pipelining ------------------------------------------------------------------------------

def test_three_pipelined_requests_are_answered_in_order(hello):
    with Conn.open(hello.port) as c:
        c.send(b"".join(request_bytes("GET", p) for p in ("/a", "/b", "/c")))
        bodies = [c.read_response().body for _ in range(3)]
        assert bodies == [b"path=/a", b"path=/b", b"path=/c"]
        assert not c.is_closed_now()


def test_pipelined_request_after_an_unread_body_is_answered(hello):
    """hello never reads the POST body: the server must skip exactly its 5 bytes and then parse
    the next request."""
    with Conn.open(hello.port) as c:
        c.send(request_bytes("GET", "/a") + request_bytes("POST", "/b", body=b"hello")
               + request_bytes("GET", "/c"))
        assert [c.read_response().body for _ in range(3)] == [b"path=/a", b"path=/b", b"path=/c"]


def test_pipelined_chunked_unread_body_is_skipped(hello):
    with Conn.open(hello.port) as c:
        c.send(request_bytes("POST", "/a", headers=[("Transfer-Encoding", "chunked")],
                             body=chunked(b"GET /smuggled HTTP/1.1\r\n\r\n", 7))
               + request_bytes("GET", "/b"))
        assert [c.read_response().body for _ in range(2)] == [b"path=/a", b"path=/b"]


# -- HEAD ------------------------------------------------------------------------------------

def test_head_sends_headers_and_no_body_bytes(hello):
    with Conn.open(hello.port) as c:
        c.send(request_bytes("HEAD", "/") + request_bytes("GET", "/next"))
        head = c.read_response("HEAD")
        assert head.status == 200
        assert head.header("Content-Length") == "13", "HEAD must carry GET's Content-Length"
        # If any body byte had been sent, it would be parsed here as the next status line.
        nxt = c.read_response()
        assert nxt.status == 200 and nxt.body == b"path=/next"


def test_head_of_an_unframed_response_sends_no_chunk_at_all(streaming):
    with Conn.open(streaming.port) as c:
        c.send(request_bytes("HEAD", "/chunks?n=3&size=10")
               + request_bytes("GET", "/chunks?n=2&size=5"))
        head = c.read_response("HEAD")
        assert head.status == 200
        nxt = c.read_response()
        assert nxt.status == 200 and nxt.body == expected_chunks(2, 5)


# -- request bodies --------------------------------------------------------------------------

BODY_SIZES = [0, 1, 100_000, 5_000_000]


def _payload(n: int) -> bytes:
    block = hashlib.sha256(b"sluicegate").digest() * 2048  # 64 KiB, not all one byte
    return (block * (n // len(block) + 1))[:n]


@pytest.mark.parametrize("size", BODY_SIZES)
@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_request_body_arrives_byte_exact(body_reader, size, framing):
    body = _payload(size)
    with Conn.open(body_reader.port) as c:
        if framing == "chunked":
            c.send(request_bytes("POST", "/read", headers=[("Transfer-Encoding", "chunked")],
                                 body=chunked(body, 65536)))
        else:
            c.send(request_bytes("POST", "/read", headers=[("Content-Length", str(size))],
                                 body=body))
        resp = c.read_response()
        assert resp.status == 200, resp.body[:500]
        got = json.loads(resp.body)
        assert (got["len"], got["sha256"]) == (size, hashlib.sha256(body).hexdigest())
        # The connection stays usable: the body was consumed exactly.
        c.send(request_bytes("POST", "/read", body=b"next"))
        assert json.loads(c.read_response().body)["len"] == 4


def test_chunk_extensions_and_trailers_are_accepted_and_discarded(body_reader):
    body = b"The quick brown fox jumps over the lazy dog" * 10
    wire = chunked(body, 17, ext=';name=value;quoted="a b;c"',
                   trailers="X-Trailer: one\r\nX-Checksum: abc\r\n")
    with Conn.open(body_reader.port) as c:
        c.send(request_bytes("POST", "/read", headers=[("Transfer-Encoding", "chunked"),
                                                        ("Trailer", "X-Trailer, X-Checksum")],
                             body=wire) + request_bytes("GET", "/read"))
        got = json.loads(c.read_response().body)
        assert got["pieces"] == [body.decode()]
        # The trailer section was consumed: the pipelined request is parsed correctly.
        assert json.loads(c.read_response().body)["len"] == 0


def test_chunked_body_with_uppercase_hex_and_leading_zeros(body_reader):
    wire = b"00A\r\n0123456789\r\n0000\r\n\r\n"
    with Conn.open(body_reader.port) as c:
        c.send(request_bytes("POST", "/read", headers=[("Transfer-Encoding", "chunked")],
                             body=wire))
        assert json.loads(c.read_response().body)["pieces"] == ["0123456789"]


def test_request_body_sent_byte_by_byte_arrives_intact(body_reader):
    body = b"abc\ndef\n" * 8
    with Conn.open(body_reader.port) as c:
        for byte in request_bytes("POST", "/readline", body=body):
            c.send(bytes([byte]))
        got = json.loads(c.read_response().body)
        assert "".join(got["pieces"]) == body.decode()


# -- Expect: 100-continue --------------------------------------------------------------------

def test_100_continue_is_sent_only_when_the_app_starts_reading(expect):
    tok = uuid.uuid4().hex
    body = _payload(1000)
    with Conn.open(expect.port) as c:
        c.send(request_bytes("POST", f"/read?token={tok}",
                             headers=[("Expect", "100-continue"), ("Content-Length", "1000")]))
        expect.wait_marks("started", prefix=tok)
        # The app is running but has not read yet: nothing may have been sent.
        assert c.nothing_arrives(0.3), \
            f"server sent something before the app read the body: {c.buf[:200]!r}"
        expect.open_gate("read-" + tok)
        interim = c.read_head()
        assert interim.status == 100, f"expected 100 Continue, got {interim.raw_head!r}"
        assert expect.marks("reading", prefix=tok), "100 Continue arrived before the app read"
        c.send(body)
        resp = c.read_response()
        assert resp.status == 200
        assert resp.body == f"len=1000 sha256={hashlib.sha256(body).hexdigest()}".encode()
        c.send(request_bytes("GET", "/noread"))
        assert c.read_response().body == b"not read"


def test_no_100_continue_when_the_app_answers_without_reading(expect):
    with Conn.open(expect.port) as c:
        c.send(request_bytes("POST", "/noread",
                             headers=[("Expect", "100-continue"), ("Content-Length", "10")]))
        resp = c.read_response(skip_interim=False)
        assert resp.status == 200, f"expected the final response, got {resp.raw_head!r}"
        assert resp.body == b"not read"
        # Either the server closes now, or it keeps the connection and drains the 10 body
        # bytes the client sends anyway: they must never be parsed as a request.
        try:
            c.send(b"0123456789" + request_bytes("GET", "/noread"))
            nxt = c.read_response()
        except (Closed, BrokenPipeError, ConnectionResetError):
            return
        assert nxt.status == 200 and nxt.body == b"not read", \
            "unread body bytes after a final response were parsed as a request"


def test_no_100_continue_for_http10_requests(expect):
    tok = uuid.uuid4().hex
    expect.open_gate("read-" + tok)
    with Conn.open(expect.port) as c:
        c.send(request_bytes("POST", f"/read?token={tok}", version="HTTP/1.0",
                             headers=[("Expect", "100-continue")], body=b"abc"))
        resp = c.read_response(skip_interim=False)
        assert resp.status == 200, f"HTTP/1.0 client got {resp.raw_head!r}"
        assert resp.body.startswith(b"len=3 ")


# -- response framing ------------------------------------------------------------------------

def test_response_without_content_length_is_chunked_on_http11(streaming):
    with Conn.open(streaming.port) as c:
        c.send(request_bytes("GET", "/chunks?n=5&size=1000"))
        resp = c.read_response()
        assert resp.framing == "chunked"
        assert resp.header("Content-Length") is None
        assert resp.body == expected_chunks(5, 1000)
        c.send(request_bytes("GET", "/chunks?n=1&size=1"))
        assert c.read_response().body == b"a"


def test_response_without_content_length_is_close_delimited_on_http10(streaming):
    with Conn.open(streaming.port) as c:
        c.send(request_bytes("GET", "/chunks?n=5&size=1000", version="HTTP/1.0"))
        resp = c.read_response()
        assert resp.header("Transfer-Encoding") is None, "chunked sent to an HTTP/1.0 client"
        assert resp.framing == "close"
        assert resp.body == expected_chunks(5, 1000)


def test_empty_blocks_do_not_end_a_chunked_response(streaming):
    with Conn.open(streaming.port) as c:
        c.send(request_bytes("GET", "/empty_blocks") + request_bytes("GET", "/chunks?n=1&size=3"))
        resp = c.read_response()
        assert resp.framing == "chunked" and resp.body == b"abcdef"
        assert all(size > 0 for size in resp.chunk_sizes)
        assert c.read_response().body == b"aaa"


def test_response_with_content_length_is_sent_as_is(streaming):
    with Conn.open(streaming.port) as c:
        c.send(request_bytes("GET", "/with_length?n=4&size=3000"))
        resp = c.read_response()
        assert resp.framing == "length" and resp.header("Transfer-Encoding") is None
        assert resp.body == expected_chunks(4, 3000)


def test_large_chunked_response_is_byte_exact(streaming):
    with Conn.open(streaming.port) as c:
        c.send(request_bytes("GET", "/chunks?n=300&size=16384"))
        resp = c.read_response()
        assert resp.body == expected_chunks(300, 16384)


# -- Date, Server, Host ----------------------------------------------------------------------

IMF_FIXDATE = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} "
                         r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} "
                         r"\d{2}:\d{2}:\d{2} GMT$")


def test_responses_carry_date_and_server_headers(hello):
    with Conn.open(hello.port) as c:
        c.send(request_bytes("GET", "/"))
        resp = c.read_response()
    date = resp.header("Date")
    assert date is not None, "no Date header"
    assert IMF_FIXDATE.match(date), f"Date is not an IMF-fixdate: {date!r}"
    # Sanity, not timing: the cached date is the real current date (within minutes).
    assert abs(email.utils.parsedate_to_datetime(date).timestamp() - time.time()) < 300
    assert len(resp.header_all("Date")) == 1
    server = resp.header("Server")
    assert server, "no Server header"
    assert len(resp.header_all("Server")) == 1


def test_http11_request_without_host_is_400_and_closed(hello):
    with Conn.open(hello.port) as c:
        c.send(request_bytes("GET", "/", host=None))
        assert c.read_response().status == 400
        c.expect_closed()


def test_http10_request_without_host_is_accepted(hello):
    with Conn.open(hello.port) as c:
        c.send(request_bytes("GET", "/", version="HTTP/1.0", host=None))
        assert c.read_response().status == 200
