"""A ``wsgi.file_wrapper`` answer given while the process is out of file descriptors.

- ``/file?size=N``: a regular file of N deterministic bytes (``file_wrapper.file_bytes``), with
  Content-Length; before returning it the app opens ``/dev/null`` until EMFILE, so the server
  can make no descriptor of its own for the body (``RegularFile::range_from``). The file's
  ``close()`` (the server's, after the body was handed over) gives them all back.
- ``/pong``: ``pong``.
"""

import errno
import io
import os

from tests.apps._state import query
from tests.apps.file_wrapper import _path


class HoggingFile(io.FileIO):
    """The body's file; holds every descriptor the process could still open until closed."""

    hogs: list = []

    def hog_all(self) -> None:
        while True:
            try:
                self.hogs.append(os.open("/dev/null", os.O_RDONLY))
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE):
                    return
                raise

    def close(self):
        while self.hogs:
            os.close(self.hogs.pop())
        super().close()


def app(environ, start_response):
    if environ["PATH_INFO"] == "/pong":
        start_response("200 OK", [("Content-Length", "4")])
        return [b"pong"]
    n = int(query(environ).get("size", "100000"))
    f = HoggingFile(_path(n), "r")
    f.hogs = []
    start_response("200 OK", [("Content-Type", "application/octet-stream"),
                              ("Content-Length", str(n))])
    f.hog_all()
    return environ["wsgi.file_wrapper"](f, 8192)
