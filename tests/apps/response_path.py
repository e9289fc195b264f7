"""The response path: what the app returns and how it must reach the client.

One app, modes chosen by path; ``token`` (query) tags what the app records under the state dir
so tests sharing a server never read each other's marks. Bodies are deterministic patterns
(``pattern(n)``: ``bytes(range(251))`` repeated, a prime period so block boundaries never line
up with it), so tests check them byte for byte without storing a copy.

Bare and known-length bodies:
- ``/bare?type=bytes|bytearray|memoryview|strided&size=N``: returns the object itself, not an
  iterable of bytes (``strided`` is a non-contiguous memoryview over 2N bytes, every other one).
- ``/list?size=N&parts=K`` and ``/tuple?...``: the body cut into K parts (plus empty parts in
  between), no Content-Length: the server must compute it.
- ``/list_mixed``: ``[bytes, bytearray, memoryview, large bytearray, large memoryview]``
  (``MIXED_SIZES``), consecutive pieces of the pattern.
- ``/list_close?token=T``: a list subclass with a ``close()`` (records ``T closed`` under mark
  ``closed``): PEP 3333 says any iterable's close() is called.
- ``/pong``: scenario S4, body ``pong`` with 15 headers (one TCP segment, one syscall).
- ``/done?token=T``: records ``T`` under mark ``done`` and answers ``done``.

Not bytes:
- ``/yield_str``: a generator whose first block is a str (nothing sent yet: 500).
- ``/yield_str_after``: yields ``b"first block"``, then a str (headers sent: truncated).
- ``/list_str``: ``[b"ok", "str"]`` (a known-length body with a str in it: 500).

Streaming:
- ``/stream?sizes=S1,S2,...&repeat=R``: a generator of the blocks ``piece(k, S)`` (block k of
  the pattern, see ``stream_body``), no Content-Length.
- ``/sse?token=T&pad=P``: yields ``SSE_FIRST`` and ``sse_second(P)`` (``SSE_SECOND`` and, with
  P > 0, a comment line of P bytes; both go through the queue the event loop drains, a small
  block copied, a large one referenced), records ``T waiting`` under ``sse``, waits on the gate ``sse-T``,
  records ``T resumed``, yields ``SSE_REST``.
- ``/flood?token=T&n=N&size=S``: Content-Length N*S; block i is S copies of ``i % 251``; records
  ``T i`` under mark ``flood`` just before yielding block i.
- ``/reuse_buffer?n=N&view=0|1&token=T``: ONE 64 KiB bytearray refilled for every block
  (block i is ``flood_block(i)``) and yielded (as a memoryview with ``view=1``): the
  ``readinto`` pattern; records ``T i`` under ``reuse`` before refilling it for block i.
- ``/tracked_stream?token=T``: up to 16,384 blocks of 64 KiB (1 GiB), no Content-Length, an
  iterable whose close() records ``T yielded=K`` under ``closed``.

wsgi.file_wrapper (the file is ``pattern(size)`` on disk; its close is recorded as ``T`` under
``file-closed``):
- ``/fw?size=N&cl=auto|none|K&skip=P&how=seek|read&buffered=0|1&token=T``: the file positioned
  at P (by ``seek(P)`` or by ``read(P)``, on a raw ``FileIO`` or a ``BufferedReader``);
  ``cl=auto`` sets Content-Length to the bytes left, ``none`` sets none, a number sets it.
- ``/fw_bytesio?size=N&cl=auto|none``: an ``io.BytesIO`` (no descriptor: iterated).
- ``/fw_readinto?size=N&token=T``: a file-like with ``readinto`` (no descriptor) that records
  each call as ``T <id(buffer)> <len(buffer)>`` under mark ``readinto``.
- ``/fw_pipe?size=N``: a pipe's read end (a descriptor, but not a regular file: iterated);
  N must fit in the pipe buffer (64 KiB).
- ``/fw_middleware?size=N&token=T``: the ``/fw`` response passed through a Python middleware
  that iterates the wrapper (``for block in ...``) and calls its close().
"""

import io
import os

from tests.apps._state import STATE_DIR, mark, query, wait_gate

PERIOD = bytes(range(251))

