"""What the server does with what the app returns (PEP 3333).

Covers: an exception before headers were sent → 500 without a traceback in the body (the
traceback goes to the error log); an exception after the first block of a chunked or
Content-Length response → the connection closes without completing it, so the client sees a
truncated response; a str block → 500; status or header values with CR, LF or NUL → 500 and a
log line, never an injected header; start_response's exc_info rules; the write() callable; and
close() called on the iterable on every path (success, exception, client gone, HEAD). After
each misbehaving app the server must still serve.
"""

import uuid

import pytest

from tests.apps.file_wrapper import file_bytes
from tests.http_util import Closed, Conn, Truncated, assert_still_serving, request_bytes

SECRET = "SECRET-TRACEBACK-MARKER"


@pytest.fixture(scope="module")
def errors(servers):
    return servers.get("errors")


@pytest.fixture(scope="module")
def exc(servers):
    return servers.get("exc_info")


@pytest.fixture(scope="module")
def writer(servers):
    return servers.get("write_callable")


@pytest.fixture(scope="module")
def tracking(servers):
    return servers.get("close_tracking")


# -- exceptions ------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/raise_before", "/raise_after_start", "/raise_first_block"])
def test_exception_before_headers_sent_gives_500_without_traceback(errors, path):
    mark = errors.log_mark()
    with Conn.open(errors.port) as c:
        c.send(request_bytes("GET", path))
        resp = c.read_response()
    assert resp.status == 500
    text = resp.raw_head + resp.body
    assert SECRET.encode() not in text and b"Traceback" not in text, \
        f"the response leaks the exception: {text[:500]!r}"
    errors.wait_log(SECRET, since=mark)
    # The whole traceback, not only the exception's last line: the app's frame is named.
    errors.wait_log(r'File ".*tests/apps/errors\.py", line \d+', since=mark)
    assert_still_serving(errors.port, "/ok", b"ok")


def test_exception_after_first_chunk_truncates_the_response(errors):
    mark = errors.log_mark()
    with Conn.open(errors.port) as c:
        c.send(request_bytes("GET", "/raise_after"))
        head = c.read_head()
        assert head.status == 200 and head.header("Transfer-Encoding") == "chunked"
        raw = c.read_until_close()
    assert b"first block" in raw
    assert not raw.endswith(b"0\r\n\r\n"), \
        f"the response was completed with the last chunk after an app error: {raw!r}"
    assert SECRET.encode() not in raw
    errors.wait_log(SECRET, since=mark)
    assert_still_serving(errors.port, "/ok", b"ok")


def test_exception_after_first_chunk_is_seen_as_truncated_by_a_parser(errors):
    with Conn.open(errors.port) as c:
        c.send(request_bytes("GET", "/raise_after"))
        with pytest.raises(Truncated):
            c.read_response()


def test_exception_inside_content_length_body_truncates_the_response(errors):
    with Conn.open(errors.port) as c:
        c.send(request_bytes("GET", "/raise_after_cl"))
        with pytest.raises(Truncated) as info:
            c.read_response()
    assert info.value.partial == b"0123456789"
    assert_still_serving(errors.port, "/ok", b"ok")


def test_exception_on_http10_close_delimited_response_is_logged_and_closed(errors):
    """A close-delimited body cannot show truncation; the server must at least stop and log."""
    mark = errors.log_mark()
    with Conn.open(errors.port) as c:
        c.send(request_bytes("GET", "/raise_after", version="HTTP/1.0"))
        raw = c.read_until_close()
    assert b"first block" in raw and SECRET.encode() not in raw
    errors.wait_log(SECRET, since=mark)


def test_str_block_is_refused_with_500(errors):
    mark = errors.log_mark()
    with Conn.open(errors.port) as c:
        c.send(request_bytes("GET", "/yield_str"))
        resp = c.read_response()
    assert resp.status == 500
    assert b"a str, not bytes" not in resp.body
    errors.wait_log(r".", since=mark)
    assert_still_serving(errors.port, "/ok", b"ok")


