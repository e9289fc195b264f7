"""Malformed and ambiguous requests: each is refused with 400 (or the
documented status: 505 for an unsupported version, 501 for an unknown transfer coding, 413 for a
length past the body limit) and the connection is closed, and the server keeps serving.

Also request smuggling attempts (CL.TE, TE.CL, obfuscated Transfer-Encoding): a request that
hides a second one must never produce two responses, and the hidden request (``/smuggled``) is
never answered.
"""

import json

import pytest

from tests.http_util import Closed, Conn, Truncated, assert_refused, assert_still_serving, request_bytes


@pytest.fixture(scope="module")
def hello(servers):
    return servers.get("hello")


@pytest.fixture(scope="module")
def body_reader(servers):
    return servers.get("body_reader")


def H(*lines: bytes, body: bytes = b"") -> bytes:
    """A request from raw lines, CRLF-terminated, with the empty line and `body`."""
    return b"".join(line + b"\r\n" for line in lines) + b"\r\n" + body


GET = b"GET / HTTP/1.1"
POST = b"POST / HTTP/1.1"
HOST = b"Host: x"

BAD_400 = {
    # -- framing of the body --
    "content-length-and-transfer-encoding":
        H(POST, HOST, b"Content-Length: 5", b"Transfer-Encoding: chunked", body=b"0\r\n\r\n"),
    "differing-duplicate-content-length":
        H(POST, HOST, b"Content-Length: 5", b"Content-Length: 6", body=b"hello"),
    "differing-content-length-list": H(POST, HOST, b"Content-Length: 5, 6", body=b"hello"),
    "content-length-plus": H(POST, HOST, b"Content-Length: +5", body=b"hello"),
    "content-length-hex": H(POST, HOST, b"Content-Length: 0x5", body=b"hello"),
    "content-length-negative": H(POST, HOST, b"Content-Length: -1", body=b"hello"),
    "content-length-letters": H(POST, HOST, b"Content-Length: abc"),
    "content-length-empty": H(POST, HOST, b"Content-Length: "),
    "content-length-inner-space": H(POST, HOST, b"Content-Length: 1 0", body=b"x" * 10),
    "content-length-float": H(POST, HOST, b"Content-Length: 5.0", body=b"hello"),
    "transfer-encoding-chunked-not-last":
        H(POST, HOST, b"Transfer-Encoding: chunked, identity", body=b"0\r\n\r\n"),
    # -- header syntax --
    "obs-fold": H(GET, HOST, b"X-Folded: first", b" continued"),
    "obs-fold-tab": H(GET, HOST, b"X-Folded: first", b"\tcontinued"),
    "leading-whitespace-first-header": H(GET, b" X-Space: v", HOST),
    "whitespace-before-colon": H(GET, HOST, b"X-Foo : bar"),
    "tab-before-colon": H(GET, HOST, b"X-Foo\t: bar"),
    "host-with-space-before-colon": H(GET, b"Host : x"),
    "header-without-colon": H(GET, HOST, b"X-No-Colon value"),
    "empty-header-name": H(GET, HOST, b": value"),
    "header-name-with-space": H(GET, HOST, b"X Foo: bar"),
    "header-name-with-separator": H(GET, HOST, b"X(Foo): bar"),
    "nul-in-header-value": H(GET, HOST, b"X-Nul: a\x00b"),
    "nul-in-header-name": H(GET, HOST, b"X-N\x00ul: v"),
    "control-byte-in-header-value": H(GET, HOST, b"X-Ctl: a\x01b"),
    "escape-in-header-value": H(GET, HOST, b"X-Ctl: a\x1bb"),
    "del-in-header-value": H(GET, HOST, b"X-Ctl: a\x7fb"),
    "bare-cr-in-header-value": H(GET, HOST, b"X-Cr: a\rb"),
    "bare-cr-line-end": GET + b"\r\nHost: x\rX-After: y\r\n\r\n",
    "bare-lf-line-ends": b"GET / HTTP/1.1\nHost: x\n\n",
    "bare-lf-in-headers": b"GET / HTTP/1.1\r\nHost: x\nX-After: y\r\n\r\n",
    "bare-lf-after-request-line": b"GET / HTTP/1.1\nHost: x\r\n\r\n",
    "two-host-headers": H(GET, HOST, b"Host: y"),
    # -- request line --
    "invalid-method-char": H(b"GE(T / HTTP/1.1", HOST),
    "invalid-method-at": H(b"G@T / HTTP/1.1", HOST),
    "empty-method": H(b" / HTTP/1.1", HOST),
    "target-not-absolute-path": H(b"GET foo HTTP/1.1", HOST),
    "target-with-space": H(b"GET /a b HTTP/1.1", HOST),
    "target-with-control-byte": H(b"GET /a\x01b HTTP/1.1", HOST),
    "target-with-nul": H(b"GET /a\x00b HTTP/1.1", HOST),
    "target-with-del": H(b"GET /a\x7fb HTTP/1.1", HOST),
    "target-with-tab": H(b"GET /a\tb HTTP/1.1", HOST),
    "double-space-before-target": H(b"GET  / HTTP/1.1", HOST),
    "trailing-space-after-version": H(b"GET / HTTP/1.1 ", HOST),
    "version-letters": H(b"GET / HTTP/x.y", HOST),
    "version-lowercase": H(b"GET / http/1.1", HOST),
    "version-garbage-suffix": H(b"GET / HTTP/1.1x", HOST),
    "version-missing-minor": H(b"GET / HTTP/1", HOST),
    "not-http": H(b"GET / FTP/1.1", HOST),
}