SSE_FIRST = b"data: first\n\n"
SSE_SECOND = b"data: second\n\n"
SSE_REST = b"data: rest\n\n"


def sse_second(pad: int) -> bytes:
    """The second event of ``/sse``: with ``pad``, followed by a comment line that long."""
    return SSE_SECOND + (b":" + b"p" * (pad - 3) + b"\n\n" if pad else b"")

PONG_HEADERS = [
    ("Content-Type", "text/plain"),
    ("Content-Length", "4"),
    ("Cache-Control", "no-cache, no-store, must-revalidate"),
    ("Pragma", "no-cache"),
    ("Expires", "0"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("X-XSS-Protection", "1; mode=block"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Health-Check", "ok"),
    ("X-Service", "sluicegate-test"),
    ("X-Instance", "test-1"),
    ("X-Request-Cost", "1"),
    ("Vary", "Accept-Encoding"),
    ("X-Extra-Header-15", "fifteen"),
]
assert len(PONG_HEADERS) == 15

TRACKED_BLOCK = b"z" * 65536
MIXED_SIZES = (10, 20, 30, 100_000, 200_000)


def pattern(n: int, start: int = 0) -> bytes:
    """Bytes [start, start+n) of the infinite repetition of PERIOD."""
    if n <= 0:
        return b""
    s = start % len(PERIOD)
    reps = (s + n) // len(PERIOD) + 1
    return (PERIOD * reps)[s:s + n]


def stream_blocks(sizes, repeat=1):
    """The blocks /stream yields: consecutive pieces of the pattern."""
    pos = 0
    for _ in range(repeat):
        for s in sizes:
            yield pattern(s, pos)
            pos += s


def flood_block(i: int, size: int) -> bytes:
    return bytes([i % 251]) * size


class TrackedFile(io.FileIO):
    token = "-"

    def close(self):
        if not self.closed:
            mark("file-closed", self.token)
        super().close()


class ClosingList(list):
    token = "-"

    def close(self):
        mark("closed", f"{self.token} closed")


class TrackedStream:
    def __init__(self, token, blocks):
        self.token, self.blocks, self.i = token, blocks, 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.blocks:
            raise StopIteration
        self.i += 1
        return TRACKED_BLOCK

    def close(self):
        mark("closed", f"{self.token} yielded={self.i}")


def file_path(n: int) -> str:
    path = os.path.join(STATE_DIR, f"rp-file-{n}.bin")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.{id(path)}.tmp"
        with open(tmp, "wb") as f:
            f.write(pattern(n))
        os.replace(tmp, path)
    return path


def _bare(kind: str, n: int):
    body = pattern(n)
    if kind == "bytes":
        return body
    if kind == "bytearray":
        return bytearray(body)
    if kind == "memoryview":
        return memoryview(body)
    if kind == "strided":
        doubled = bytearray(2 * n)
        doubled[::2] = body
        return memoryview(doubled)[::2]
    raise ValueError(kind)


def _parts(body: bytes, k: int):
    step = max(1, -(-len(body) // max(k, 1)))
    out = [b""]
    for i in range(0, len(body), step):
        out += [body[i:i + step], b""]
    return out


def _fw(environ, start_response, q):
    n = int(q.get("size", "100000"))
    skip = int(q.get("skip", "0"))
    raw = TrackedFile(file_path(n), "r")
    raw.token = q.get("token", "-")
    f = io.BufferedReader(raw) if q.get("buffered", "0") == "1" else raw
    if skip:
        if q.get("how", "seek") == "read":
            assert len(f.read(skip)) == skip
        else:
            f.seek(skip)
    headers = [("Content-Type", "application/octet-stream")]
    cl = q.get("cl", "auto")
    if cl == "auto":
        headers.append(("Content-Length", str(n - skip)))
    elif cl != "none":
        headers.append(("Content-Length", cl))
    start_response("200 OK", headers)
    return environ["wsgi.file_wrapper"](f, int(q.get("blksize", "65536")))


def app(environ, start_response):
    path = environ["PATH_INFO"]
    q = query(environ)
    token = q.get("token", "-")
    octet = [("Content-Type", "application/octet-stream")]

    if path == "/bare":
        start_response("200 OK", octet)
        return _bare(q.get("type", "bytes"), int(q.get("size", "1000")))
    if path in ("/list", "/tuple"):
        start_response("200 OK", octet)
        parts = _parts(pattern(int(q.get("size", "1000"))), int(q.get("parts", "3")))
        return parts if path == "/list" else tuple(parts)
    if path == "/list_mixed":
        start_response("200 OK", octet)
        pieces, pos = [], 0
        for n in MIXED_SIZES:
            pieces.append(pattern(n, pos))
            pos += n
        a, b, c, d, e = pieces
        return [a, bytearray(b), memoryview(c), bytearray(d), memoryview(e)]
    if path == "/list_close":
        start_response("200 OK", [("Content-Type", "text/plain")])
        body = ClosingList([b"list ", b"with close"])
        body.token = token
        return body
    if path == "/pong":
        start_response("200 OK", PONG_HEADERS)
        return [b"pong"]
    if path == "/done":
        mark("done", token)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"done"]

    if path == "/yield_str":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return (s for s in ["a str block"])
    if path == "/yield_str_after":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return (s for s in [b"first block", "a str block"])
    if path == "/list_str":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok", "a str block"]

    if path == "/stream":
        sizes = [int(s) for s in q.get("sizes", "1,100,16384,1048576").split(",")]
        start_response("200 OK", octet)
        return stream_blocks(sizes, int(q.get("repeat", "1")))
    if path == "/sse":
        start_response("200 OK", [("Content-Type", "text/event-stream"),
                                  ("Cache-Control", "no-cache")])

        second = sse_second(int(q.get("pad", "0")))

        def events():
            yield SSE_FIRST
            yield second
            mark("sse", f"{token} waiting")
            wait_gate("sse-" + token)
            mark("sse", f"{token} resumed")
            yield SSE_REST
        return events()
    if path == "/flood":
        n, size = int(q.get("n", "4000")), int(q.get("size", "65536"))
        start_response("200 OK", octet + [("Content-Length", str(n * size))])

        def flood():
            for i in range(n):
                mark("flood", f"{token} {i}")
                yield flood_block(i, size)
        return flood()
    if path == "/reuse_buffer":
        n, view = int(q.get("n", "200")), q.get("view", "0") == "1"
        start_response("200 OK", octet + [("Content-Length", str(n * 65536))])

        def refill():
            buf = bytearray(65536)
            for i in range(n):
                mark("reuse", f"{token} {i}")
                buf[:] = flood_block(i, 65536)
                yield memoryview(buf) if view else buf
        return refill()
    if path == "/tracked_stream":
        start_response("200 OK", octet)
        return TrackedStream(token, 16384)

    if path == "/fw":
        return _fw(environ, start_response, q)
    if path == "/fw_bytesio":
        n = int(q.get("size", "100000"))
        headers = list(octet)
        if q.get("cl", "none") == "auto":
            headers.append(("Content-Length", str(n)))
        start_response("200 OK", headers)
        return environ["wsgi.file_wrapper"](io.BytesIO(pattern(n)), 1000)
    if path == "/fw_readinto":
        n = int(q.get("size", "100000"))
        token = q.get("token", "-")
        source = io.BytesIO(pattern(n))

        class RecordingReader:
            """Only readinto (and close): how the server reads it is what the test checks."""

            def readinto(self, b):
                mark("readinto", f"{token} {id(b)} {len(b)}")
                return source.readinto(b)

            def close(self):
                source.close()

        start_response("200 OK", list(octet))
        return environ["wsgi.file_wrapper"](RecordingReader(), 1000)
    if path == "/fw_pipe":
        n = int(q.get("size", "50000"))
        r, w = os.pipe()
        os.write(w, pattern(n))
        os.close(w)
        start_response("200 OK", octet)
        return environ["wsgi.file_wrapper"](open(r, "rb"), 4096)
    if path == "/fw_middleware":
        inner = _fw(environ, start_response, q)

        def middleware():
            try:
                for block in inner:
                    yield bytes(block)
            finally:
                inner.close()
        return middleware()

    start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "0")])
    return []