@pytest.mark.parametrize("path", [
    "/bad_status_crlf", "/bad_status_lf", "/bad_status_cr", "/bad_status_nul",
    "/bad_value_crlf", "/bad_value_lf", "/bad_value_cr", "/bad_value_nul",
    "/bad_name_crlf", "/bad_name_nul",
])
def test_cr_lf_nul_in_status_or_headers_gives_500_and_is_logged(errors, path):
    mark = errors.log_mark()
    with Conn.open(errors.port) as c:
        c.send(request_bytes("GET", path) + request_bytes("GET", "/ok"))
        resp = c.read_response()
        assert resp.status == 500
        assert resp.header("X-Injected") is None and b"X-Injected" not in resp.raw_head
        assert resp.header("X-Bad") is None
        assert b"\x00" not in resp.raw_head
        try:
            nxt = c.read_response()
        except Closed:
            nxt = None
        if nxt is not None:  # a 500 may keep the connection; the next request is clean
            assert nxt.status == 200 and nxt.body == b"ok"
    line = errors.wait_log(r"(?i)(status|header)", since=mark)
    assert line, "nothing was logged about the refused status/header"
    assert_still_serving(errors.port, "/ok", b"ok")


def test_latin1_status_and_header_values_go_out_as_their_bytes(errors):
    # PEP 3333: native strings, latin-1. Literals (stored compactly), strings built at run time
    # and str subclasses (stored another way) must all give the same bytes.
    with Conn.open(errors.port) as c:
        c.send(request_bytes("GET", "/latin1"))
        resp = c.read_response()
    assert resp.status == 200
    assert resp.raw_head.startswith(b"HTTP/1.1 200 Caf\xe9\r\n")
    assert b"\r\nX-Literal: caf\xe9 \xff\r\n" in resp.raw_head
    assert b"\r\nX-Built: na\xefve\r\n" in resp.raw_head
    assert b"\r\nX-Sub: \xe0 la\r\n" in resp.raw_head
    assert b"\r\nX-Ascii-Sub: plain\r\n" in resp.raw_head
    assert resp.body == b"ok"


def test_a_header_value_past_latin1_gives_500(errors):
    mark = errors.log_mark()
    with Conn.open(errors.port) as c:
        c.send(request_bytes("GET", "/not_latin1"))
        resp = c.read_response()
    assert resp.status == 500 and b"X-Wide" not in resp.raw_head
    errors.wait_log("not latin-1", since=mark)
    assert_still_serving(errors.port, "/ok", b"ok")


# -- start_response and exc_info -------------------------------------------------------------

def test_second_start_response_without_exc_info_is_an_error(exc):
    mark = exc.log_mark()
    with Conn.open(exc.port) as c:
        c.send(request_bytes("GET", "/twice_without_exc_info"))
        resp = c.read_response()
    assert resp.status == 500
    assert b"second start_response accepted" not in resp.body
    exc.wait_log(r"Traceback|Error", since=mark)


def test_start_response_with_exc_info_before_sending_replaces_the_status(exc):
    with Conn.open(exc.port) as c:
        c.send(request_bytes("GET", "/replace_before_sent"))
        resp = c.read_response()
    assert (resp.status, resp.reason) == (503, "Replaced")
    assert resp.header("X-Second") == "1"
    assert resp.header("X-First") is None, "headers of the first start_response were kept"
    assert resp.body == b"replaced"


def test_start_response_with_exc_info_after_sending_reraises_and_truncates(exc):
    tok_before = exc.marks("after_sent")
    with Conn.open(exc.port) as c:
        c.send(request_bytes("GET", "/after_sent"))
        head = c.read_head()
        assert head.status == 200
        raw = c.read_until_close()
    assert b"first block" in raw and b"should never be sent" not in raw
    assert not raw.endswith(b"0\r\n\r\n"), "response completed after exc_info re-raise"
    got = exc.wait_marks("after_sent", count=len(tok_before) + 1)
    assert got[-1] == "reraised", "start_response(exc_info) after headers were sent returned"


