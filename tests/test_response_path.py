"""The response path, end to end over real sockets.

1. Bare bytes/bytearray/memoryview bodies: byte-exact with a computed Content-Length, one
   warning per process naming the app; a str block is a 500 before headers, a truncated
   response after.
2. Known length: lists and tuples get a Content-Length; the 15-header ``pong`` leaves in one
   send syscall (strace) and one TCP segment (tcpdump, ``benchmarks/segments.sh``).
3. Large bodies to a slow reader: the received bytes are a prefix of the body, the only app
   thread is free while the client stalls, and RSS grows by at most about one body. To a fast
   reader: a request on another connection is answered within a few of the loop's turns.
4. Streaming generators: byte-exact chunked and close-delimited bodies, blocks that arrive
   while the app waits (SSE), a bytearray the app refills after yielding it (sent as yielded:
   regression for the zero-copy bytearray of c18c636, fixed in f8ccf95), backpressure (the app
   is not drained ahead of the client).
5. ``wsgi.file_wrapper``: regular files with and without Content-Length, from a non-zero
   position, shorter or longer Content-Length, HEAD, BytesIO, iteration by middleware, and the
   file closed on every path.
6. Client gone: the iterable is closed, the server keeps serving, no ERROR is logged.

The fixture app is ``tests/apps/response_path.py`` (one app, modes by path). Waits are on
events the app records in the state dir (marks, gates) or on bytes arriving; every wait is
bounded. Large bodies are checked as they arrive (``Conn.read_exact_into``), never held.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.apps.response_path import (MIXED_SIZES, PONG_HEADERS, SSE_FIRST, SSE_REST,
                                      flood_block, pattern, sse_second, stream_blocks)
from tests.helpers import wait_for
from tests.http_util import TIMEOUT, Conn, Truncated, WaitTimeout, assert_still_serving, request_bytes
from tests.strace_util import straced

ROOT = Path(__file__).resolve().parent.parent
APP = "response_path"
MiB = 1 << 20
BIG = 64 * MiB
S1_SIZE = 688_128
ERROR_RE = re.compile(r"\[(ERROR|CRITICAL)\]|Traceback|panicked")


@pytest.fixture(scope="module")
def srv(servers):
    return servers.get(APP)


def token() -> str:
    return uuid.uuid4().hex[:12]


@functools.lru_cache(maxsize=None)
def pattern_sha256(n: int) -> str:
    return hashlib.sha256(pattern(n)).hexdigest()


def log_barrier(server, since: int) -> None:
    """Make sure every log line caused by the requests so far has reached ``server``'s log:
    ask for a request that logs an ERROR line, and wait for it (stderr is one ordered
    stream). Only for private servers (it adds an ERROR line)."""
    t = token()
    with Conn.open(server.port) as c:
        c.send(request_bytes("GET", f"/yield_str?barrier={t}"))
        assert c.read_response().status == 500
    server.wait_log(re.escape(f"GET /yield_str?barrier={t}"), since=since)


def errors_between(server, since: int) -> list:
    """ERROR-level lines (and tracebacks) logged after `since`, ignoring log_barrier's own."""
    return [line for line in server.log_since(since).splitlines()
            if ERROR_RE.search(line) and "barrier=" not in line]


