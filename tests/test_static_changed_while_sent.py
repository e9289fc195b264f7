"""A kept static file (16-64 KiB: kept in memory, sent with `sendfile` from the descriptor kept
with it) that changes on disk while a slow client reads it. The answer's head (Content-Length,
ETag) describes the kept bytes, so the body must be those bytes whole, or end short with the
connection closed: never padded, never a mix. `sendfile` went on reading the changed file: a
file truncated meanwhile arrived as a 200 with its full Content-Length and zero bytes at the
end, one rewritten in place mixed old and new bytes under the old ETag, and the connection
stayed open for the next request."""

import socket

import pytest

OLD = bytes(range(256)) * 255  # 65,280 bytes: kept (at most 64 KiB), sent with sendfile
NEW = bytes(255 - b for b in OLD)


def read_answer(s: socket.socket):
    """The head and as much of the body as its Content-Length says, or until the end."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int([line.split(b":", 1)[1] for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:")][0])
    closed = False
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            closed = True
            break
        body += chunk
    return head, body, length, closed


@pytest.mark.parametrize("change", ["rewritten", "truncated"])
def test_a_kept_file_changed_while_a_slow_client_reads_it(start_server, tmp_path, change):
    d = tmp_path / "files"
    d.mkdir()
    f = d / "kept.bin"
    f.write_bytes(OLD)
    srv = start_server("hello", "--static", f"/static={d}")
    assert srv.request("GET", "/static/kept.bin").body == OLD  # now kept
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect((srv.host, srv.port))
    try:
        s.sendall(b"GET /static/kept.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        first = s.recv(1024)  # the head and the first bytes: the rest waits for this client
        assert first.startswith(b"HTTP/1.1 200"), first
        with open(f, "r+b") as w:  # the same file (inode), changed in place
            if change == "rewritten":
                w.write(NEW)
            else:
                w.truncate(1000)
        # The client reads on: what it gets must be the kept bytes, or end short and closed.
        head, body, length, closed = read_answer(_Prefixed(s, first))
        assert length == len(OLD)
        if len(body) == length:
            assert body == OLD, "the body mixes the file's old and new bytes"
        else:
            assert closed and OLD.startswith(body), "a short body must end the connection"
    finally:
        s.close()
    # The change was seen: the next request gets the file as it is now.
    now = NEW if change == "rewritten" else OLD[:1000]
    assert srv.request("GET", "/static/kept.bin").body == now


class _Prefixed:
    """A socket whose first recv returns bytes already read."""

    def __init__(self, sock, first):
        self.sock, self.first = sock, first

    def recv(self, n):
        if self.first:
            out, self.first = self.first, b""
            return out
        return self.sock.recv(n)