# -- write() ---------------------------------------------------------------------------------

@pytest.mark.parametrize("version", ["HTTP/1.1", "HTTP/1.0"])
def test_write_callable_output_precedes_the_iterable_in_order(writer, version):
    with Conn.open(writer.port) as c:
        c.send(request_bytes("GET", "/write_then_iter", version=version))
        resp = c.read_response()
    assert resp.status == 200
    assert resp.body == b"one-two-three-four"


def test_write_callable_with_content_length(writer):
    with Conn.open(writer.port) as c:
        c.send(request_bytes("GET", "/write_with_length") + request_bytes("GET", "/write_only"))
        first = c.read_response()
        assert first.framing == "length" and first.body == b"hello world"
        second = c.read_response()
        assert second.body == b"only written"


def test_callables_an_app_kept_never_reach_a_later_request(writer):
    # The server reuses a thread's start_response and write for the next request, but only
    # when nothing else holds them: the kept ones must stay tied to their own, finished,
    # request, and fail there, while the later request gets new ones.
    for _ in range(3):
        with Conn.open(writer.port) as c:
            c.send(request_bytes("GET", "/keep") + request_bytes("GET", "/stale"))
            assert c.read_response().body == b"kept"
            resp = c.read_response()
        assert resp.status == 200
        assert resp.body == b"write=ValueError start=AssertionError same=False", resp.body
        assert b"LEAKED" not in resp.raw_head + resp.body


# -- close() on every path -------------------------------------------------------------------

def closed_marks(server, tok):
    return server.wait_marks("closed", prefix=tok + " ")


def test_close_is_called_after_a_successful_response(tracking):
    tok = uuid.uuid4().hex
    with Conn.open(tracking.port) as c:
        c.send(request_bytes("GET", f"/ok?token={tok}"))
        assert c.read_response().body == b"onetwothr"
    assert closed_marks(tracking, tok) == [f"{tok} yielded=3"]


def test_close_is_called_for_head_requests(tracking):
    tok = uuid.uuid4().hex
    with Conn.open(tracking.port) as c:
        c.send(request_bytes("HEAD", f"/ok?token={tok}"))
        assert c.read_response("HEAD").status == 200
    assert len(closed_marks(tracking, tok)) == 1


@pytest.mark.parametrize("path", ["/raise", "/raise_first"])
def test_close_is_called_when_the_iterable_raises(tracking, path):
    tok = uuid.uuid4().hex
    with Conn.open(tracking.port) as c:
        c.send(request_bytes("GET", f"{path}?token={tok}"))
        if path == "/raise_first":  # nothing was sent yet: a clean 500
            assert c.read_response().status == 500
        else:  # one block was sent: the response is cut short
            with pytest.raises(Truncated):
                c.read_response()
    assert len(closed_marks(tracking, tok)) == 1


def test_close_is_called_when_the_client_disconnects_mid_stream(tracking):
    tok = uuid.uuid4().hex
    c = Conn.open(tracking.port)
    c.send(request_bytes("GET", f"/stream?token={tok}"))
    head = c.read_head()
    assert head.status == 200
    # Read a little of the 1 GiB body, then hang up.
    c.recv_at_least(200_000)
    c.close()
    got = closed_marks(tracking, tok)
    yielded = int(got[0].split("yielded=")[1])
    assert yielded < 16384, "the server iterated the whole body for a client that was gone"


# -- wsgi.errors and wsgi.file_wrapper -------------------------------------------------------

def test_wsgi_errors_output_reaches_the_error_log(errors):
    mark = errors.log_mark()
    with Conn.open(errors.port) as c:
        c.send(request_bytes("GET", "/wsgi_errors"))
        assert c.read_response().status == 200
    errors.wait_log(r"wsgi\.errors write: first line", since=mark)
    errors.wait_log(r"wsgi\.errors writelines: second line", since=mark)
    errors.wait_log(r"wsgi\.errors third line", since=mark)


@pytest.fixture(scope="module")
def files(servers):
    return servers.get("file_wrapper")