def vm_rss(pid: int) -> int:
    """Resident set size of process `pid`, in bytes (from /proc/PID/status)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS in /proc/{pid}/status")


class PatternCheck:
    """A sink for Conn.read_exact_into: checks that the bytes are the next ones of `expected`
    (a function (start, n) -> bytes), and counts them."""

    def __init__(self, expected):
        self.expected, self.pos = expected, 0

    def __call__(self, piece: bytes) -> None:
        want = self.expected(self.pos, len(piece))
        if piece != want:
            i = next(k for k in range(len(piece)) if piece[k] != want[k])
            raise AssertionError(f"body differs at byte {self.pos + i}: got "
                                 f"{piece[i:i + 16]!r}, expected {want[i:i + 16]!r}")
        self.pos += len(piece)


# -- 1. bare bytes, bytearray, memoryview -----------------------------------------------------

@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview"])
@pytest.mark.parametrize("size", [0, 1, S1_SIZE])
def test_bare_body_is_sent_whole_with_content_length(srv, kind, size):
    with Conn.open(srv.port) as c:
        # A second request on the same connection proves nothing was sent past the body.
        c.send(request_bytes("GET", f"/bare?type={kind}&size={size}")
               + request_bytes("GET", "/pong"))
        resp = c.read_response()
        assert resp.status == 200
        assert resp.header_all("Content-Length") == [str(size)], \
            f"a bare {kind} body must get its Content-Length: {resp.raw_head!r}"
        assert resp.framing == "length"
        assert resp.body == pattern(size), f"bare {kind} body of {size} bytes is not byte-exact"
        nxt = c.read_response()
        assert (nxt.status, nxt.body) == (200, b"pong")


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview"])
def test_bare_64mib_body_is_byte_exact(srv, kind):
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", f"/bare?type={kind}&size={BIG}"))
        head = c.read_head()
        assert head.status == 200
        assert head.header_all("Content-Length") == [str(BIG)]
        h = hashlib.sha256()
        c.read_exact_into(BIG, h.update, timeout=30)
    assert h.hexdigest() == pattern_sha256(BIG), f"64 MiB bare {kind} body differs"


def test_bare_strided_memoryview_is_sent_as_its_bytes(srv):
    """A non-contiguous memoryview is a bytes-like object too: its logical bytes are sent."""
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/bare?type=strided&size=100003"))
        resp = c.read_response()
    assert resp.status == 200 and resp.header("Content-Length") == "100003"
    assert resp.body == pattern(100003)


def test_bare_body_warning_is_logged_once_and_names_the_app(start_server):
    server = start_server(APP)
    mark = server.log_mark()
    for kind in ["bytes", "bytearray", "memoryview"] * 3:
        with Conn.open(server.port) as c:
            c.send(request_bytes("GET", f"/bare?type={kind}&size=10"))
            assert c.read_response().body == pattern(10)
    log_barrier(server, mark)
    warnings = [line for line in server.log_since(mark).splitlines() if "bare" in line]
    assert len(warnings) == 1, f"expected one bare-body warning for 9 requests, got {warnings}"
    assert "[WARNING]" in warnings[0]
    # The app as the operator named it (module and attribute), not an object repr.
    assert "response_path" in warnings[0], \
        f"the bare-body warning does not say which app: {warnings[0]!r}"


def test_str_first_block_gives_500_and_the_log_names_str(srv):
    mark = srv.log_mark()
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/yield_str"))
        resp = c.read_response()
    assert resp.status == 500
    assert b"a str block" not in resp.body
    srv.wait_log(r"\[ERROR\].*GET /yield_str\b.*\bstr\b", since=mark)
    assert_still_serving(srv.port, "/pong", b"pong")


def test_str_block_in_a_list_gives_500_and_the_log_names_str(srv):
    mark = srv.log_mark()
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/list_str"))
        resp = c.read_response()
    assert resp.status == 500 and b"a str block" not in resp.body
    srv.wait_log(r"\[ERROR\].*GET /list_str\b.*\bstr\b", since=mark)
    assert_still_serving(srv.port, "/pong", b"pong")


def test_str_block_after_the_first_block_truncates_the_response(srv):
    mark = srv.log_mark()
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/yield_str_after"))
        head = c.read_head()
        assert head.status == 200 and head.header("Transfer-Encoding") == "chunked"
        raw = c.read_until_close()
    assert b"first block" in raw and b"a str block" not in raw
    assert not raw.endswith(b"0\r\n\r\n"), \
        f"the response was completed with the last chunk after a str block: {raw!r}"
    srv.wait_log(r"\[ERROR\].*GET /yield_str_after\b.*\bstr\b", since=mark)
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/yield_str_after"))
        with pytest.raises(Truncated):
            c.read_response()
    assert_still_serving(srv.port, "/pong", b"pong")


# -- 2. known length: lists, tuples, one syscall, one segment ---------------------------------

@pytest.mark.parametrize("version", ["HTTP/1.1", "HTTP/1.0"])
@pytest.mark.parametrize("kind", ["list", "tuple"])
@pytest.mark.parametrize("size,parts", [(0, 1), (10, 3), (S1_SIZE, 7), (3 * MiB + 5, 4)])
def test_list_or_tuple_body_gets_a_computed_content_length(srv, kind, version, size, parts):
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", f"/{kind}?size={size}&parts={parts}", version=version))
        resp = c.read_response()
    assert resp.status == 200
    assert resp.header_all("Content-Length") == [str(size)], \
        f"no computed Content-Length for a {kind} body: {resp.raw_head!r}"
    assert resp.header("Transfer-Encoding") is None
    assert resp.body == pattern(size)


def test_list_of_mixed_bytes_like_blocks_is_byte_exact(srv):
    total = sum(MIXED_SIZES)
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/list_mixed"))
        resp = c.read_response()
    assert resp.header_all("Content-Length") == [str(total)]
    assert resp.body == pattern(total)


@pytest.mark.parametrize("target", [f"/bare?type=bytes&size={S1_SIZE}",
                                    f"/list?size={S1_SIZE}&parts=3",
                                    "/stream?sizes=100,20000&repeat=3"])
def test_head_of_a_known_or_streamed_body_sends_no_body(srv, target):
    with Conn.open(srv.port) as c:
        c.send(request_bytes("HEAD", target) + request_bytes("GET", "/pong"))
        resp = c.read_response("HEAD")
        assert resp.status == 200
        if not target.startswith("/stream"):
            assert resp.header("Content-Length") == str(S1_SIZE)
        nxt = c.read_response()  # would be misparsed if any body byte followed the HEAD answer
        assert (nxt.status, nxt.body) == (200, b"pong")


def test_close_of_a_list_subclass_is_called(srv):
    """PEP 3333: if the iterable has a close() method, the server calls it — whatever its
    type. A list subclass with close() takes the known-length path and must still be closed."""
    t = token()
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", f"/list_close?token={t}"))
        resp = c.read_response()
    assert resp.body == b"list with close"
    assert srv.wait_marks("closed", prefix=t, timeout=5) == [f"{t} closed"]


def test_pong_head_and_body_leave_in_one_send_syscall(start_server, tmp_path):
    """Status line, 15 headers and body in ONE send-family syscall: written separately, the
    head and `pong` would be two syscalls (and, with TCP_NODELAY, two TCP segments)."""
    server = start_server(APP)
    assert_still_serving(server.port, "/pong", b"pong")  # warm up: threads and buffers exist before tracing starts
    out = str(tmp_path / "strace.out")
    with straced(server.pid, out):
        with Conn.open(server.port) as c:
            c.send(request_bytes("GET", "/pong"))
            resp = c.read_response()
            assert resp.status == 200 and resp.body == b"pong"
            assert len(resp.headers) >= 15
    text = Path(out).read_text(errors="replace")
    assert server.alive()
    # Lines look like `TID writev(FD, [...], N) = 464` or, when another thread's call cut in,
    # `TID writev(FD, [...] <unfinished ...>` followed later by `TID <... writev resumed>...`.
    call_re = re.compile(r"^\d+\s+(\w+)\((\d+),")
    calls = [(m.group(1), int(m.group(2)), line) for line in text.splitlines()
             if (m := call_re.match(line))]
    with_status = [c for c in calls if "HTTP/1.1 200" in c[2]]
    assert len(with_status) == 1, \
        f"expected one syscall carrying the status line, got {len(with_status)}:\n{text[-3000:]}"
    fd = with_status[0][1]
    on_socket = [c for c in calls if c[1] == fd]
    assert len(on_socket) == 1, (
        f"the response was written with {len(on_socket)} syscalls on fd {fd}, not one:\n"
        + "\n".join(c[2][:300] for c in on_socket))
    line = on_socket[0][2]
    assert "pong" in line.split("HTTP/1.1 200", 1)[1], \
        f"the syscall with the head does not carry the body `pong`: {line[:600]}"


def _segments(port: int, *extra: str) -> dict:
    if not shutil.which("tcpdump"):
        pytest.skip("tcpdump is not installed (./dev test installs it as root)")
    if os.geteuid() != 0:
        pytest.skip("tcpdump on lo needs root")
    proc = subprocess.run([str(ROOT / "benchmarks" / "segments.sh"), f"http://127.0.0.1:{port}/pong",
                           "--requests", "20", *extra], capture_output=True, text=True, timeout=60)
    lines = proc.stdout.strip().splitlines()
    assert lines, f"segments.sh printed nothing; stderr: {proc.stderr}"
    res = json.loads(lines[-1])
    if "skipped" in res:
        pytest.skip(f"segments.sh: {res['skipped']}")
    return res


def test_fifteen_app_headers_arrive_in_order_with_their_values(srv):
    """The app's headers are kept in one buffer with the first eight offsets in place and the
    rest in a vector: all 15 of pong's leave in the app's order, exact, around the
    server's own Date and Server."""
    with Conn.open(srv.port) as c:
        for _ in range(3):
            c.send(request_bytes("GET", "/pong"))
            resp = c.read_response()
            assert resp.status == 200 and resp.body == b"pong"
            got = [(n, v) for n, v in resp.headers if n.lower() not in ("date", "server")]
            assert got == PONG_HEADERS, got


