"""Interleaved keep-alive fetch loops against servers already running: time and server CPU.

Owns the side-by-side S1 checks in BENCHMARKS.md's notes (corked or not, pinned or not): for
each path and server, one keep-alive connection of the suite's raw-socket client
(`bench/rawhttp.py`) fetches for SECONDS, checking status and length. The script reads the
server's CPU (all threads, /proc) around the loop, and the client's own (this process, which
is charged for the kernel work its receives do, and on loopback for ACK work the server's
socket did not take while it was busy), and prints medians over rounds. An nginx entry
named `nginx` is sent `/file/<size>` for any path.

It also reads the CPU of the kernel's `ksoftirqd` threads. On loopback the receiving side of
the server's own sends (and the ACKs it gets back) runs as softirq work; the kernel does it in
the sending process's time, unless a long send call runs past the softirq budget, when the rest
goes to `ksoftirqd`, which no process's /proc counters show. A server that writes in larger
calls is charged less for the same work that way (measured: fastwsgi's 12 MiB writes leave
1.1 ms per 64 MiB response to ksoftirqd). `server+softirqd` is the fairer figure. With
`--ref NAME`, every other target's figures are divided by NAME's in the same round, and the
median of those ratios is printed (ratios hold up better on a noisy machine than medians).
`--discard-body` reads each body without decoding or keeping it: a chunked body's decoding in
Python costs this client about 1 ms per 2.5 MB in 8 KiB chunks, client CPU on a machine whose
other core the server wants.

    python3 benchmarks/run.py fetch-cpu NAME=PORT,PID ... --paths /list/64MiB,/bytes/64MiB
"""

import argparse
import os
import statistics
import time

from bench import rawhttp
from bench.procs import cpu_seconds


def ksoftirqd_pids() -> list[int]:
    """The kernel's softirq threads, one per CPU."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as f:
                    if f.read().startswith("ksoftirqd/"):
                        pids.append(int(entry))
            except OSError:
                pass
    return pids


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("targets", nargs="+", help="NAME=PORT,PID")
    ap.add_argument("--paths", default="/list/688128")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ref", help="print every other target's per-round ratios to this one")
    ap.add_argument("--discard-body", action="store_true",
                    help="read each body to its end without decoding or keeping it")


def main(args: argparse.Namespace) -> int | None:
    softirqd = ksoftirqd_pids()
    targets = []
    for t in args.targets:
        name, rest = t.split("=", 1)
        port, pid = rest.split(",")
        targets.append((name, int(port), int(pid)))
    results: dict = {}
    for r in range(args.rounds):
        k = r % len(targets)
        for path in args.paths.split(","):
            for name, port, pid in targets[k:] + targets[:k]:
                url = "/file/" + path.rsplit("/", 1)[1] if name == "nginx" else path
                conn = rawhttp.Connection(port, 10)
                times = []
                soft_before = cpu_seconds(softirqd)
                before, started = cpu_seconds([pid]), time.monotonic()
                client_before = sum(os.times()[:2])
                try:
                    while time.monotonic() - started < args.seconds:
                        resp = conn.request("GET", url, keep_body=not args.discard_body)
                        if resp.status != 200:
                            raise rawhttp.HttpError(f"status {resp.status}")
                        times.append(resp.seconds)
                except rawhttp.HttpError as e:
                    print(f"{name} {path}: FAILED ({e})")
                    times = []
                after = cpu_seconds([pid])
                soft = cpu_seconds(softirqd) - soft_before
                client = sum(os.times()[:2]) - client_before
                conn.close()
                if times:
                    n = len(times)
                    results.setdefault((path, name), []).append((
                        (after - before) * 1e6 / n, statistics.median(times) * 1e3,
                        client * 1e6 / n, ((after - before) + client) * 1e6 / n,
                        soft * 1e6 / n, ((after - before) + soft) * 1e6 / n))
                else:
                    results.setdefault((path, name), []).append(None)
    for (path, name), v in sorted(results.items()):
        v = [x for x in v if x is not None]
        if not v:
            continue
        med = [statistics.median(x[i] for x in v) for i in range(6)]
        print(f"{path:16s} {name:12s} CPU {med[0]:10.1f} µs/fetch  time {med[1]:8.3f} ms  "
              f"client CPU {med[2]:10.1f} µs  server+client {med[3]:10.1f} µs  "
              f"ksoftirqd {med[4]:8.1f} µs  server+softirqd {med[5]:10.1f} µs")
    if args.ref:
        print(f"# per-round ratios to {args.ref} (median, with the range over rounds)")
        for (path, name), v in sorted(results.items()):
            ref = results.get((path, args.ref))
            if name == args.ref or not ref:
                continue
            pairs = [(a, b) for a, b in zip(v, ref) if a is not None and b is not None]
            if not pairs:
                continue
            cols = []
            for label, i in (("CPU", 0), ("time", 1), ("server+softirqd", 5)):
                r = [a[i] / b[i] for a, b in pairs]
                cols.append(f"{label} {statistics.median(r):.3f} ({min(r):.2f}-{max(r):.2f})")
            print(f"{path:16s} {name:12s} ÷ {args.ref}: " + "  ".join(cols))
