"""Responses produced in several blocks.

- ``/chunks?n=N&size=S``: N blocks of S bytes, no Content-Length (so HTTP/1.1 gets a chunked
  response and HTTP/1.0 a close-delimited one). Block i is S copies of ``b"abcdefghijklmnopqrstuvwxyz"[i % 26]``.
- ``/with_length?n=N&size=S``: the same blocks with Content-Length set.
- ``/empty_blocks``: yields b"", b"abc", b"", b"def", b"" without Content-Length: an empty block
  must not end a chunked body early (``0\\r\\n\\r\\n``) — the client must get ``abcdef``.
- ``/big?size=N``: N bytes with Content-Length, in 1 MiB blocks.
"""

from tests.apps._state import query

LETTERS = b"abcdefghijklmnopqrstuvwxyz"


def expected_chunks(n: int, size: int) -> bytes:
    return b"".join(LETTERS[i % 26:i % 26 + 1] * size for i in range(n))


def app(environ, start_response):
    path = environ["PATH_INFO"]
    q = query(environ)
    n, size = int(q.get("n", "5")), int(q.get("size", "1000"))
    if path == "/chunks":
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return (LETTERS[i % 26:i % 26 + 1] * size for i in range(n))
    if path == "/with_length":
        start_response("200 OK", [("Content-Type", "application/octet-stream"),
                                  ("Content-Length", str(n * size))])
        return (LETTERS[i % 26:i % 26 + 1] * size for i in range(n))
    if path == "/empty_blocks":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return iter([b"", b"abc", b"", b"def", b""])
    if path == "/big":
        total = int(q.get("size", str(50 * 1024 * 1024)))
        start_response("200 OK", [("Content-Type", "application/octet-stream"),
                                  ("Content-Length", str(total))])
        block = b"x" * (1 << 20)

        def gen():
            left = total
            while left > 0:
                piece = block[:min(left, len(block))]
                left -= len(piece)
                yield piece
        return gen()
    start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "0")])
    return [b""]
