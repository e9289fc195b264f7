"""Responses through ``wsgi.file_wrapper``.

- ``/file?size=N&token=T``: a regular file of N deterministic bytes (``file_bytes(N)``) opened
  as an ``io.FileIO`` subclass that records ``T`` under mark ``file-closed`` when closed, wrapped
  with Content-Length (the server may send it with sendfile(2)).
- ``/file_nolength?size=N``: the same file without Content-Length (chunked on HTTP/1.1).
- ``/bytesio?size=N``: an ``io.BytesIO`` (no fileno): the wrapper must iterate it.
- ``/noclose?size=N``: a file-like with ``read`` only (no ``close``), with Content-Length.
- ``/close_raises?size=N&token=T``: the ``/file`` file, whose ``close()`` records ``T`` under
  ``file-closed`` and then raises ``AttributeError`` (an error of the app's, to be logged).
"""

import io
import os

from tests.apps._state import STATE_DIR, mark, query


def file_bytes(n: int) -> bytes:
    pattern = bytes(range(251))  # a prime length, so block boundaries never line up with it
    return (pattern * (n // len(pattern) + 1))[:n]


class TrackedFile(io.FileIO):
    token = "-"

    def close(self):
        if not self.closed:
            mark("file-closed", self.token)
        super().close()


class CloseRaises(TrackedFile):
    def close(self):
        super().close()
        raise AttributeError("close_raises: an AttributeError from inside close()")


class ReadOnly:
    """A file-like with nothing but ``read``: no ``close`` to call."""

    def __init__(self, data: bytes):
        self._src = io.BytesIO(data)

    def read(self, n: int = -1) -> bytes:
        return self._src.read(n)


def _path(n: int) -> str:
    path = os.path.join(STATE_DIR, f"file-{n}.bin")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.{id(path)}.tmp"
        with open(tmp, "wb") as f:
            f.write(file_bytes(n))
        os.replace(tmp, path)
    return path


def app(environ, start_response):
    path = environ["PATH_INFO"]
    q = query(environ)
    n = int(q.get("size", "100000"))
    wrapper = environ["wsgi.file_wrapper"]
    if path in ("/file", "/file_nolength", "/close_raises"):
        f = (CloseRaises if path == "/close_raises" else TrackedFile)(_path(n), "r")
        f.token = q.get("token", "-")
        headers = [("Content-Type", "application/octet-stream")]
        if path != "/file_nolength":
            headers.append(("Content-Length", str(n)))
        start_response("200 OK", headers)
        return wrapper(f, 8192)
    if path == "/noclose":
        start_response("200 OK", [("Content-Type", "application/octet-stream"),
                                  ("Content-Length", str(n))])
        return wrapper(ReadOnly(file_bytes(n)), 8192)
    if path == "/bytesio":
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return wrapper(io.BytesIO(file_bytes(n)), 1000)
    start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "0")])
    return []
