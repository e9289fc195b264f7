"""The access log on a unix stream socket (systemd's `StandardOutput=journal` hands a service
such a socket as standard output): with several workers writing to it, every line the reader
gets is whole.

A stream socket keeps no write whole the way a pipe keeps one of up to PIPE_BUF bytes: a large
write goes out in pieces, and another process's write can land between two of them. The
server is started through a small launcher that connects to a socket this test listens on and
puts it on descriptor 1, as systemd does, then runs sluicegate in its place.
"""

import json
import socket
import threading

from tests.conftest import PYTHON, ServerProcess
from tests.http_util import Conn, request_bytes, wait_for

LAUNCHER = """
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
os.dup2(s.fileno(), 1)
s.close()
os.execv(sys.executable, [sys.executable, "-m", "sluicegate"] + sys.argv[2:])
"""


class StreamReader:
    """The test's end of the journal-like socket: accepts the server's connection and keeps
    every byte it reads, reading in small pieces so the writers meet a full socket."""

    def __init__(self, path: str):
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.listener.bind(path)
        self.listener.listen(1)
        self.data = bytearray()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            while True:
                chunk = conn.recv(2048)
                if not chunk:
                    return
                with self.lock:
                    self.data += chunk

    def lines(self):
        with self.lock:
            text = bytes(self.data)
        return text.split(b"\n")[:-1]


def test_workers_sharing_a_unix_stream_socket_never_tear_a_line(tmp_path):
    """Regression: with `--workers 2 --access-log -` on a unix stream socket, lines from the
    two workers were spliced into each other (`..."protocol":"HTTP/1.1","{"client":...`):
    the writer's batches of up to 256 KiB went out in pieces. Every line must be one whole
    JSON object, and none lost."""
    reader = StreamReader(str(tmp_path / "journal.sock"))
    srv = ServerProcess(None, command=[
        PYTHON, "-c", LAUNCHER, str(tmp_path / "journal.sock"), "--bind", "127.0.0.1:0",
        "--workers", "2", "--access-log", "-", "--access-log-format", "json",
        "tests.apps.timed:app"])
    try:
        per_client, clients = 400, 8
        request = request_bytes("GET", "/p?" + "q" * 1500)  # ~1.6 KB lines

        def client():
            for _ in range(per_client // 50):
                with Conn.open(srv.port) as c:
                    for _ in range(50):
                        c.send(request)
                        assert c.read_response().status == 200

        threads = [threading.Thread(target=client) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        total = per_client * clients
        wait_for(lambda: len(reader.lines()) >= total, f"{total} access lines", timeout=60)
        bad = []
        for ln in reader.lines():
            try:
                rec = json.loads(ln)
                assert rec["status"] == 200 and rec["path"] == "/p"
            except (ValueError, AssertionError, KeyError):
                bad.append(ln[:160])
        assert not bad and len(reader.lines()) == total, (len(bad), bad[:3])
    finally:
        srv.stop()
        reader.listener.close()
