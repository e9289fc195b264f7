"""Server CPU per request of a hello world over HTTP/3 against HTTP/2 over TLS, one run on one
machine: one connection each, requests in waves of WAVE concurrent streams, the server's user +
system time (all its threads, /proc/PID/stat) before and after. The clients are Python (aioquic,
the `h2` library): slow, so requests per second say nothing here; the server's CPU per request
does. Run from the repository root with the worktree's .venv:

    .venv/bin/python benchmarks/results/2026-11-25-h3/measure.py [ROUNDS] [REQUESTS]
"""

import os
import re
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())
from tests.h2_client import H2Client  # noqa: E402
from tests.h3_client import H3Client  # noqa: E402
from tests.tls_certs import make_certs  # noqa: E402

WAVE = 20
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def start(certs) -> "tuple[subprocess.Popen, int]":
    p = subprocess.Popen([sys.executable, "-m", "sluicegate", "--bind", "127.0.0.1:0",
                          "--certfile", str(certs.server_chain), "--keyfile",
                          str(certs.server_key), "--http3",
                          "tests.apps.hello:app"],
                         stderr=subprocess.PIPE, text=True)
    while True:
        line = p.stderr.readline()
        m = re.search(r"Listening at: https://127.0.0.1:(\d+)", line)
        if m:
            return p, int(m.group(1))
        if not line:
            raise SystemExit("the server did not start")


def h3_run(port, certs, n):
    with H3Client(port, str(certs.ca_cert), timeout=60) as c:
        for _ in range(n // WAVE):
            sids = [c.request("GET", "/") for _ in range(WAVE)]
            for s in sids:
                assert c.response(s).status == 200


def h2_run(port, certs, n):
    ctx = ssl.create_default_context(cafile=str(certs.ca_cert))
    ctx.set_alpn_protocols(["h2"])
    c = H2Client(port, tls=ctx, timeout=60)
    try:
        for _ in range(n // WAVE):
            rs = c.responses([c.request("GET", "/") for _ in range(WAVE)])
            assert all(r.status == 200 for r in rs)
    finally:
        c.close()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    certs = make_certs(Path(tempfile.mkdtemp()))
    p, port = start(certs)
    try:
        h3_run(port, certs, 200)  # warm-up
        h2_run(port, certs, 200)
        print(f"{'round':>5} {'protocol':>8} {'requests':>8} {'server CPU us/request':>22}")
        for r in range(rounds):
            for name, run in (("HTTP/3", h3_run), ("HTTP/2", h2_run)):
                before = cpu_seconds(p.pid)
                t0 = time.monotonic()
                run(port, certs, n)
                took = time.monotonic() - t0
                used = cpu_seconds(p.pid) - before
                print(f"{r:>5} {name:>8} {n:>8} {used / n * 1e6:>22.1f}   (wall {took:.1f} s)",
                      flush=True)
    finally:
        p.terminate()
        p.wait(30)


if __name__ == "__main__":
    main()
