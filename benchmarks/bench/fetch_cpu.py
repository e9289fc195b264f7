"""Interleaved keep-alive fetch loops against servers already running: time and server CPU.

Owns the side-by-side S1 checks in BENCHMARKS.md's notes (corked or not, pinned or not): for
each path and server, one keep-alive connection of the suite's raw-socket client
(`bench/rawhttp.py`) fetches for SECONDS, checking status and length. The script reads the
server's CPU (all threads, /proc) around the loop, and the client's own (this process, which
is charged for the kernel work its receives do, and on loopback for ACK work the server's
socket did not take while it was busy), and prints medians over rounds. An nginx entry
named `nginx` is sent `/file/<size>` for any path.

    cd benchmarks && python3 -m bench.fetch_cpu NAME=PORT,PID ... --paths /list/64MiB,/bytes/64MiB
"""

import argparse
import os
import statistics
import time

from bench import rawhttp
from bench.procs import cpu_seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="+", help="NAME=PORT,PID")
    ap.add_argument("--paths", default="/list/688128")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
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
                before, started = cpu_seconds([pid]), time.monotonic()
                client_before = sum(os.times()[:2])
                try:
                    while time.monotonic() - started < args.seconds:
                        resp = conn.request("GET", url)
                        if resp.status != 200:
                            raise rawhttp.HttpError(f"status {resp.status}")
                        times.append(resp.seconds)
                except rawhttp.HttpError as e:
                    print(f"{name} {path}: FAILED ({e})")
                    times = []
                after = cpu_seconds([pid])
                client = sum(os.times()[:2]) - client_before
                conn.close()
                if times:
                    n = len(times)
                    results.setdefault((path, name), []).append((
                        (after - before) * 1e6 / n, statistics.median(times) * 1e3,
                        client * 1e6 / n, ((after - before) + client) * 1e6 / n))
    for (path, name), v in sorted(results.items()):
        med = [statistics.median(x[i] for x in v) for i in range(4)]
        print(f"{path:16s} {name:12s} CPU {med[0]:10.1f} µs/fetch  time {med[1]:8.3f} ms  "
              f"client CPU {med[2]:10.1f} µs  server+client {med[3]:10.1f} µs")


if __name__ == "__main__":
    main()
