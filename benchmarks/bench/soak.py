"""The soak: one sluicegate process under 10 minutes of mixed traffic, sampled every 10 s for
resident memory, open descriptors and threads, with a verdict on whether any of them grows.

Traffic, all at once, against `benchmarks/apps/soak_app.py` with `--static`:
- keep-alive GETs of hello world (`wrk -c8`, the whole run);
- 1 MB uploads (2 clients, each body checked against its sha256);
- streamed responses (1 MB in 8 KiB blocks, 2 clients, bytes counted);
- clients that abandon an 8 MB response halfway and reset the connection (1 client);
- static range requests (`Range: bytes=…` of a 21 KB file, 1 client, bytes compared);
- slowloris connections (40 sockets sending one header byte every 5 s, reopened when cut).

Verdict: a least-squares slope of each series over the samples after the first minute (the
warm-up: pools, caches, allocator arenas). Flat when RSS grows less than 1 MiB per minute, and
descriptors and threads by less than 1 per minute; otherwise growing, with the slope shown.
Errors of the load clients (a wrong byte, a failed upload) are counted and reported.

    python3 benchmarks/run.py soak [--minutes 10] [--out results/DATE-soak]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
APPS = BENCH / "apps"
sys.path.insert(0, str(APPS))
import payloads  # noqa: E402
from bench.loadgen import wrk  # noqa: E402
from bench.harness import SG, env_for, wait_ready  # noqa: E402

SAMPLE_EVERY_S = 10
WARMUP_S = 60
RSS_MIB_PER_MIN = 1.0
COUNT_PER_MIN = 1.0


def sample(pid: int) -> dict:
    rss = threads = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return {"t": time.monotonic(), "rss": rss, "fds": len(os.listdir(f"/proc/{pid}/fd")),
            "threads": threads}


def slope_per_min(points: list[tuple[float, float]]) -> float:
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    den = sum((p[0] - mx) ** 2 for p in points)
    return 0.0 if den == 0 else sum((p[0] - mx) * (p[1] - my) for p in points) / den * 60


class Clients:
    """The load threads; each counts its successes and errors."""

    def __init__(self, port: int, stop: threading.Event):
        self.port, self.stop = port, stop
        self.counts: dict[str, list[int]] = {}
        self.lock = threading.Lock()
        self.static = payloads.static_path().read_bytes()

    def count(self, kind: str, ok: bool) -> None:
        with self.lock:
            c = self.counts.setdefault(kind, [0, 0])
            c[0 if ok else 1] += 1

    def request(self, raw: bytes) -> tuple[bytes, bytes]:
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
            s.sendall(raw)
            f = s.makefile("rb")
            head = b""
            while (line := f.readline()) not in (b"\r\n", b""):
                head += line
            if b"content-length:" in head.lower():
                n = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                return head, f.read(n)
            body = b""
            while True:
                size = int(f.readline().strip(), 16)
                chunk = f.read(size + 2)
                if size == 0:
                    return head, body
                body += chunk[:-2]

    def uploads(self) -> None:
        data = os.urandom(1024 * 1024)
        want = f"{len(data)} {hashlib.sha256(data).hexdigest()}".encode()
        while not self.stop.is_set():
            try:
                _, body = self.request(b"POST /upload HTTP/1.1\r\nHost: s\r\nConnection: close\r\n"
                                       + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
                self.count("upload", body == want)
            except OSError:
                self.count("upload", False)

    def streams(self) -> None:
        while not self.stop.is_set():
            try:
                _, body = self.request(b"GET /stream HTTP/1.1\r\nHost: s\r\nConnection: close\r\n\r\n")
                self.count("stream", len(body) == 128 * 8192)
            except OSError:
                self.count("stream", False)

    def abandons(self) -> None:
        while not self.stop.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
                s.sendall(b"GET /big HTTP/1.1\r\nHost: s\r\n\r\n")
                got = 0
                while got < 4 * 1024 * 1024:
                    chunk = s.recv(262144)
                    if not chunk:
                        break
                    got += len(chunk)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                s.close()
                self.count("abandon", got >= 4 * 1024 * 1024)
            except OSError:
                self.count("abandon", False)
            time.sleep(0.2)

    def ranges(self) -> None:
        rnd = random.Random(7)
        n = len(self.static)
        while not self.stop.is_set():
            a = rnd.randrange(n)
            b = rnd.randrange(a, n)
            try:
                head, body = self.request(
                    f"GET /static/{payloads.S2_SMALL} HTTP/1.1\r\nHost: s\r\nRange: bytes={a}-{b}\r\n"
                    "Connection: close\r\n\r\n".encode())
                self.count("range", head.startswith(b"HTTP/1.1 206") and body == self.static[a:b + 1])
            except OSError:
                self.count("range", False)

    def slowloris(self) -> None:
        socks: list[socket.socket | None] = [None] * 40
        while not self.stop.is_set():
            for i, s in enumerate(socks):
                try:
                    if s is None:
                        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                        s.sendall(b"GET / HTTP/1.1\r\n")
                        socks[i] = s
                    else:
                        s.sendall(b"X")
                except OSError:
                    self.count("slowloris reopened", True)
                    if s is not None:
                        s.close()
                    socks[i] = None
            self.stop.wait(5)
        for s in socks:
            if s is not None:
                s.close()


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--out", type=Path)


def main(args: argparse.Namespace) -> int | None:
    payloads.ensure()
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    port_n = port.getsockname()[1]
    port.close()
    argv = [str(SG), "-m", "sluicegate", "--bind", f"127.0.0.1:{port_n}",
            "--static", f"/static={payloads.STATIC}", "soak_app:app"]
    proc = subprocess.Popen(argv, cwd=APPS, env=env_for(argv[0]), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_ready(f"127.0.0.1:{port_n}", time.monotonic() + 30)
        stop = threading.Event()
        clients = Clients(port_n, stop)
        threads = [threading.Thread(target=f, daemon=True) for f in
                   (clients.uploads, clients.uploads, clients.streams, clients.streams,
                    clients.abandons, clients.ranges, clients.slowloris)]
        for t in threads:
            t.start()
        seconds = args.minutes * 60
        result = {}
        wrk_thread = threading.Thread(target=lambda: result.update(
            wrk=wrk(f"http://127.0.0.1:{port_n}/hello", 8, seconds, None)))
        wrk_thread.start()
        samples = []
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            samples.append(sample(proc.pid))
            s = samples[-1]
            print(f"{s['t'] - start:6.0f} s  rss {s['rss'] / 2**20:7.1f} MiB  fds {s['fds']:4d}  "
                  f"threads {s['threads']:4d}", flush=True)
            time.sleep(SAMPLE_EVERY_S)
        stop.set()
        wrk_thread.join()
        for t in threads:
            t.join(60)
    finally:
        proc.terminate()
        proc.wait(60)
    late = [s for s in samples if s["t"] - start >= WARMUP_S]
    slopes = {
        "rss MiB/min": slope_per_min([(s["t"], s["rss"] / 2**20) for s in late]),
        "fds/min": slope_per_min([(s["t"], s["fds"]) for s in late]),
        "threads/min": slope_per_min([(s["t"], s["threads"]) for s in late]),
    }
    flat = (slopes["rss MiB/min"] < RSS_MIB_PER_MIN and slopes["fds/min"] < COUNT_PER_MIN
            and slopes["threads/min"] < COUNT_PER_MIN)
    w = result.get("wrk")
    verdict = ("FLAT" if flat else "GROWING") + ": " + ", ".join(f"{k} {v:+.3f}" for k, v in slopes.items())
    lines = [f"Soak: {args.minutes:g} min of mixed traffic, sampled every {SAMPLE_EVERY_S} s; "
             f"slopes fitted after the first {WARMUP_S} s; flat = RSS < {RSS_MIB_PER_MIN} MiB/min, "
             f"fds and threads < {COUNT_PER_MIN}/min",
             f"verdict: {verdict}",
             f"hello world (wrk -c8): {w.requests if w else 0:,} requests, {w.errors if w else '?'} errors",
             "clients (ok, failed): " + ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(clients.counts.items())),
             f"rss first/last after warm-up: {late[0]['rss'] / 2**20:.1f} / {late[-1]['rss'] / 2**20:.1f} MiB; "
             f"fds {late[0]['fds']} / {late[-1]['fds']}; threads {late[0]['threads']} / {late[-1]['threads']}"]
    report = "\n".join(lines)
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "soak.json").write_text(json.dumps(
            {"samples": [{**s, "t": s["t"] - start} for s in samples], "slopes": slopes,
             "flat": flat, "clients": clients.counts}, indent=1))
        (args.out / "soak.md").write_text(report + "\n\ncommand: "
                                          f"python3 benchmarks/run.py soak --minutes {args.minutes:g}\n")