def test_pong_is_one_tcp_segment_per_response(srv):
    """Scenario S4: the 15-header pong leaves as exactly one TCP payload segment, on a
    keep-alive connection and on new connections (benchmarks/segments.sh, tcpdump on lo)."""
    for extra in ([], ["--new-connections"]):
        res = _segments(srv.port, *extra)
        assert res["statuses"] == [200], res
        assert res["segments"] == res["requests"] == 20, \
            f"pong responses took {res['segments_per_response']} TCP segments each " \
            f"({'new connections' if extra else 'keep-alive'}): {res}"


@pytest.mark.parametrize("scheduler", ["adaptive", "pool"])
def test_closing_answer_carries_the_fin_in_its_segment(start_server, scheduler):
    """A request that asks `Connection: close`: the answer and the server's FIN leave in ONE
    segment (the last write holds its segment back for the close, see OutQueue::closing),
    whether the app ran on the loop thread (adaptive: inline) or on a pool thread (its answer
    is held until the loop closes the connection: a close that never came would hang here).
    Without the feature the FIN is a segment of its own after the answer."""
    server = start_server(APP, "--scheduler", scheduler)
    assert_still_serving(server.port, "/pong", b"pong")
    res = _segments(server.port, "--close")
    assert res["statuses"] == [200], res
    assert res["segments"] == res["requests"] == 20, res
    assert res["fin_in_payload_segments"] == 20, \
        f"the FIN did not ride with the answer on {20 - res['fin_in_payload_segments']} of 20 connections: {res}"
    # Keep-alive answers are never held back: the client closes, the FIN is the client's.
    res = _segments(server.port, "--new-connections")
    assert res["segments"] == 20 and res["fin_in_payload_segments"] == 0, res
    assert_still_serving(server.port, "/pong", b"pong")


