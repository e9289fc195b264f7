"""Interleaved keep-alive fetch loops against servers already running: time and server CPU.

Owns the side-by-side S1 checks in BENCHMARKS.md's notes (corked or not, pinned or not): for
each path and server, one keep-alive connection of the suite's raw-socket client
(`bench/rawhttp.py`) fetches for SECONDS, checking status and length. The script reads the
server's CPU (all threads, /proc) around the loop and prints medians over rounds. An nginx entry
named `nginx` is sent `/file/<size>` for any path.

    cd benchmarks && python3 -m bench.fetch_cpu NAME=PORT,PID ... --paths /list/64MiB,/bytes/64MiB
"""

import argparse
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
                conn.close()
                if times:
                    results.setdefault((path, name), []).append(
                        ((after - before) * 1e6 / len(times), statistics.median(times) * 1e3))
    for (path, name), v in sorted(results.items()):
        print(f"{path:16s} {name:12s} CPU {statistics.median(x[0] for x in v):10.1f} µs/fetch  "
              f"time {statistics.median(x[1] for x in v):8.3f} ms")


if __name__ == "__main__":
    main()
