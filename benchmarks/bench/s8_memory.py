"""S8's memory side: how much a server's process grows while the app reads a
64 MiB upload whole with one `wsgi.input.read()`, with Content-Length and chunked. Each case
starts the server afresh (the app reports its own VmHWM growth during the read) and checks the
length and sha256 the app reports. Single-process servers only: the growth is the worker's.

    python3 benchmarks/run.py s8-memory [--servers sluicegate,granian,...]

`SLUICEGATE_BASE_PY` adds `sluicegate-base`, another build, as in run.py.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import socket
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
from bench.harness import serving_by_hand  # noqa: E402

BODY = 64 << 20
APP = "s8_read_all:app"


def upload(port: int, body: bytes, chunked: bool) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as s:
        if chunked:
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            step = 1 << 20
            for i in range(0, len(body), step):
                s.sendall(b"%x\r\n" % len(body[i:i + step]) + body[i:i + step] + b"\r\n")
            s.sendall(b"0\r\n\r\n")
        else:
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
            s.sendall(body)
        got = b""
        while True:
            part = s.recv(65536)
            if not part:
                break
            got += part
            head, _, rest = got.partition(b"\r\n\r\n")
            if _ and b"content-length:" in head.lower():
                n = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                if len(rest) >= n:
                    return rest[:n]
        return got.partition(b"\r\n\r\n")[2]


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--servers", default="sluicegate,sluicegate-base,granian,gunicorn-gthread")


def main(args: argparse.Namespace) -> int | None:
    body = os.urandom(BODY)
    digest = hashlib.sha256(body).hexdigest()
    print("| server | framing | RSS growth during read() | ÷ body | verified |")
    print("|---|---|---:|---:|---|")
    for name in args.servers.split(","):
        for chunked in (False, True):
            with serving_by_hand(name, APP, 2 * BODY) as port:
                if port is None:
                    continue
                answer = upload(port, body, chunked).split()
                ok = len(answer) == 3 and int(answer[0]) == BODY and answer[2].decode() == digest
                grew = int(answer[1]) if ok else 0
                framing = "chunked" if chunked else "Content-Length"
                print(f"| {name} | {framing} | {grew / 1024:.1f} MiB | "
                      f"{grew * 1024 / BODY:.2f}× | {'yes' if ok else 'NO: ' + repr(answer[:2])} |",
                      flush=True)