def test_a_client_that_asked_to_close_is_closed_without_a_half_close(start_server, tmp_path):
    """`Connection: close` from the client (it sends nothing more, RFC 9112 §9.6): the server
    closes with `close` alone, no `shutdown` first (one system call fewer per one-request
    connection; the test above shows the FIN still rides with the answer). A keep-alive
    request the server answers and keeps is neither."""
    server = start_server(APP)
    assert_still_serving(server.port, "/pong", b"pong")
    out = str(tmp_path / "strace.out")
    with straced(server.pid, out, "sendmsg,writev,write,shutdown,close"):
        with Conn.open(server.port) as c:
            c.send(request_bytes("GET", "/pong", headers=[("Connection", "close")]))
            resp = c.read_response()
            assert resp.status == 200 and resp.body == b"pong"
            assert c.sock.recv(1) == b""  # the server closed
    text = Path(out).read_text(errors="replace")
    fds = {int(m.group(1)) for m in re.finditer(r"\b(?:sendmsg|writev|write)\((\d+),.*HTTP/1.1 200", text)}
    assert len(fds) == 1, text[-3000:]
    fd = fds.pop()
    # "close(N)", or "close(N <detached ...>" when strace let go during the call.
    assert re.search(rf"\bclose\({fd}\b", text), text[-3000:]
    assert not re.search(rf"\bshutdown\({fd},", text), text[-3000:]


# -- 3. large bodies to a slow reader ----------------------------------------------------------

SLOW_READ = 64 * 1024
SLOW_PAUSE = 0.01
SLOW_FOR = 2.0


@pytest.mark.parametrize("kind,scheduler", [("bare", "pool"), ("bare", "adaptive"),
                                            ("list", "pool")])
def test_large_body_to_a_slow_reader_holds_no_thread(start_server, kind, scheduler):
    """With ONE app thread, a client reading a 64 MiB body slowly must not hold it: another
    request completes while the slow client has most of the body unread. The bytes it did get
    are the body's prefix, and the server's RSS grows by about one body, not two."""
    server = start_server(APP, "--threads", "1:1", "--scheduler", scheduler)
    assert_still_serving(server.port, "/pong", b"pong")
    rss_before = vm_rss(server.pid)
    target = (f"/bare?type=bytes&size={BIG}" if kind == "bare"
              else f"/list?size={BIG}&parts=1")
    slow = Conn.open(server.port)
    try:
        slow.send(request_bytes("GET", target))
        head = slow.read_head()
        assert head.status == 200 and head.header("Content-Length") == str(BIG)
        # The slow client has read nothing past the head. The only app thread (or the loop
        # thread, inline) must be free: this request completes (bounded wait) meanwhile.
        t = token()
        with Conn.open(server.port) as other:
            other.send(request_bytes("GET", f"/done?token={t}"))
            try:
                resp = other.read_response()
            except WaitTimeout as e:
                raise AssertionError("a second request did not complete while a slow client "
                                     "held a 64 MiB response: the app thread (or the loop) is "
                                     "held by the transfer") from e
            assert resp.body == b"done"
        assert server.marks("done", prefix=t) == [t]
        # Read slowly for a bounded time; every byte must be the next byte of the body.
        check = PatternCheck(lambda start, n: pattern(n, start))
        check(slow.buf)
        slow.buf = b""
        peak = vm_rss(server.pid)
        stop_at = time.monotonic() + SLOW_FOR
        slow.sock.settimeout(TIMEOUT)
        while time.monotonic() < stop_at and check.pos < BIG:
            data = slow.sock.recv(SLOW_READ)
            assert data, f"server closed after {check.pos} of {BIG} body bytes"
            check(data)
            peak = max(peak, vm_rss(server.pid))
            time.sleep(SLOW_PAUSE)  # the client is slow on purpose; not synchronisation
        assert check.pos < BIG // 2, \
            f"the client was not slow ({check.pos} of {BIG} bytes read): the test proves nothing"
        assert check.pos > 0
        # The second request again, now mid-transfer.
        with Conn.open(server.port) as other:
            other.send(request_bytes("GET", "/pong"))
            assert other.read_response().body == b"pong"
    finally:
        slow.close()
    growth = peak - rss_before
    print(f"slow reader: RSS growth {growth / MiB:.1f} MiB, read {check.pos} bytes")
    assert growth < 1.5 * BIG, (f"server RSS grew by {growth / MiB:.1f} MiB while sending a "
                                f"{BIG // MiB} MiB body (more than one copy of it)")
    assert_still_serving(server.port, "/pong", b"pong")


