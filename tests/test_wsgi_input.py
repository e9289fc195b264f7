"""``wsgi.input`` (PEP 3333): every reading method, with Content-Length and
chunked bodies, compared with what ``io.BytesIO`` returns for the same calls.

Covers read(), read(n), readline() keeping the newline, readline(n), readlines(), iteration,
reads past the end returning b'', read(n) larger than the body not reading past it (the next
pipelined request still parses), streaming (the app gets the first bytes before the client sent
the rest), and a body cut short by the client raising an error in the app instead of looking
complete (the ``body_reader`` app logs what it saw).
"""

import hashlib
import io
import json
import random
import socket
import time
import uuid

import pytest

from tests.http_util import Closed, Conn, Truncated, chunked, request_bytes


@pytest.fixture(scope="module")
def reader(servers):
    return servers.get("body_reader")


TEXT = b"line one\nline two\n\n\nlonger line number five\r\nlast line without newline"


def reference(mode: str, body: bytes, n: int):
    """The pieces io.BytesIO returns for the same calls as the app makes."""
    f = io.BytesIO(body)
    if mode == "read":
        return [f.read()]
    if mode == "readn":
        return list(iter(lambda: f.read(n), b""))
    if mode == "readline":
        return list(iter(f.readline, b""))
    if mode == "readline_n":
        return list(iter(lambda: f.readline(n), b""))
    if mode == "readlines":
        return f.readlines()
    if mode == "iter":
        return list(f)
    raise ValueError(mode)


def post(server, mode: str, body: bytes, framing: str, n: int = 8192, chunk: int = 3):
    if framing == "chunked":
        raw = request_bytes("POST", f"/{mode}?n={n}", headers=[("Transfer-Encoding", "chunked")],
                            body=chunked(body, chunk))
    else:
        raw = request_bytes("POST", f"/{mode}?n={n}",
                            headers=[("Content-Length", str(len(body)))], body=body)
    with Conn.open(server.port) as c:
        c.send(raw)
        resp = c.read_response()
    assert resp.status == 200, resp.body[:1000]
    return json.loads(resp.body)


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("mode,n", [("read", 0), ("readn", 1), ("readn", 7), ("readn", 100),
                                    ("readline", 0), ("readline_n", 4), ("readline_n", 1),
                                    ("readlines", 0), ("iter", 0)])
def test_input_method_returns_what_a_file_would(reader, mode, n, framing):
    got = post(reader, mode, TEXT, framing, n=n or 8192)
    want = reference(mode, TEXT, n or 8192)
    if mode in ("readline", "readline_n", "readlines", "iter"):
        # Line-oriented reads must split exactly like a file: each line keeps its "\n".
        assert got["pieces"] == [p.decode() for p in want]
    else:
        # read(n) may legally return fewer bytes than asked; the concatenation must be exact
        # and no piece may exceed n.
        assert "".join(got["pieces"]) == TEXT.decode()
        if mode == "readn":
            assert all(len(p) <= n for p in got["pieces"])
    assert got["types"] == ["bytes"]
    assert got["after_end"] == ["b''", "b''", "b''"], "reading past the end must return b''"


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_empty_body_reads_as_empty(reader, framing):
    for mode in ("read", "readline", "readlines", "iter"):
        got = post(reader, mode, b"", framing)
        assert got["len"] == 0 and got["after_end"] == ["b''", "b''", "b''"]


def test_get_without_body_reads_as_empty(reader):
    with Conn.open(reader.port) as c:
        c.send(request_bytes("GET", "/read"))
        got = json.loads(c.read_response().body)
    assert got["len"] == 0


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("mode,n", [("readline", 0), ("iter", 0), ("readn", 1000),
                                    ("readline_n", 100)])
