"""Latency of small requests beside a large download, against servers already running.

Owns the check behind "one large download cannot starve the others" (BENCHMARKS.md, the
`beside-download` mode): for each server, a separate client process fetches a large body (default `/list/64MiB` of
`benchmarks/apps/s1_bodies.py`) over and over on one keep-alive connection, reading as fast as
it can; meanwhile this process sends a small request (`/x`, the app's 9-byte 404) on another
keep-alive connection every 2 ms and records how long each answer takes. Prints the median,
p90, p99 and maximum over all rounds, and how many probes were answered. Servers are taken in
turn, in a rotated order each round. A server whose event loop writes a whole large answer
before it looks for new events answers the probe only between downloads.

    python3 benchmarks/run.py beside-download NAME=PORT ... --rounds 3 --seconds 6
"""

import argparse
import subprocess
import sys
import time

from bench import rawhttp

DOWNLOADER = """
import sys
from bench import rawhttp
conn = rawhttp.Connection(int(sys.argv[1]), 30)
while True:
    resp = conn.request("GET", sys.argv[2])
    if resp.status != 200:
        raise SystemExit(f"download: status {resp.status}")
"""


def probe(port: int, seconds: float, gap: float) -> list[float]:
    conn = rawhttp.Connection(port, 30)
    times = []
    started = time.monotonic()
    try:
        while time.monotonic() - started < seconds:
            resp = conn.request("GET", "/x")
            if resp.status != 404:
                raise rawhttp.HttpError(f"status {resp.status}")
            times.append(resp.seconds * 1e3)
            time.sleep(gap)
    finally:
        conn.close()
    return times


def quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1)))]


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("targets", nargs="+", help="NAME=PORT")
    ap.add_argument("--download", default="/list/64MiB")
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gap", type=float, default=0.002, help="seconds between probes")


def main(args: argparse.Namespace) -> int | None:
    targets = [(t.split("=")[0], int(t.split("=")[1])) for t in args.targets]
    results: dict = {name: [] for name, _ in targets}
    for r in range(args.rounds):
        k = r % len(targets)
        for name, port in targets[k:] + targets[:k]:
            bg = subprocess.Popen([sys.executable, "-c", DOWNLOADER, str(port), args.download])
            try:
                time.sleep(0.5)
                if bg.poll() is not None:
                    raise SystemExit(f"{name}: the download failed")
                results[name] += probe(port, args.seconds, args.gap)
            finally:
                bg.kill()
                bg.wait()
    print(f"# small requests beside {args.download} downloads, ms "
          f"({args.rounds} rounds of {args.seconds:g} s, a probe every {args.gap * 1e3:g} ms)")
    for name, v in results.items():
        print(f"{name:12s} probes {len(v):6d}  p50 {quantile(v, 0.5):7.3f}  "
              f"p90 {quantile(v, 0.9):7.3f}  p99 {quantile(v, 0.99):7.3f}  max {max(v):7.3f}")