def test_a_request_on_another_connection_is_answered_during_a_fast_download(servers):
    """A client reads a 2 GiB response as fast as it can, so the server's socket does not fill
    and its loop is not told to wait. Once the download is under way, a request on a second
    connection must be answered within a few of the loop's turns: after each connection's
    fair share (4 MiB) the loop looks for new events, not only when the socket is full or
    nothing is left to write.

    Order, not timing: after the second request is sent, the reader reads at most CAP more
    bytes (64 MiB, room for a few turns more on a loaded machine), then stops until the answer
    has come. The old loop answered only when the
    socket happened to fill: measured with a 128 MiB cap, 6 of 8 runs stood at the cap when
    the answer came, the other two were 21 and 45 MiB in. Now it comes 2–5 MiB in. (Large
    bodies are checked byte by byte above; this reader only counts.)"""
    srv = servers.get("big")
    total, under_way, cap = 64 * 32 * MiB, 64 * MiB, 64 * MiB
    fast = Conn.open(srv.port)
    got, stop_at = [0], [total]
    started, answered = threading.Event(), threading.Event()

    def read_all():
        # MSG_TRUNC: on TCP the kernel drops what is read without copying it out, so this
        # reader keeps ahead of the server, which copies every byte in.
        buf = bytearray(64 * MiB)
        fast.sock.settimeout(TIMEOUT)
        while got[0] < total:
            if got[0] >= stop_at[0]:
                answered.wait(TIMEOUT)
                stop_at[0] = total
            want = min(len(buf), stop_at[0] - got[0], total - got[0])
            n = fast.sock.recv_into(buf, want, socket.MSG_TRUNC)
            if not n:
                break
            got[0] += n
            if got[0] >= under_way:
                started.set()
        started.set()

    try:
        fast.send(request_bytes("GET", "/big?mb=32&times=64"))
        head = fast.read_head()
        assert head.status == 200 and head.header("Content-Length") == str(total)
        got[0] = len(fast.buf)
        reader = threading.Thread(target=read_all, daemon=True)
        reader.start()
        assert started.wait(TIMEOUT), f"the download stalled at {got[0]} bytes"
        with Conn.open(srv.port) as other:
            sent_at = got[0]
            stop_at[0] = sent_at + cap
            other.send(request_bytes("GET", "/big?mb=0"))
            resp = other.read_response()
            into = got[0] - sent_at
            answered.set()
        reader.join(timeout=60)
        assert not reader.is_alive(), f"the download stalled at {got[0]} of {total} bytes"
    finally:
        answered.set()
        fast.close()
    print(f"second answer {into / MiB:.1f} MiB into the download after the request")
    assert resp.status == 200 and resp.body == b""
    assert got[0] == total, f"the download ended after {got[0]} of {total} bytes"
    assert into < cap, ("the second connection was answered only once the fast reader had "
                        "stopped: the loop did not look for new events between turns")


# -- 4. streaming generators -------------------------------------------------------------------

STREAMS = [
    ("1,100,16384,1048576", 3),       # varied sizes, both sides of the copy/no-copy threshold
    ("128", 20000),                   # many small blocks (scenario S3): coalesced chunks
    ("7,16385,3,65536,1", 40),        # odd sizes around the thresholds
    # Around the streamed blocks' own threshold (4 KiB: larger ones referenced in the queue
    # shared with the loop, their chunk framing in small segments that small blocks then extend).
    ("4096,4097,8192,100,8192,5", 200),
]


@pytest.mark.parametrize("sizes,repeat", STREAMS)
def test_generator_body_is_byte_exact_chunked(srv, sizes, repeat):
    expected = b"".join(stream_blocks([int(s) for s in sizes.split(",")], repeat))
    with Conn.open(srv.port) as c:
        # Pipelined second request: the chunked body must end exactly at its last chunk.
        c.send(request_bytes("GET", f"/stream?sizes={sizes}&repeat={repeat}")
               + request_bytes("GET", "/pong"))
        resp = c.read_response(timeout=30)
        assert resp.status == 200 and resp.framing == "chunked"
        assert len(resp.body) == len(expected)
        assert resp.body == expected, "streamed body is not byte-exact"
        nxt = c.read_response()
        assert (nxt.status, nxt.body) == (200, b"pong")


