"""S8 on new connections and on one keep-alive connection: the same 64 MiB
Content-Length upload to S8's app (it reads 64 KiB blocks and hashes them), 15 times on a new
connection each and 15 times on one kept-alive connection, and the same with an app that only
reads (`s8_read_only`). Medians of the upload-to-answer time, and the app's answer checked.

    python3 benchmarks/run.py s8-connections [--servers sluicegate,granian]
        [--body-thread]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))
from bench.harness import serving_by_hand  # noqa: E402

BODY = 64 << 20
TIMES = 15


def answer(s: socket.socket) -> bytes:
    got = b""
    while b"\r\n\r\n" not in got:
        part = s.recv(65536)
        if not part:
            raise SystemExit("connection closed before the answer")
        got += part
    head, rest = got.split(b"\r\n\r\n", 1)
    n = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(rest) < n:
        rest += s.recv(65536)
    return rest[:n]


BODY_THREAD = False


def upload(s: socket.socket, body: bytes) -> tuple[float, bytes]:
    t = time.perf_counter()
    s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
    if BODY_THREAD:
        # As the suite's client sends a large body: from a thread, while this one waits for
        # the answer.
        sender = threading.Thread(target=s.sendall, args=(body,))
        sender.start()
        got = answer(s)
        sender.join()
    else:
        s.sendall(body)
        got = answer(s)
    return time.perf_counter() - t, got


def measure(port: int, body: bytes, keep_alive: bool) -> tuple[float, bytes]:
    times, last = [], b""
    s = socket.create_connection(("127.0.0.1", port)) if keep_alive else None
    for _ in range(TIMES):
        c = s or socket.create_connection(("127.0.0.1", port))
        t, last = upload(c, body)
        times.append(t)
        if not keep_alive:
            c.close()
    if s:
        s.close()
    return statistics.median(times), last


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--servers", default="sluicegate,granian")
    ap.add_argument("--body-thread", action="store_true",
                    help="send the body from a thread while the main thread waits for the answer")


def main(args: argparse.Namespace) -> int | None:
    global BODY_THREAD
    BODY_THREAD = args.body_thread
    body = os.urandom(BODY)
    digest = hashlib.sha256(body).hexdigest().encode()
    print("| server | app | new connection each | one keep-alive connection |")
    print("|---|---|---:|---:|")
    for name in args.servers.split(","):
        for app, want in (("s8_upload:app", b"%d %s" % (BODY, digest)),
                          ("s8_read_only:app", b"%d" % BODY)):
            with serving_by_hand(name, app, 2 * BODY) as port:
                if port is None:
                    continue
                fresh, a1 = measure(port, body, keep_alive=False)
                kept, a2 = measure(port, body, keep_alive=True)
                if a1 != want or a2 != want:
                    raise SystemExit(f"{name} {app}: wrong answer {a1[:80]!r} / {a2[:80]!r}")
                print(f"| {name} | {app.split(':')[0]} | {fresh * 1e3:.1f} ms | {kept * 1e3:.1f} ms |",
                      flush=True)
