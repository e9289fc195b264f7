"""TLS under two kinds of pressure, on one sluicegate (one process, 4 threads, an ECDSA P-256
certificate made here), apps/s14_https.py:

1. **Handshake flood.** Established keep-alive connections (`wrk -c8`, hello world) are
   measured alone, then while `ab -c32` opens a new TLS connection per request (a full
   handshake each: ab never resumes) for the same time. Reported for the established
   connections: requests/s and latency p50/p99/max, with and without the flood, and the
   handshakes/s the flood reached. Handshakes cost CPU; the question is whether the loop keeps
   serving the connections it already has.
2. **Slow reader.** One client asks for a 64 MiB response (`wsgi.file_wrapper`) and reads it at
   `--slow-rate` bytes/s with a small receive buffer, over TLS and then over plain HTTP (a
   second listener, each on a fresh server): the server's RSS sampled every 0.25 s. Reported: RSS
   before, the highest sample while the reader was on, and the growth; the plaintext figure is
   the yardstick (the TLS path must hold no more than a bounded number of records).
3. **Idle connections.** `--idle` connections (10,000; 2,000 with `--quick`) each served one
   request and then stay open and silent, over TLS and then plain: the server's RSS per
   connection (rustls's session state and buffers against the plaintext connection's), each
   on a fresh server.

    python3 benchmarks/run.py tls-load [--quick] [--seconds 10] [--slow-seconds 15] [--idle N]
        [--out DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
APPS = BENCH / "apps"
sys.path.insert(0, str(APPS))
sys.path.insert(0, str(ROOT))
import payloads  # noqa: E402
from bench.harness import SG, env_for, wait_ready  # noqa: E402
from bench.loadgen import LoadResult, wrk  # noqa: E402
from bench.procs import free_port, raise_fd_limit, rss_bytes, session_pids  # noqa: E402
from bench.s14 import make_cert, tls_wire  # noqa: E402

APP = "s14_https:app"
THREADS = 4
KEEPALIVE_CONNS = 8
FLOOD_CONNS = 32
RSS_EVERY_S = 0.25
SLOW_RCVBUF = 65536  # the slow client's receive buffer: backpressure reaches the server soon
SLOW_READ = 16384  # bytes per read of the slow client


def flood(port: int, seconds: float) -> dict:
    """wrk on established connections, alone then beside an ab handshake flood."""
    url = f"https://127.0.0.1:{port}/"
    size, body = tls_wire(port, "/")
    assert body == payloads.HELLO, body
    out = {}
    alone = wrk(url, KEEPALIVE_CONNS, seconds, size, timeout_s=10)
    out["alone"] = summary(alone)
    result: dict = {}

    def run_ab() -> None:
        # -t bounds it in time; -n only has to be large enough not to end first.
        result["ab"] = ab_for(url, seconds + 2)

    t = threading.Thread(target=run_ab)
    t.start()
    time.sleep(1.0)  # let the flood reach its pace before measuring beside it
    during = wrk(url, KEEPALIVE_CONNS, seconds, size, timeout_s=10)
    t.join(seconds + 120)
    out["during_flood"] = summary(during)
    fl = result.get("ab")
    out["flood"] = {"handshakes_per_s": fl.rps if fl else None, "requests": fl.requests if fl else 0,
                    "errors": fl.errors if fl else None, "note": fl.note if fl else "ab did not end"}
    return out


def ab_for(url: str, seconds: float) -> LoadResult:
    """`ab -t`: as many new TLS connections as fit in `seconds` (loadgen.ab runs `-n` only)."""
    argv = ["ab", "-q", "-r", "-s", "10", "-t", f"{seconds:g}", "-n", "10000000", "-c",
            str(FLOOD_CONNS), url]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return LoadResult("ab", None, 0, 0, seconds, {}, False, "ab did not end")

    def num(pattern: str, cast=float, default=0):
        m = re.search(pattern, out, re.M)
        return cast(m.group(1)) if m else default

    done = num(r"^Complete requests:\s+(\d+)", int)
    secs = num(r"^Time taken for tests:\s+([\d.]+)")
    failed = num(r"^Failed requests:\s+(\d+)", int)
    note = "" if done else out.strip()[-300:]
    return LoadResult("ab", done / secs if secs else None, done, failed, secs, {}, bool(done), note)


def summary(res) -> dict:
    d = res.detail
    return {"rps": res.rps, "requests": res.requests, "errors": res.errors, "note": res.note,
            "p50_ms": d.get("p50_us", 0) / 1000, "p99_ms": d.get("p99_us", 0) / 1000,
            "max_ms": d.get("max_us", 0) / 1000}


def slow_reader(pids_of, port: int, tls: bool, seconds: float, rate: float) -> dict:
    """Reads /file/64MiB at `rate` bytes/s for `seconds`, sampling the server's RSS."""
    before = rss_bytes(pids_of(), peak=False)
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SLOW_RCVBUF)
    raw.settimeout(30)
    raw.connect(("127.0.0.1", port))
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    else:
        s = raw
    highest, got = before, 0
    try:
        s.sendall(b"GET /file/64MiB HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        start = time.monotonic()
        next_sample = start
        while time.monotonic() - start < seconds:
            piece = s.recv(SLOW_READ)
            if not piece:
                break
            got += len(piece)
            now = time.monotonic()
            if now >= next_sample:
                highest = max(highest, rss_bytes(pids_of(), peak=False))
                next_sample = now + RSS_EVERY_S
            ahead = got / rate - (now - start)
            if ahead > 0:
                time.sleep(ahead)
        highest = max(highest, rss_bytes(pids_of(), peak=False))
    finally:
        s.close()
    mib = 1024 * 1024
    return {"rss_before_mib": before / mib, "rss_highest_mib": highest / mib,
            "growth_mib": (highest - before) / mib, "read_mib": got / mib, "seconds": seconds}


def idle_connections(pids_of, port: int, tls: bool, count: int) -> dict:
    """Opens `count` kept-alive connections that each served one request, then stay idle; the
    server's RSS before and after. The client keeps a duplicate of each socket and drops its
    TLS object (no close_notify is sent): the server holds an established, idle session."""
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    before = rss_bytes(pids_of(), peak=False)
    kept = []
    request = b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n"
    try:
        for _ in range(count):
            raw = socket.create_connection(("127.0.0.1", port), timeout=30)
            if tls:
                kept.append(raw.dup())
                s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
            else:
                kept.append(raw)
                s = raw
            s.sendall(request)
            got = b""
            while not got.endswith(payloads.HELLO):
                piece = s.recv(4096)
                if not piece:
                    raise SystemExit("an idle-connection probe was closed by the server")
                got += piece
            if tls:
                s.close()  # the duplicate keeps the connection; no close_notify
        time.sleep(1.0)  # let the server settle its buffers after the last request
        after = rss_bytes(pids_of(), peak=False)
    finally:
        for k in kept:
            k.close()
    return {"connections": count, "rss_before_mib": before / 2**20, "rss_after_mib": after / 2**20,
            "kib_per_connection": (after - before) / 1024 / count}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--quick", action="store_true", help="3 s flood runs, 6 s slow readers")
    ap.add_argument("--seconds", type=float, default=10, help="each wrk run of the flood part")
    ap.add_argument("--slow-seconds", type=float, default=15)
    ap.add_argument("--slow-rate", type=float, default=512 * 1024, help="bytes/s the slow reader takes")
    ap.add_argument("--idle", type=int, default=10_000, help="idle connections held open")
    ap.add_argument("--out", type=Path)


@contextlib.contextmanager
def serving(cert: Path, key: Path):
    """A fresh sluicegate with a TLS and a plain listener: (its pids, TLS port, plain port). Each
    memory figure gets its own server, so that memory freed by one measurement and kept by the
    allocator does not hide the next one's."""
    tls_port, plain_port = free_port(), free_port()
    argv = [str(SG), "-m", "sluicegate", "--bind", f"https:127.0.0.1:{tls_port}", "--bind",
            f"http:127.0.0.1:{plain_port}", "--certfile", str(cert), "--keyfile", str(key),
            "--threads", f"1:{THREADS}", "--keep-alive", "600", APP]
    p = subprocess.Popen(argv, cwd=APPS, env=env_for(argv[0]), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_ready(f"127.0.0.1:{tls_port}", time.monotonic() + 40)
        wait_ready(f"127.0.0.1:{plain_port}", time.monotonic() + 40)
        yield (lambda: session_pids(p.pid)), tls_port, plain_port
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


def main(args: argparse.Namespace) -> int | None:
    if args.quick:
        args.seconds, args.slow_seconds, args.idle = 3, 6, 2000
    raise_fd_limit()
    payloads.ensure()
    cert, key = make_cert(Path(tempfile.mkdtemp(prefix="sg-tls-load-")))
    results: dict = {"slow_reader": {}, "idle": {}}
    with serving(cert, key) as (_, tls_port, _):
        results["flood"] = flood(tls_port, args.seconds)
    for kind in ("tls", "plain"):
        with serving(cert, key) as (pids, tls_port, plain_port):
            port = tls_port if kind == "tls" else plain_port
            results["slow_reader"][kind] = slow_reader(pids, port, kind == "tls",
                                                       args.slow_seconds, args.slow_rate)
        with serving(cert, key) as (pids, tls_port, plain_port):
            port = tls_port if kind == "tls" else plain_port
            results["idle"][kind] = idle_connections(pids, port, kind == "tls", args.idle)
    text = report(results, args)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "tls_load.json").write_text(json.dumps(results, indent=1))
        cmd = " ".join(["python3 benchmarks/run.py tls-load", *sys.argv[2:]])
        (args.out / "tls_load.md").write_text(text + f"\n\ncommand: {cmd}\n")
    return None


def report(r: dict, args: argparse.Namespace) -> str:
    f = r["flood"]
    lines = [f"Handshake flood: wrk -t1 -c{KEEPALIVE_CONNS} -d{args.seconds:g}s keep-alive over TLS, "
             f"alone and beside ab -c{FLOOD_CONNS} (a new TLS connection per request)", "",
             "| established connections | req/s | p50 ms | p99 ms | max ms |", "|---|---:|---:|---:|---:|"]
    for key, label in (("alone", "alone"), ("during_flood", "during the flood")):
        m = f[key]
        lines.append(f"| {label} | {m['rps'] or 0:,.0f} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} | "
                     f"{m['max_ms']:.1f} |")
    fl = f["flood"]
    lines += ["", f"Flood: {fl['handshakes_per_s'] or 0:,.0f} full handshakes/s ({fl['requests']} "
              f"connections, {fl['errors']} failed)", "",
              f"Slow reader: GET /file/64MiB read at {args.slow_rate / 1024:g} KiB/s for "
              f"{args.slow_seconds:g} s (client SO_RCVBUF {SLOW_RCVBUF}); server RSS", "",
              "| listener | RSS before MiB | highest MiB | growth MiB | read MiB |",
              "|---|---:|---:|---:|---:|"]
    for key in ("tls", "plain"):
        m = r["slow_reader"][key]
        lines.append(f"| {key} | {m['rss_before_mib']:.1f} | {m['rss_highest_mib']:.1f} | "
                     f"{m['growth_mib']:.1f} | {m['read_mib']:.1f} |")
    lines += ["", "Idle kept-alive connections, each after one request (server RSS):", "",
              "| listener | connections | RSS before MiB | after MiB | KiB per connection |",
              "|---|---:|---:|---:|---:|"]
    for key in ("tls", "plain"):
        m = r["idle"][key]
        lines.append(f"| {key} | {m['connections']:,} | {m['rss_before_mib']:.1f} | "
                     f"{m['rss_after_mib']:.1f} | {m['kib_per_connection']:.1f} |")
    return "\n".join(lines)