@pytest.mark.parametrize("sizes,repeat", STREAMS[:2])
def test_generator_body_on_http10_is_close_delimited_and_exact(srv, sizes, repeat):
    expected = b"".join(stream_blocks([int(s) for s in sizes.split(",")], repeat))
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", f"/stream?sizes={sizes}&repeat={repeat}",
                             version="HTTP/1.0"))
        resp = c.read_response(timeout=30)
    assert resp.status == 200
    assert resp.framing == "close", f"HTTP/1.0 stream not close-delimited: {resp.raw_head!r}"
    assert resp.body == expected


@pytest.mark.parametrize("pad", [0, 16384], ids=["queued", "in-place"])
@pytest.mark.parametrize("version", ["HTTP/1.1", "HTTP/1.0"])
def test_sse_blocks_arrive_while_the_app_waits(srv, version, pad):
    """PEP 3333 streaming: each block is transmitted without waiting for the next. The app
    yields two events then blocks on a gate; both must reach the client BEFORE the test opens
    the gate (no timer, no holding back), then the rest follows. A small second block is copied
    onto the queue the event loop writes; a 16 KiB one is queued as the app's own `bytes`
    (`body_block::queue_block`, a lent segment of `io::out_queue`), which the loop writes from
    that object's buffer while the app waits."""
    t = token()
    second = sse_second(pad)
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", f"/sse?token={t}&pad={pad}", version=version))
        head = c.read_head()
        assert head.status == 200
        deadline = time.monotonic() + TIMEOUT
        while second not in c.buf:
            try:
                c._fill(deadline, "the first two events while the app waits on its gate")
            except WaitTimeout as e:
                raise AssertionError(
                    f"the events the app yielded did not arrive while it waits (got "
                    f"{c.buf!r}); app marks: {srv.marks('sse', t)}") from e
        assert SSE_FIRST in c.buf
        # The app gets to its gate (it records that after the second yield returned) and is
        # still blocked there: the blocks did not wait for it.
        srv.wait_marks("sse", prefix=t)
        assert srv.marks("sse", t) == [f"{t} waiting"]
        srv.open_gate("sse-" + t)
        resp = c.read_body(head)
    assert resp.framing == ("chunked" if version == "HTTP/1.1" else "close")
    assert resp.body == SSE_FIRST + second + SSE_REST
    assert srv.marks("sse", t) == [f"{t} waiting", f"{t} resumed"]


def _produced(server, name: str, t: str) -> int:
    return len(server.marks(name, t + " "))


def _wait_stalled(server, name: str, t: str, total: int, quiet: float = 0.5,
                  timeout: float = TIMEOUT) -> int:
    """The number of blocks the app recorded under `name` once that number stopped changing
    for `quiet` seconds (or reached `total`). An absence-of-progress check (the app blocks
    inside the server): there is no event to await."""
    seen = {"n": -1, "since": time.monotonic()}

    def stalled() -> bool:
        n = _produced(server, name, t)
        if n != seen["n"]:
            seen["n"], seen["since"] = n, time.monotonic()
            return False
        return n >= total or time.monotonic() - seen["since"] >= quiet

    wait_for(stalled, "the app to stop producing against a client that reads nothing",
             timeout, interval=0.05, context=lambda: f"({seen['n']} blocks)")
    return seen["n"]


@pytest.mark.parametrize("view", ["0", "1"], ids=["bytearray", "memoryview"])
def test_a_reused_bytearray_block_is_sent_as_it_was_when_yielded(srv, view):
    """An app that refills one bytearray for every block (the readinto pattern) and yields it:
    each block must reach the client as it was when yielded. A server that keeps a reference
    to the buffer (zero copy) after asking for the next block sends the refilled bytes."""
    t, n = token(), 200
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", f"/reuse_buffer?n={n}&view={view}&token={t}"))
        head = c.read_head()
        assert head.header("Content-Length") == str(n * 65536)
        # Let the app run ahead of the client as far as the server lets it before reading
        # (a server that sends each such block before asking for the next lets it do nothing).
        _wait_stalled(srv, "reuse", t, n)
        blocks = {}

        def expected(start, size):
            out = []
            while size > 0:
                i, off = divmod(start, 65536)
                take = min(size, 65536 - off)
                blocks.setdefault(i, flood_block(i, 65536))
                out.append(blocks[i][off:off + take])
                start, size = start + take, size - take
            return b"".join(out)

        check = PatternCheck(expected)
        c.read_exact_into(n * 65536, check)


FLOOD_N = 4000
FLOOD_BLOCK = 64 * 1024
HIGH_WATER = MiB