TE = b"Transfer-Encoding: chunked"

# Errors inside a chunked body: the server finds them only when the body is read. When the app
# reads (body_reader), nothing was sent yet and the answer is 400; when the app does not read
# (hello), the server may already have answered 200 and must then close instead of parsing on.
BAD_BODY = {
    "chunk-size-not-hex": H(POST, HOST, TE, body=b"zz\r\nhello\r\n0\r\n\r\n"),
    "chunk-size-underscore": H(POST, HOST, TE,
                               body=b"5_0\r\n" + b"x" * 80 + b"\r\n0\r\n\r\n"),
    "chunk-size-negative": H(POST, HOST, TE, body=b"-5\r\nhello\r\n0\r\n\r\n"),
    "chunk-size-0x-prefix": H(POST, HOST, TE, body=b"0x5\r\nhello\r\n0\r\n\r\n"),
    "chunk-size-empty": H(POST, HOST, TE, body=b"\r\nhello\r\n0\r\n\r\n"),
    "chunk-size-leading-space": H(POST, HOST, TE, body=b" 5\r\nhello\r\n0\r\n\r\n"),
    "chunk-missing-crlf-after-data": H(POST, HOST, TE,
                                       body=b"5\r\nhelloXX0\r\n\r\n"),
    "chunk-data-longer-than-size": H(POST, HOST, TE,
                                     body=b"3\r\nhello\r\n0\r\n\r\n"),
    "chunk-size-bare-lf": H(POST, HOST, TE, body=b"5\nhello\r\n0\r\n\r\n"),
    # Regression (8c92b91, 7b360a4): a chunk-size digit overflow is a bad body (400 if read).
    "chunk-size-overflow": H(POST, HOST, TE, body=b"ffffffffffffffffff\r\nhello\r\n0\r\n\r\n"),
    "chunk-ext-bare-lf": H(POST, HOST, TE, body=b"2;ext\nxx\r\n0\r\n\r\n"),
    "chunk-trailer-obs-fold": H(POST, HOST, TE, body=b"0\r\nX-T: a\r\n folded\r\n\r\n"),
    "chunk-trailer-nul": H(POST, HOST, TE, body=b"0\r\nX-T: a\x00b\r\n\r\n"),
    "chunk-trailer-without-colon": H(POST, HOST, TE, body=b"0\r\nNoColon\r\n\r\n"),
}

BAD_OTHER = {
    "version-2.0": (H(b"GET / HTTP/2.0", HOST), {400, 505}),
    "version-0.9-style": (b"GET /\r\n\r\n", {400, 505}),
    "content-length-overflow": (H(POST, HOST, b"Content-Length: 99999999999999999999999999"),
                                {400, 413}),
    "unknown-transfer-coding": (H(POST, HOST, b"Transfer-Encoding: gzip", body=b"x"), {400, 501}),
    "gzip-then-chunked": (H(POST, HOST, b"Transfer-Encoding: gzip, chunked", body=b"0\r\n\r\n"),
                          {400, 501}),
}