@pytest.mark.parametrize("size", [0, 1, 8192, 1_000_003])
def test_file_wrapper_sends_a_regular_file_byte_exact_and_closes_it(files, size):
    tok = uuid.uuid4().hex
    with Conn.open(files.port) as c:
        c.send(request_bytes("GET", f"/file?size={size}&token={tok}")
               + request_bytes("GET", f"/file_nolength?size={size}"))
        first = c.read_response()
        assert first.framing == "length" and first.body == file_bytes(size)
        second = c.read_response()
        assert second.body == file_bytes(size)
    assert files.wait_marks("file-closed", prefix=tok) == [tok]


def test_file_wrapper_head_sends_no_body_and_closes_the_file(files):
    tok = uuid.uuid4().hex
    with Conn.open(files.port) as c:
        c.send(request_bytes("HEAD", f"/file?size=5000&token={tok}")
               + request_bytes("GET", "/file?size=10"))
        head = c.read_response("HEAD")
        assert head.header("Content-Length") == "5000"
        assert c.read_response().body == file_bytes(10)
    assert files.wait_marks("file-closed", prefix=tok) == [tok]


@pytest.mark.parametrize("version", ["HTTP/1.1", "HTTP/1.0"])
def test_file_wrapper_over_a_non_file_object(files, version):
    with Conn.open(files.port) as c:
        c.send(request_bytes("GET", "/bytesio?size=123457", version=version))
        assert c.read_response().body == file_bytes(123457)


def test_hop_by_hop_headers_are_dropped_and_logged_once(errors):
    """The app's hop-by-hop headers are dropped (the server manages the connection, RFC 9110
    7.6.1) and the first one is named in one warning line per process, never repeated."""
    mark = errors.log_mark()
    for _ in range(2):
        with Conn.open(errors.port) as c:
            c.send(request_bytes("GET", "/hop_by_hop"))
            resp = c.read_response()
        assert resp.status == 200 and resp.body == b"hop"
        assert resp.header("X-Kept") == "yes"
        for name in ("Keep-Alive", "Transfer-Encoding", "Upgrade", "Proxy-Connection"):
            assert resp.header(name) is None, f"{name} reached the client"
    line = errors.wait_log(r"hop-by-hop header.*", since=mark).group(0)
    assert "Keep-Alive" in line and "shown once" in line
    assert_still_serving(errors.port, "/ok", b"ok")
    assert errors.log_since(mark).count("hop-by-hop header") == 1


@pytest.mark.parametrize("code", ["100", "103", "199"])
def test_an_interim_status_from_the_app_is_refused_not_sent_as_final(errors, code):
    """Regression (5edbee8): start_response("103 Early Hints") was sent as the answer and the
    connection kept, so the client took the next response as this request's (desync)."""
    mark = errors.log_mark()
    with Conn.open(errors.port) as c:
        c.send(request_bytes("GET", f"/interim?code={code}"))
        resp = c.read_response()
        assert resp.status == 500 and b"not final" not in resp.body
        assert resp.has_token("Connection", "close")
        c.expect_closed()
    errors.wait_log(r"is interim \(1xx\)", since=mark)
    assert_still_serving(errors.port, "/ok", b"ok")


def test_a_header_section_past_the_limit_is_refused_with_500(errors):
    """Regression (84864a8): a 1 MiB header value from the app went on the wire as given;
    past --limit-response-headers (default 64 KiB) it is refused like an invalid header."""
    with Conn.open(errors.port) as c:
        c.send(request_bytes("GET", "/big_header?size=60000"))
        ok = c.read_response()
    assert ok.status == 200 and len(ok.header("X-Big")) == 60000
    mark = errors.log_mark()
    with Conn.open(errors.port) as c:
        c.send(request_bytes("GET", f"/big_header?size={1 << 20}"))
        resp = c.read_response()
    assert resp.status == 500 and resp.header("X-Big") is None
    line = errors.wait_log(r"limit-response-headers.*", since=mark).group(0)
    assert "X-Big" in line
    assert_still_serving(errors.port, "/ok", b"ok")

