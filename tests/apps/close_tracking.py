"""Returns an iterable whose ``close()`` records ``<token> yielded=<blocks>`` under the mark
``closed`` (see _state.py), so tests can check close() is called on every path. The token is
the ``token`` query parameter.

- ``/ok``: three blocks, Content-Length set.
- ``/raise``: no Content-Length; one block, then the iterable raises.
- ``/raise_first``: the first next() raises (nothing sent yet: the server answers 500).
- ``/stream``: up to 16,384 blocks of 64 KiB (1 GiB) without Content-Length; a client that
  hangs up early must make the server stop iterating and call close() long before the end.
"""

from tests.apps._state import mark, query

BLOCK = b"z" * 65536


class Tracked:
    def __init__(self, token, blocks, fail_at=None):
        self.token, self.blocks, self.fail_at = token, blocks, fail_at
        self.i = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.fail_at is not None and self.i == self.fail_at:
            raise RuntimeError("close_tracking: planned failure")
        if isinstance(self.blocks, list):
            if self.i >= len(self.blocks):
                raise StopIteration
            block = self.blocks[self.i]
        else:
            if self.i >= self.blocks:
                raise StopIteration
            block = BLOCK
        self.i += 1
        return block

    def close(self):
        mark("closed", f"{self.token} yielded={self.i}")


def app(environ, start_response):
    path = environ["PATH_INFO"]
    token = query(environ).get("token", "-")
    if path == "/ok":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "9")])
        return Tracked(token, [b"one", b"two", b"thr"])
    if path == "/raise":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Tracked(token, [b"one", b"two", b"three"], fail_at=1)
    if path == "/raise_first":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Tracked(token, [b"one"], fail_at=0)
    if path == "/stream":
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return Tracked(token, 16384)
    start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "0")])
    return []
