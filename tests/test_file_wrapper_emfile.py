"""A ``wsgi.file_wrapper`` answer over HTTP/1.1 while the process is out of descriptors
(EMFILE): what the socket does not take during the call is sent after it from a descriptor of
the server's own (``RegularFile::range_from``, ``src/io/file_body.rs``); when none can be had,
the rest is read from the app's descriptor in blocks and streamed with backpressure
(``Sender::send_file_read``, ``src/wsgi/sender/known.rs``), and stderr says so once.

Over HTTP/2 (and HTTP/3) the file is read in blocks anyway (``src/wsgi/streams/response.rs``):
from a descriptor of the server's own without the GIL, or, when none can be had, from the app's
with the GIL held.

The fixture app is ``tests/apps/file_wrapper_emfile.py``.
"""

from __future__ import annotations

import socket

from tests.apps.file_wrapper import file_bytes
from tests.h2_client import H2Client
from tests.helpers import wait_for

APP = "file_wrapper_emfile"
SIZE = 4 * 1024 * 1024


def read_response(s: socket.socket) -> tuple[bytes, bytes]:
    """Head and body of one Content-Length response (the body as far as the peer sent it)."""
    data = b""
    while b"\r\n\r\n" not in data:
        got = s.recv(65536)
        if not got:
            return data, b""
        data += got
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        got = s.recv(1 << 20)
        if not got:
            break
        body += got
    return head, body


def test_file_body_is_complete_when_no_descriptor_can_be_had(start_server):
    """A 4 MB file answer given while every descriptor was taken: the server could not `dup`
    the file's descriptor for what the socket had not taken, and closed the connection
    without sending the answer (not even its head: a cut response)."""
    srv = start_server(APP, nofile=128)
    with socket.socket() as s:
        # A small receive buffer: the socket takes little of the body during the call.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(30)
        s.connect(("127.0.0.1", srv.port))
        s.sendall(f"GET /file?size={SIZE} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        head, body = read_response(s)
        assert head.startswith(b"HTTP/1.1 200"), head
        assert len(body) == SIZE, f"body cut at {len(body)} of {SIZE} bytes"
        assert body == file_bytes(SIZE)
        # The connection stays usable (the descriptors were given back by the file's close).
        s.sendall(b"GET /pong HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(s)[1] == b"pong"
    wait_for(lambda: any("EMFILE" in line for line in srv.stderr_lines), "the EMFILE warning")
    told = [line for line in srv.stderr_lines if "EMFILE" in line]
    assert len(told) == 1, told


def test_file_body_over_h2c_is_complete_when_no_descriptor_can_be_had(start_server):
    """The same answer over HTTP/2 (prior knowledge, plaintext): its reader
    (`src/wsgi/streams/response.rs`) could not `dup` the file's descriptor and ended the
    call as failed before the head: a 500 answer instead of the file."""
    srv = start_server(APP, nofile=128)
    c = H2Client(srv.port, timeout=30)
    try:
        r = c.get(f"/file?size={SIZE}")
        assert r.reset is None and r.ended, (r.reset, len(r.body))
        assert r.status == 200
        assert len(r.body) == SIZE, f"body cut at {len(r.body)} of {SIZE} bytes"
        assert bytes(r.body) == file_bytes(SIZE)
    finally:
        c.close()
