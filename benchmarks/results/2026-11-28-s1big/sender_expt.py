"""A minimal keep-alive sender to try write patterns for S1's 64 MiB body, outside sluicegate.

    python3 sender_expt.py PORT MODE CHUNK CORK [SIZE]
MODE: file (os.sendfile of S1's 64 MiB file), mem (socket.send of a 64 MiB bytes), or mmap
(socket.send from a fresh read-only mmap of the file per request; mmapp: the same with
MAP_POPULATE), or pread (os.preadv of CHUNK bytes into one reused buffer, then socket.send of
it);
CHUNK: bytes per call; CORK: 1 to send head and body under TCP_CORK. Non-blocking socket,
edge-triggered epoll for EPOLLOUT after EAGAIN, as sluicegate's loop does. One request at a time.
"""

import mmap
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
size = int(sys.argv[5]) if len(sys.argv) > 5 else len(body)  # SIZE: send only the first SIZE bytes
body = body[:size]
view = memoryview(body)
head = f"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {size}\r\n\r\n".encode()
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(16)
print(os.getpid(), flush=True)
ep = select.epoll()
pbuf = memoryview(bytearray(chunk))
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
            f = open(path, "rb") if mode != "mem" else None
            mm = None
            if mode.startswith("mmap"):
                flags = mmap.MAP_SHARED | (mmap.MAP_POPULATE if mode == "mmapp" else 0)
                mm = mmap.mmap(f.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
                view = memoryview(mm)[:size]
            if cork:
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
            c.send(head, socket.MSG_MORE if mode == "file" else 0) if mode == "file" else None
            pos = 0
            pre = b"" if mode in ("file", "pread") else head
            pre_n, pre_at, pre_head = 0, 0, True
            while pos < size:
                try:
                    if mode == "pread":
                        if not pre_n:
                            pre_n = os.preadv(f.fileno(), [pbuf[:min(chunk, size - pos)]], pos)
                            pre_at = 0
                            if pre_head:
                                c.send(head, socket.MSG_MORE)
                                pre_head = False
                        n = c.send(pbuf[pre_at:pre_n])
                        pre_at += n
                        if pre_at == pre_n:
                            pre_n = 0
                    elif mode == "file":
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
            if mm is not None:
                view.release()
                mm.close()
            if f:
                f.close()
    finally:
        ep.unregister(fd)
        c.close()
