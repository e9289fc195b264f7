"""S8's memory side (issue 16): how much a server's process grows while the app reads a
64 MiB upload whole with one `wsgi.input.read()`, with Content-Length and chunked. Each case
starts the server afresh (the app reports its own VmHWM growth during the read) and checks the
length and sha256 the app reports. Single-process servers only: the growth is the worker's.

    cd benchmarks && ../.venv/bin/python -m bench.s8_memory [--servers sluicegate,granian,...]

`SLUICEGATE_BASE_PY` adds `sluicegate-base`, another build, as in run.py.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
from bench.procs import free_port  # noqa: E402
from bench.s11 import env_for, wait_ready  # noqa: E402

BODY = 64 << 20
PEERS = BENCH / ".venv" / "bin"
APP = "s8_read_all:app"


def argv_for(name: str, port: int) -> list[str] | None:
    bind = f"127.0.0.1:{port}"
    if name == "sluicegate":
        return [str(ROOT / ".venv" / "bin" / "python"), "-m", "sluicegate", "--bind", bind, APP]
    if name == "sluicegate-base":
        base = os.environ.get("SLUICEGATE_BASE_PY")
        return [base, "-m", "sluicegate", "--bind", bind, APP] if base else None
    if name == "granian":
        return [str(PEERS / "granian"), "--interface", "wsgi", "--host", "127.0.0.1", "--port",
                str(port), "--workers", "1", "--blocking-threads", "4", "--http", "1", APP]
    if name == "gunicorn-gthread":
        return [str(PEERS / "gunicorn"), "-w", "1", "-k", "gthread", "--threads", "4", "--bind",
                bind, APP]
    if name == "waitress":
        return [str(PEERS / "waitress-serve"), "--listen", bind, "--max-request-body-size",
                str(2 * BODY), APP]
    raise SystemExit(f"unknown server {name}")


@contextlib.contextmanager
def serving(name: str, app: str = APP):
    """`name` serving `app` on a free port (yields the port; None if the server is not set
    up, e.g. sluicegate-base without SLUICEGATE_BASE_PY); stopped on the way out."""
    port = free_port()
    argv = argv_for(name, port)
    if argv is None:
        yield None
        return
    argv[-1] = app
    p = subprocess.Popen(argv, cwd=BENCH / "apps", env=env_for(argv[0]),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        wait_ready(f"127.0.0.1:{port}", time.monotonic() + 30)
        yield port
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", default="sluicegate,sluicegate-base,granian,gunicorn-gthread")
    args = ap.parse_args()
    body = os.urandom(BODY)
    digest = hashlib.sha256(body).hexdigest()
    print("| server | framing | RSS growth during read() | ÷ body | verified |")
    print("|---|---|---:|---:|---|")
    for name in args.servers.split(","):
        for chunked in (False, True):
            with serving(name) as port:
                if port is None:
                    continue
                answer = upload(port, body, chunked).split()
                ok = len(answer) == 3 and int(answer[0]) == BODY and answer[2].decode() == digest
                grew = int(answer[1]) if ok else 0
                framing = "chunked" if chunked else "Content-Length"
                print(f"| {name} | {framing} | {grew / 1024:.1f} MiB | "
                      f"{grew * 1024 / BODY:.2f}× | {'yes' if ok else 'NO: ' + repr(answer[:2])} |",
                      flush=True)

if __name__ == "__main__":
    main()
