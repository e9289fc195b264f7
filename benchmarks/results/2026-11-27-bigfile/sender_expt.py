"""A minimal keep-alive sender to try write patterns for S1's 64 MiB body, outside sluicegate.

    python3 sender_expt.py PORT MODE CHUNK CORK
MODE: file (os.sendfile of S1's 64 MiB file) or mem (socket.send of a 64 MiB bytes);
CHUNK: bytes per call; CORK: 1 to send head and body under TCP_CORK. Non-blocking socket,
edge-triggered epoll for EPOLLOUT after EAGAIN, as sluicegate's loop does. One request at a time.
"""

import os
import select
import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "apps"))
import payloads  # noqa: E402

port, mode, chunk, cork = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
path = payloads.body_path("64MiB")
body = path.read_bytes()
size = len(body)
view = memoryview(body)
head = f"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {size}\r\n\r\n".encode()
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(16)
print(os.getpid(), flush=True)
ep = select.epoll()
while True:
    c, _ = ls.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.setblocking(False)
    ep.register(c.fileno(), select.EPOLLIN | select.EPOLLOUT | select.EPOLLET)
    fd = c.fileno()
    try:
        while True:
            ep.poll(-1)
            try:
                req = c.recv(65536)
            except BlockingIOError:
                continue
            if not req:
                break
            f = open(path, "rb") if mode == "file" else None
            if cork:
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
            c.send(head, socket.MSG_MORE if mode == "file" else 0) if mode == "file" else None
            pos = 0
            pre = b"" if mode == "file" else head
            while pos < size:
                try:
                    if mode == "file":
                        n = os.sendfile(fd, f.fileno(), pos, min(chunk, size - pos))
                    elif pre:
                        n = c.sendmsg([pre, view[pos:pos + chunk - len(pre)]]) - len(pre)
                        pre = b""
                    else:
                        n = c.send(view[pos:pos + chunk])
                    pos += n
                except BlockingIOError:
                    ep.poll(-1)
            if cork:
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
            if f:
                f.close()
    finally:
        ep.unregister(fd)
        c.close()
