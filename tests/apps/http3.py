"""The app of the HTTP/3 tests (tests/test_http3.py): the HTTP/2 tests' app (tests/apps/http2.py:
hello, /echo, /environ, /together, /gate, /boom, /closing), and

- ``/pattern?n=BYTES``: that many bytes of a repeating 251-byte pattern (a prime length, so a
  block lost, doubled or moved shows), in 64 KiB blocks from a generator.
"""

from tests.apps import http2
from tests.apps._state import query

PERIOD = bytes(range(251))


def pattern(n: int) -> bytes:
    """The first `n` bytes of the pattern (what the client must receive)."""
    whole = PERIOD * (n // len(PERIOD) + 1)
    return whole[:n]


def app(environ, start_response):
    if environ["PATH_INFO"] == "/pattern":
        n = int(query(environ)["n"])
        data = pattern(n)

        def blocks():
            for at in range(0, n, 65536):
                yield data[at:at + 65536]
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return blocks()
    return http2.app(environ, start_response)