def test_backpressure_the_app_is_not_drained_ahead_of_the_client(start_server):
    server = start_server(APP, "--write-high-water", str(HIGH_WATER))
    t = token()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    s.settimeout(TIMEOUT)
    s.connect(("127.0.0.1", server.port))
    c = Conn(s)
    try:
        c.send(request_bytes("GET", f"/flood?token={t}&n={FLOOD_N}&size={FLOOD_BLOCK}"))
        head = c.read_head()
        assert head.status == 200 and head.header("Content-Length") == str(FLOOD_N * FLOOD_BLOCK)
        stalled = _wait_stalled(server, "flood", t, FLOOD_N)
        # What may be in flight without the client reading: the kernel's send buffer (at most
        # tcp_wmem's max), the client's receive buffer, and the high-water mark, in blocks.
        wmem_max = int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
        rcvbuf = s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        bound = (wmem_max + rcvbuf + 2 * HIGH_WATER) // FLOOD_BLOCK + 4
        assert stalled < min(bound, FLOOD_N // 10), (
            f"the app produced {stalled} of {FLOOD_N} 64 KiB blocks for a client that reads "
            f"nothing (bound {bound}): no backpressure")
        # The app's thread waits with the GIL released: other requests are served meanwhile.
        assert_still_serving(server.port, "/pong", b"pong")
        # Now read everything; byte-exact (block i is i % 251 repeated).
        blocks = {}

        def expected(start, n):
            out = []
            while n > 0:
                i, off = divmod(start, FLOOD_BLOCK)
                take = min(n, FLOOD_BLOCK - off)
                if i not in blocks:
                    blocks.clear()
                    blocks[i] = flood_block(i, FLOOD_BLOCK)
                out.append(blocks[i][off:off + take])
                start, n = start + take, n - take
            return b"".join(out)

        check = PatternCheck(expected)
        c.read_exact_into(FLOOD_N * FLOOD_BLOCK, check, timeout=60)
        assert check.pos == FLOOD_N * FLOOD_BLOCK
    finally:
        c.close()
    assert _produced(server, "flood", t) == FLOOD_N


# -- 5. wsgi.file_wrapper ----------------------------------------------------------------------

FW_SIZE = 1 * MiB + 12345


@pytest.mark.parametrize("cl,skip,how,buffered", [
    ("auto", 0, "seek", "0"),
    ("none", 0, "seek", "0"),
    ("auto", 1000, "seek", "0"),
    ("none", 1000, "seek", "0"),
    ("auto", 1000, "read", "0"),
    ("auto", 1000, "read", "1"),   # BufferedReader: the fd is ahead of tell() (read-ahead)
    ("none", 1000, "read", "1"),
    ("none", 4097, "seek", "1"),
])
def test_file_wrapper_regular_file(srv, cl, skip, how, buffered):
    t = token()
    target = f"/fw?size={FW_SIZE}&cl={cl}&skip={skip}&how={how}&buffered={buffered}&token={t}"
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", target) + request_bytes("GET", "/pong"))
        resp = c.read_response()
        assert resp.status == 200
        # Without an app Content-Length the length comes from the file: no chunked framing.
        assert resp.framing == "length", f"file_wrapper body framed as {resp.framing}"
        assert resp.header("Content-Length") == str(FW_SIZE - skip)
        assert resp.body == pattern(FW_SIZE)[skip:], \
            f"file_wrapper body (from position {skip}) is not byte-exact"
        assert c.read_response().body == b"pong"
    assert srv.wait_marks("file-closed", prefix=t) == [t]


def test_file_wrapper_sends_exactly_the_apps_content_length(srv):
    t = token()
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", f"/fw?size={FW_SIZE}&cl=5000&skip=1000&token={t}")
               + request_bytes("GET", "/pong"))
        resp = c.read_response()
        assert resp.header("Content-Length") == "5000"
        assert resp.body == pattern(FW_SIZE)[1000:6000]
        nxt = c.read_response()  # the next response starts right after the 5,000 bytes
        assert (nxt.status, nxt.body) == (200, b"pong")
    assert srv.wait_marks("file-closed", prefix=t) == [t]


def test_file_wrapper_content_length_beyond_the_file_is_a_truncated_response(srv):
    t = token()
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", f"/fw?size=10000&cl=20000&token={t}"))
        with pytest.raises(Truncated) as info:
            c.read_response()
    assert info.value.partial == pattern(10000)
    assert srv.wait_marks("file-closed", prefix=t) == [t]
    assert_still_serving(srv.port, "/pong", b"pong")


@pytest.mark.parametrize("cl", ["auto", "none"])
def test_file_wrapper_head_sends_no_body(srv, cl):
    t = token()
    with Conn.open(srv.port) as c:
        c.send(request_bytes("HEAD", f"/fw?size={FW_SIZE}&cl={cl}&token={t}")
               + request_bytes("GET", "/pong"))
        resp = c.read_response("HEAD")
        assert resp.status == 200
        if cl == "auto":
            assert resp.header("Content-Length") == str(FW_SIZE)
        nxt = c.read_response()  # no body bytes between the HEAD answer and this one
        assert (nxt.status, nxt.body) == (200, b"pong"), \
            f"bytes after a HEAD answer: {nxt.raw_head[:100]!r}"
    assert srv.wait_marks("file-closed", prefix=t) == [t]