def test_large_body_read_in_lines_and_pieces_is_byte_exact(reader, mode, n, framing):
    rnd = random.Random(7)
    lines = [bytes(rnd.choice(b"abcdefgh ") for _ in range(rnd.randrange(0, 300))) + b"\n"
             for _ in range(8000)]
    body = b"".join(lines) + b"tail without newline"
    got = post(reader, mode, body, framing, n=n or 8192, chunk=4093)
    assert (got["len"], got["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())
    if mode != "readn":  # line reads split exactly like a file; read(n) may return less
        assert got["count"] == len(reference(mode, body, n or 8192))


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("mode,n", [("readinto", 1000), ("readinto", 70000),
                                    ("readinto_array", 4096), ("mixed", 100),
                                    ("mixed", 65536), ("readn", 65536)])
def test_reads_into_sized_buffers_are_byte_exact(reader, mode, n, framing):
    """read(n) fills a bytes of its final size in place and readinto() the caller's buffer:
    every byte lands once, in order, whichever way the body came in."""
    rnd = random.Random(n)
    lines = [bytes(rnd.choice(b"abcdefgh ") for _ in range(rnd.randrange(0, 3000))) + b"\n"
             for _ in range(700)]
    body = b"".join(lines) + b"tail without newline"
    got = post(reader, mode, body, framing, n=n, chunk=5000)
    assert (got["len"], got["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())
    assert got["after_end"] == ["b''", "b''", "b''"]
    if mode == "readn":
        # read(n) returns n bytes until the body ends, in both framings.
        assert got["count"] == -(-len(body) // n)


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("mode,n", [("read", 0), ("readn", 65536), ("readinto", 70000),
                                    ("mixed", 65536), ("readline", 0)])
def test_large_bodies_read_ahead_are_byte_exact(reader, mode, n, framing):
    """A Content-Length body past 256 KiB with 1 MiB still to come is read ahead of the app by a
    thread of its own; line reads after sized reads take over what it read."""
    rnd = random.Random(3)
    body = b"".join(bytes(rnd.getrandbits(8) for _ in range(1000)) + b"\n" for _ in range(3000))
    got = post(reader, mode, body, framing, n=n or 8192, chunk=65536)
    assert (got["len"], got["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())
    assert got["after_end"] == ["b''", "b''", "b''"]


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("mode,size,n", [("readn", 5 * 2**20 + 1, 65536),
                                         ("readn", 3 * 2**20 - 7, 300_000),
                                         ("readn_slow", 5 * 2**20 + 3, 65536),
                                         ("readn_slow", 2 * 2**20, 1_000_000),
                                         ("read", 6 * 2**20 + 5, 0)])
def test_read_ahead_hand_overs_are_byte_exact(reader, mode, size, n, framing):
    """Bodies of several sizes, read in pieces smaller and larger than the reader's blocks, by
    an app faster than the upload (it waits for the reader, and is woken once enough is
    buffered or the socket has nothing more) and by one slower (the reader runs 2 MiB ahead,
    stops, and is woken again once the app has taken most of it): every byte arrives once, in
    order, and a wake-up lost between the two threads would leave the request hanging."""
    rnd = random.Random(size)
    body = rnd.randbytes(size)
    got = post(reader, mode, body, framing, n=n or 8192, chunk=100_003)
    assert (got["len"], got["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())
    assert got["after_end"] == ["b''", "b''", "b''"]
    if mode != "read":
        assert got["count"] == -(-len(body) // n)


SIZE_SCHEDULES = {
    # The lent-bytes sizes (16 KiB to 512 KiB) read over and over, as S8's app reads.
    "one size": "65536",
    "sizes in turn": "65536,65536,16384,16383,524288,524289,1,100000,65536,65536,65536",
    "changing": "20000,20000,20000,20000,300000,300000,300000,8192",
    # The largest lent sizes: a lent `bytes` partly filled may hold more than the reader
    # resumes at.
    "large": "1048576",
    "large, odd": "600001",
}


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("schedule", list(SIZE_SCHEDULES))
@pytest.mark.parametrize("client", ["at once", "in pieces"])
@pytest.mark.parametrize("app", ["fast", "slow", "line"])
def test_read_n_of_every_size_is_byte_exact_read_ahead(reader, framing, schedule, client, app):
    """A large body read by read(n) of sizes in and out of the range served by the `bytes`
    lent to the reader thread (Content-Length; chunked bodies go the copying way), the size
    changing or not, by an app faster or slower than the upload, with a readline() between
    sized reads, and a client that sends the body at once or in pieces with pauses (the reader
    then hands a partly filled `bytes` over to an app that waits): every byte arrives once, in
    order, and every read(n) but the last returns n bytes."""
    size = 5 * 2**20 + 12345
    body = random.Random(size).randbytes(size)
    query = f"sizes={SIZE_SCHEDULES[schedule]}"
    query += {"fast": "", "slow": "&slow=3", "line": "&line_at=40"}[app]
    if framing == "chunked":
        head = request_bytes("POST", f"/sizes?{query}", headers=[("Transfer-Encoding", "chunked")])
        wire = chunked(body, 100_003)
    else:
        head = request_bytes("POST", f"/sizes?{query}", headers=[("Content-Length", str(size))])
        wire = body
    with Conn.open(reader.port) as c:
        c.send(head)
        if client == "at once":
            c.send(wire)
        else:
            for i, at in enumerate(range(0, len(wire), 50_001)):
                c.send(wire[at:at + 50_001])
                if i % 8 == 0:
                    time.sleep(0.002)
        resp = c.read_response()
    assert resp.status == 200, resp.body[:1000]
    got = json.loads(resp.body)
    assert (got["len"], got["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())
    assert got["short"] == 0
    assert got["after_end"] == ["b''", "b''", "b''"]


def outcome_of(reader, mode: str, headers, after_head: bytes, shut_write: bool) -> str:
    """Send body_reader a POST whose head has `headers` and whose bytes after the head are
    `after_head` (half-closing after them if asked); the outcome its log line reports."""
    tok = uuid.uuid4().hex
    raw = request_bytes("POST", f"/{mode}?n=65536", headers=headers + [("X-Token", tok)])
    mark = reader.log_mark()
    with Conn.open(reader.port) as c:
        c.send(raw + after_head)
        if shut_write:
            c.sock.shutdown(socket.SHUT_WR)
        m = reader.wait_log(rf"body_reader token={tok} outcome=(\w+)", since=mark)
        return m.group(1)


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("mode", ["read", "readn", "mixed"])
def test_large_body_cut_short_raises_in_the_app(reader, mode, framing):
    """2 MiB of a body that never ends (3 MiB declared; or no last chunk), then the client
    half-closes: the app's read raises, whether the body was read ahead or not."""
    if framing == "chunked":
        headers = [("Transfer-Encoding", "chunked")]
        after_head = chunked(b"x" * (2 << 20), 65536)[:-5]  # without "0\r\n\r\n"
    else:
        headers, after_head = [("Content-Length", str(3 << 20))], b"x" * (2 << 20)
    assert outcome_of(reader, mode, headers, after_head, shut_write=True) == "error"


@pytest.mark.parametrize("mode", ["read", "readn"])
def test_bad_chunk_framing_deep_in_a_large_body_fails_the_read(reader, mode):
    """A framing error 2 MiB in, found by the reader thread's copy of the decoder and by the
    body's own: the app's read raises, and nothing after it is taken for a request."""
    good = chunked(b"y" * (2 << 20), 65536)[:-5]
    after_head = good + b"zz\r\nabc\r\n0\r\n\r\n"
    assert outcome_of(reader, mode, [("Transfer-Encoding", "chunked")], after_head,
                      shut_write=False) == "error"


def test_a_large_body_left_unread_does_not_spill_into_the_next_request(reader):
    """The app reads 100 KiB of 3 MiB and answers: whatever was read ahead belongs to this
    body, and the next request on the connection is parsed from its own bytes."""
    body = bytes(range(256)) * (3 * 4096)
    with Conn.open(reader.port) as c:
        c.send(request_bytes("POST", "/read_sized?n=400000", body=body)
               + request_bytes("POST", "/read", body=b"second"))
        first = c.read_response()
        assert first.status == 200 and json.loads(first.body)["len"] == 400000
        try:
            second = c.read_response()
        except (Closed, Truncated):
            return  # closing instead of draining 2.6 MiB is allowed
        assert json.loads(second.body)["pieces"] == ["second"]


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("pipelined", [False, True])
def test_the_connection_is_heard_again_after_a_body_read_ahead(reader, pipelined, framing):
    """While a thread reads a large body ahead, the loop stops listening for reads on the
    connection; it must listen again after: a request that comes after the answer
    (the connection idle with the loop, in its epoll set since the first small request), or one
    pipelined behind the body, is answered."""
    body = bytes(range(256)) * (3 * 4096)
    with Conn.open(reader.port) as c:
        c.send(request_bytes("POST", "/read", body=b"first"))
        assert json.loads(c.read_response().body)["pieces"] == ["first"]
        if framing == "chunked":
            # The reader of a chunked body reads past its end: the pipelined request's bytes
            # must come back to the connection whole.
            big = request_bytes("POST", "/read", headers=[("Transfer-Encoding", "chunked")],
                                body=chunked(body, 40000))
        else:
            big = request_bytes("POST", "/read", body=body)
        nxt = request_bytes("POST", "/read", body=b"next")
        c.send(big + nxt if pipelined else big)
        got = json.loads(c.read_response().body)
        assert (got["len"], got["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())
        if not pipelined:
            c.send(nxt)
        assert json.loads(c.read_response().body)["pieces"] == ["next"]


def test_the_rest_of_an_unread_body_is_taken_after_the_answer_not_reset(reader):
    """The app answers after 400 KB of a 3 MiB body, and the rest is too much to drain: the
    server closes after the answer, but half-closes and lingers, reading and dropping what the
    client still sends. A plain close would answer those bytes with a reset (RFC 9112 §9.6):
    the client's send fails, and the reset can destroy the answer before it is read."""
    body = bytes(range(256)) * (3 * 4096)
    head = request_bytes("POST", "/read_sized?n=400000", body=body)[:-len(body)]
    with Conn.open(reader.port) as c:
        c.send(head + body[:500_000])
        first = c.read_response()
        assert first.status == 200 and json.loads(first.body)["len"] == 400000
        assert first.has_token("Connection", "close")
        c.send(body[500_000:])  # raised BrokenPipeError/ConnectionResetError before
        c.sock.shutdown(socket.SHUT_WR)
        assert c.sock.recv(1) == b""


def test_readinto_a_readonly_buffer_is_refused(reader):
    assert post(reader, "readinto_readonly", b"abc", "content-length")["pieces"][0] == "TypeError"


def test_read_larger_than_the_body_returns_only_the_body(reader):
    """read(n) with n past the body must return at the body's end, never wait for (or consume)
    the next pipelined request's bytes."""
    with Conn.open(reader.port) as c:
        c.send(request_bytes("POST", "/read_sized?n=100000", body=b"0123456789")
               + request_bytes("POST", "/read", body=b"second"))
        first = json.loads(c.read_response().body)
        second = json.loads(c.read_response().body)
    assert first["pieces"] == ["0123456789"]
    assert second["pieces"] == ["second"]


def test_body_is_streamed_to_the_app_not_buffered_whole(reader):
    tok = uuid.uuid4().hex
    body = bytes(range(256)) * (4 * 4096)  # 4 MiB
    with Conn.open(reader.port) as c:
        c.send(request_bytes("POST", "/stream_first?n=1000", headers=[
            ("Content-Length", str(len(body))), ("X-Token", tok)]) + body[:65536])
        # The app must see its first 1000 bytes while the client still holds back the rest.
        got_first = reader.wait_marks("first-piece", prefix=tok)
        assert got_first == [f"{tok} 1000"]
        c.send(body[65536:])
        got = json.loads(c.read_response().body)
    assert (got["len"], got["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())


def test_a_body_read_ahead_reaches_the_app_while_the_client_pauses(reader):
    """Past 256 KiB of a large body, a thread reads it ahead of the app, and wakes
    a waiting app only once 512 KiB are buffered (fewer wake-ups), unless the socket has
    nothing more for now: then the app gets what there is. Here the client sends 300 KiB (the
    reader starts, and the app waits for more), then 110 KiB, and waits until the app has read
    all 410; woken only at 512 KiB buffered, it would wait for ever."""
    import time
    tok = uuid.uuid4().hex
    body = bytes(range(256)) * (4 * 4096)  # 4 MiB
    first, sent = 300 * 1024, 410 * 1024
    with Conn.open(reader.port) as c:
        c.send(request_bytes("POST", f"/stream_first?n={sent}", headers=[
            ("Content-Length", str(len(body))), ("X-Token", tok)]) + body[:first])
        time.sleep(0.2)  # lets the app take the first part and wait (not what is asserted)
        c.send(body[first:sent])
        got_first = reader.wait_marks("first-piece", prefix=tok)
        assert got_first == [f"{tok} {sent}"]
        c.send(body[sent:])
        got = json.loads(c.read_response().body)
    assert (got["len"], got["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())


# -- a body cut short by the client ----------------------------------------------------------

@pytest.mark.parametrize("mode", ["read", "readn", "readline", "readlines", "iter"])
@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_body_cut_short_by_client_raises_in_the_app(reader, mode, framing):
    """Regression (7b360a4): EOF after a short read went unseen, and a truncated small body
    reached the app without an error."""
    tok = uuid.uuid4().hex
    if framing == "chunked":
        # A 1000-byte chunk of which only 500 bytes arrive.
        raw = request_bytes("POST", f"/{mode}?n=100", headers=[
            ("Transfer-Encoding", "chunked"), ("X-Token", tok)]) + b"3e8\r\n" + b"x" * 500
    else:
        raw = request_bytes("POST", f"/{mode}?n=100", headers=[
            ("Content-Length", "1000"), ("X-Token", tok)]) + b"x" * 500
    mark = reader.log_mark()
    with Conn.open(reader.port) as c:
        c.send(raw)
        c.sock.shutdown(socket.SHUT_WR)
        m = reader.wait_log(rf"body_reader token={tok} outcome=(\w+)", since=mark)
        assert m.group(1) == "error", \
            "the app read a truncated body as if it were complete: " + m.group(0)
        # Whatever the server answers (or not), it is never a success.
        try:
            resp = c.read_response()
        except (Closed, Truncated):
            return
        assert resp.status >= 400, f"a truncated request got {resp.status}"


def test_server_keeps_serving_after_truncated_bodies(reader):
    for _ in range(3):
        with Conn.open(reader.port) as c:
            c.send(request_bytes("POST", "/read", headers=[("Content-Length", "100")]) + b"ab")
            c.sock.shutdown(socket.SHUT_WR)
            try:
                c.read_until_close()
            except ConnectionError:
                pass
    got = post(reader, "read", b"still fine", "content-length")
    assert got["pieces"] == ["still fine"]


@pytest.mark.parametrize("mode,n", [("read", 0), ("readn", 7), ("read_sized", 100000),
                                    ("readline", 0), ("readline_n", 4), ("readlines", 0),
                                    ("iter", 0), ("readinto", 1000), ("readinto_array", 4096),
                                    ("mixed", 100), ("readinto_readonly", 0)])
def test_input_over_http2_reads_as_over_http11(reader, mode, n):
    """One ``wsgi.input`` for both protocols: an HTTP/2 stream's body gives the app the same
    pieces, by every method (``readinto`` included), as an HTTP/1.1 request's."""
    from tests.h2_client import H2Client

    body = TEXT * 40 if mode != "readinto_readonly" else b"abc"
    want = post(reader, mode, body, "content-length", n=n or 8192)
    c = H2Client(reader.port)
    try:
        sid = c.request("POST", f"/{mode}?n={n or 8192}", body=body,
                        headers=[("content-length", str(len(body)))])
        (r,) = c.responses([sid])
    finally:
        c.close()
    assert r.status == 200, bytes(r.body)[:1000]
    assert json.loads(bytes(r.body)) == want