@pytest.mark.parametrize("raw", list(BAD_400.values()), ids=list(BAD_400))
def test_malformed_request_gets_400_and_close(hello, raw):
    assert_refused(hello.port, raw, {400}, forbidden=b"Hello, World!")
    assert_still_serving(hello.port, "/alive", b"path=/alive")


@pytest.mark.parametrize("raw,statuses", list(BAD_OTHER.values()), ids=list(BAD_OTHER))
def test_unsupported_request_gets_its_status_and_close(hello, raw, statuses):
    assert_refused(hello.port, raw, statuses, forbidden=b"Hello, World!")
    assert_still_serving(hello.port, "/alive", b"path=/alive")


def test_a_higher_http1_minor_version_is_served_as_http11(servers):
    """``GET / HTTP/1.2`` used to be refused with 505. RFC 9110 §2.5: a higher
    minor version of a major we speak is served as the highest we speak: the app sees
    SERVER_PROTOCOL HTTP/1.1, the answer is HTTP/1.1, and the connection stays open (1.1's
    default), so a second request on it is answered too."""
    srv = servers.get("echo_environ")
    with Conn.open(srv.port) as c:
        for version in (b"HTTP/1.2", b"HTTP/1.9"):
            c.send(H(b"GET /v?x=1 " + version, HOST))
            resp = c.read_response()
            assert resp.status == 200, f"{version!r}: {resp.status} {resp.reason}"
            assert resp.version == "HTTP/1.1"
            env = json.loads(resp.body)
            assert (env["SERVER_PROTOCOL"], env["PATH_INFO"], env["QUERY_STRING"]) == \
                ("HTTP/1.1", "/v", "x=1")
    # Other major versions keep their 505.
    assert_refused(srv.port, H(b"GET / HTTP/2.0", HOST), {505})
    assert_refused(srv.port, H(b"GET / HTTP/0.9", HOST), {505})


def test_a_bad_request_line_is_refused_before_the_header_section_ends(servers):
    """A bad request line used to be judged only once the header section ended, so
    ``GET /\\r\\n\\xe2\\r\\n`` followed by silence waited for the header timeout's 408. It is
    refused as soon as the line is complete. The server's header timeout is far longer than
    the client's wait, so only an answer to the line itself can arrive in it."""
    srv = servers.get("hello", "--header-timeout", "3600")
    for raw, status in [(b"GET /\r\n\xe2\r\n", 400),
                        (b"GET / HTTP/2.0\r\nHost: x\r\n", 505),
                        (b"G@T / HTTP/1.1\r\n", 400)]:
        with Conn.open(srv.port) as c:
            c.send(raw)
            # The connection stays open from the client's side: no EOF to end the head.
            resp = c.read_response()
            assert resp.status == status, f"{raw!r}: {resp.status} {resp.reason}"
            c.expect_closed()
    assert_still_serving(srv.port)


@pytest.mark.parametrize("raw", list(BAD_BODY.values()), ids=list(BAD_BODY))
def test_malformed_chunked_body_read_by_the_app_gets_400_and_close(body_reader, raw):
    raw = raw.replace(b"POST / ", b"POST /read ", 1)
    # A chunk size too large to represent is also past any body limit: 413 is documented.
    statuses = {400, 413} if b"ffffffffffffffffff" in raw else {400}
    assert_refused(body_reader.port, raw, statuses, forbidden=b"Hello, World!")
    with Conn.open(body_reader.port) as c:
        c.send(request_bytes("GET", "/read"))
        assert c.read_response().status == 200, "server stopped serving"


@pytest.mark.parametrize("raw", list(BAD_BODY.values()), ids=list(BAD_BODY))
def test_malformed_chunked_body_not_read_by_the_app_closes_the_connection(hello, raw):
    """The app answered without reading, so a 200 may already be out; then the server must
    find the bad framing while draining and close, never parse the rest as a request."""
    with Conn.open(hello.port) as c:
        c.send(raw + request_bytes("GET", "/after"))
        resp = c.read_response()
        assert resp.status in (200, 400)
        c.expect_closed()
    assert_still_serving(hello.port, "/alive", b"path=/alive")