@pytest.mark.parametrize("cl", ["none", "auto"])
@pytest.mark.parametrize("version", ["HTTP/1.1", "HTTP/1.0"])
def test_file_wrapper_over_bytesio_is_iterated(srv, cl, version):
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", f"/fw_bytesio?size=250001&cl={cl}", version=version))
        resp = c.read_response()
    assert resp.status == 200
    assert resp.body == pattern(250001)


def test_file_wrapper_over_a_readinto_file_like_reuses_one_large_buffer(srv):
    # Other file-likes are read with readinto into large reused buffers.
    t = uuid.uuid4().hex
    n = 3 * 256 * 1024 + 12345
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", f"/fw_readinto?size={n}&token={t}"))
        resp = c.read_response()
    assert resp.status == 200 and resp.body == pattern(n)
    calls = [line.split() for line in srv.wait_marks("readinto", count=5, prefix=t)]
    assert len({buf_id for _, buf_id, _ in calls}) == 1, "a new buffer for each read"
    assert all(int(size) >= 256 * 1024 for _, _, size in calls), calls
    # 4 reads carry data, the last one says end of file: not one read per 1000-byte blksize.
    assert len(calls) == 5, calls


def test_file_wrapper_over_a_pipe_is_iterated(srv):
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/fw_pipe?size=50000"))
        resp = c.read_response()
    assert resp.status == 200 and resp.body == pattern(50000)


def test_file_wrapper_iterated_by_python_middleware(srv):
    t = token()
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", f"/fw_middleware?size={FW_SIZE}&skip=1000&cl=none"
                                    f"&blksize=4096&token={t}"))
        resp = c.read_response()
    assert resp.status == 200
    assert resp.body == pattern(FW_SIZE)[1000:]
    assert srv.wait_marks("file-closed", prefix=t) == [t]


def test_file_wrapper_is_closed_before_a_non_reading_client_gets_the_body(srv):
    """The file's close() does not wait for a slow client (the thread is freed), and closing
    the app's file does not cut the transfer: the whole body still arrives, exact."""
    t = token()
    size = 32 * MiB
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", f"/fw?size={size}&cl=none&token={t}"))
        head = c.read_head()
        assert head.header("Content-Length") == str(size)
        # Nothing read past the head yet (32 MiB cannot fit in the socket buffers).
        srv.wait_marks("file-closed", prefix=t)
        h = hashlib.sha256()
        c.read_exact_into(size, h.update, timeout=30)
    assert h.hexdigest() == pattern_sha256(size)


# -- 6. client gone ----------------------------------------------------------------------------

def _hang_up(c: Conn, reset: bool) -> None:
    if reset:  # RST instead of FIN
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()


@pytest.mark.parametrize("reset", [False, True], ids=["fin", "rst"])
def test_client_gone_mid_stream_closes_the_iterable_without_error(start_server, reset):
    """One app thread: after the client hangs up, the iterable is closed and that thread is
    free again (the next request is served), and nothing is logged as an error."""
    server = start_server(APP, "--threads", "1:1", "--scheduler", "pool")
    mark = server.log_mark()
    t = token()
    c = Conn.open(server.port)
    c.send(request_bytes("GET", f"/tracked_stream?token={t}"))
    head = c.read_head()
    assert head.status == 200
    c.recv_at_least(100_000)  # into the body
    _hang_up(c, reset)
    closed = server.wait_marks("closed", prefix=t)
    yielded = int(closed[0].split("yielded=")[1])
    assert yielded < 16384, "the server iterated the whole 1 GiB body for a client that left"
    assert_still_serving(server.port, "/pong", b"pong")
    log_barrier(server, mark)
    assert errors_between(server, mark) == [], \
        "a client hanging up was logged as a server error:\n" + server.log_since(mark)


@pytest.mark.parametrize("what", ["fw", "bare", "list"])
def test_client_gone_during_a_large_body_is_not_an_error(start_server, what):
    server = start_server(APP)
    mark = server.log_mark()
    t = token()
    target = {"fw": f"/fw?size={32 * MiB}&token={t}",
              "bare": f"/bare?type=memoryview&size={BIG}",
              "list": f"/list?size={BIG}&parts=3"}[what]
    c = Conn.open(server.port)
    c.send(request_bytes("GET", target))
    assert c.read_head().status == 200
    c.recv_at_least(100_000)
    _hang_up(c, reset=True)
    if what == "fw":
        assert server.wait_marks("file-closed", prefix=t) == [t]
    assert_still_serving(server.port, "/pong", b"pong")
    log_barrier(server, mark)
    assert errors_between(server, mark) == [], \
        "a client hanging up was logged as a server error:\n" + server.log_since(mark)
