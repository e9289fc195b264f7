"""An app whose one route holds the GIL inside a single C call until the test lets it go.

- ``/hold``: records ``held`` under mark ``hold-started``, then calls libc ``read()`` through
  ``ctypes.PyDLL`` (which, unlike ``ctypes.CDLL``, keeps the GIL across the call) on the FIFO
  ``hold-fifo`` in the state directory, which the test made. The thread blocks in C holding the
  GIL, as a big ``json.dumps``, a regex or a NumPy call would, until the test writes a byte to
  the FIFO; then it records ``held`` under ``hold-finished`` and answers ``released``.
  The FIFO is opened read-write, so the app is its own writer: a read never sees end-of-file,
  only the test's byte.
- ``/hold-stream``: a streaming answer: ``first``, then ``second`` (recording ``held`` under
  ``hold-started`` before it), then the same read as ``/hold`` between two blocks, then
  ``released``. The loop is handed to another thread at the second block, while the GIL is
  held from there into the read.
- ``/gen``: ``hello`` from a generator, in two blocks (``hel``, ``lo``): a streaming answer whose
  first block the server may write itself or hand to the loop.
- ``/gen-whole``: ``hello`` from a generator in one block, its declared length all sent: a
  body complete in its first block.
- anything else: answers ``hello``.
"""

import ctypes
import os

from tests.apps._state import STATE_DIR, mark

# PyDLL: calls into libc keep the GIL (CDLL would release it around the call).
_LIBC = ctypes.PyDLL(None, use_errno=True)
_LIBC.read.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t)
_LIBC.read.restype = ctypes.c_ssize_t


def _answer(start_response, body: bytes):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def _stream(fd: int):
    try:
        buf = ctypes.create_string_buffer(1)
        yield b"first\n"
        mark("hold-started", "held")
        yield b"second\n"
        got = _LIBC.read(fd, buf, 1)  # no I/O since the hand-off: the GIL stays held
    finally:
        os.close(fd)
    mark("hold-finished", "held")
    yield b"released" if got == 1 else b"read failed"


def _gen():
    yield b"hel"
    yield b"lo"


def _whole():
    yield b"hello"


def app(environ, start_response):
    if environ["PATH_INFO"] in ("/gen", "/gen-whole"):
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
        return _gen() if environ["PATH_INFO"] == "/gen" else _whole()
    if environ["PATH_INFO"] == "/hold-stream":
        fd = os.open(os.path.join(STATE_DIR, "hold-fifo"), os.O_RDWR)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return _stream(fd)
    if environ["PATH_INFO"] == "/hold":
        fd = os.open(os.path.join(STATE_DIR, "hold-fifo"), os.O_RDWR)
        try:
            buf = ctypes.create_string_buffer(1)
            mark("hold-started", "held")
            got = _LIBC.read(fd, buf, 1)  # blocks in C, the GIL held, until the test writes
        finally:
            os.close(fd)
        mark("hold-finished", "held")
        return _answer(start_response, b"released" if got == 1 else b"read failed")
    return _answer(start_response, b"hello")