@pytest.mark.parametrize("raw", [
    H(GET, HOST, b"X-Tab: a\tb"),                    # HTAB is allowed inside a value
    H(GET, HOST, b"X-Obs-Text: caf\xc3\xa9"),         # obs-text bytes are allowed in values
    b"\r\n" + H(GET, HOST),                          # one leading empty line may be ignored
    H(GET, b"host: x"),                              # field names are case-insensitive
    H(POST, HOST, b"Content-Length: 005", body=b"hello"),
    H(POST, HOST, b"Transfer-Encoding: Chunked", body=b"5\r\nhello\r\n0\r\n\r\n"),
], ids=["tab-in-value", "obs-text-in-value", "leading-crlf", "lowercase-host",
        "content-length-leading-zeros", "chunked-mixed-case"])
def test_edge_cases_that_are_valid_are_accepted(hello, raw):
    with Conn.open(hello.port) as c:
        c.send(raw)
        resp = c.read_response()
    assert resp.status == 200, f"a valid request was refused with {resp.status}"


# -- smuggling -------------------------------------------------------------------------------

SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

SMUGGLING = {
    # Front end uses Content-Length, back end chunked (CL.TE).
    "cl-te": H(POST, HOST, b"Content-Length: 6", b"Transfer-Encoding: chunked",
               body=b"0\r\n\r\n" + SMUGGLED),
    # Front end uses chunked, back end Content-Length (TE.CL).
    "te-cl": H(POST, HOST, b"Content-Length: 4", b"Transfer-Encoding: chunked",
               body=b"%x\r\n" % len(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n"),
    "te-chunked-identity": H(POST, HOST, b"Transfer-Encoding: chunked, identity",
                             b"Content-Length: 5", body=b"0\r\n\r\n" + SMUGGLED),
    "te-space-before-colon": H(POST, HOST, b"Transfer-Encoding : chunked", b"Content-Length: 5",
                               body=b"0\r\n\r\n" + SMUGGLED),
    "te-second-header": H(POST, HOST, b"Transfer-Encoding: chunked",
                          b"Transfer-Encoding: identity", body=b"0\r\n\r\n" + SMUGGLED),
    "te-xchunked": H(POST, HOST, b"Transfer-Encoding: xchunked", b"Content-Length: 5",
                     body=b"0\r\n\r\n" + SMUGGLED),
    "te-tab-value": H(POST, HOST, b"Transfer-Encoding:\tchunked", b"Content-Length: 5",
                      body=b"0\r\n\r\n" + SMUGGLED),
    "te-vertical-tab": H(POST, HOST, b"Transfer-Encoding: \x0bchunked", b"Content-Length: 5",
                         body=b"0\r\n\r\n" + SMUGGLED),
    "te-obs-fold": H(POST, HOST, b"Transfer-Encoding:", b" chunked", b"Content-Length: 5",
                     body=b"0\r\n\r\n" + SMUGGLED),
    "cl-duplicate-differing": H(POST, HOST, b"Content-Length: 0", b"Content-Length: 37",
                                body=SMUGGLED),
    "http10-te-chunked": H(b"POST / HTTP/1.0", HOST, b"Transfer-Encoding: chunked",
                           b"Content-Length: 5", body=b"0\r\n\r\n" + SMUGGLED),
    "bare-lf-hides-te": b"POST / HTTP/1.1\r\nHost: x\r\nX: y\nTransfer-Encoding: chunked\r\n"
                        b"Content-Length: 5\r\n\r\n0\r\n\r\n" + SMUGGLED,
}


@pytest.mark.parametrize("raw", list(SMUGGLING.values()), ids=list(SMUGGLING))
def test_smuggling_attempt_never_yields_a_second_response(hello, raw):
    responses = []
    with Conn.open(hello.port) as c:
        c.send(raw)
        while True:
            try:
                responses.append(c.read_response())
            except Closed:
                break
            except Truncated as e:
                raise AssertionError(f"truncated response after {len(responses)}: {e}")
    status_lines = [r.raw_head.split(b"\r\n")[0] for r in responses]
    assert len(responses) == 1, \
        f"one request was sent, {len(responses)} responses came back: {status_lines}"
    assert b"path=/smuggled" not in responses[0].body
    assert responses[0].status in (400, 501), \
        f"an ambiguous request was accepted with {responses[0].status}"
    assert_still_serving(hello.port, "/alive", b"path=/alive")
