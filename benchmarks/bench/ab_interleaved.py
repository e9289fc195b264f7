"""Interleaved `ab -c1` rounds (a new connection per request) against servers already running.

Owns the A/B measurement behind S4's new-connection figures in BENCHMARKS.md: each round runs
`ab -q -c1 -nN` once per server, rotating the order, and reads each server's CPU time (user +
system of all its threads, `bench.procs.cpu_seconds`, the suite's one /proc CPU reader) around the run. Prints the median req/s and
CPU per request of every server. `run.py` starts and stops servers itself; this script is for
comparing builds or settings side by side, which needs them running at once.

    python3 benchmarks/run.py ab-interleaved NAME=PORT,PATH,PID ... [--requests N] [--rounds R]
"""

import argparse
import re
import statistics
import subprocess

from bench.procs import cpu_seconds


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("targets", nargs="+", help="NAME=PORT,PATH,PID")
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=6)


def main(args: argparse.Namespace) -> int | None:
    targets = []
    for t in args.targets:
        name, rest = t.split("=", 1)
        port, path, pid = rest.split(",")
        targets.append((name, int(port), path, int(pid)))
    rps = {t[0]: [] for t in targets}
    cpu = {t[0]: [] for t in targets}
    for r in range(args.rounds):
        k = r % len(targets)
        for name, port, path, pid in targets[k:] + targets[:k]:
            before = cpu_seconds([pid])
            out = subprocess.run(["ab", "-q", "-c1", f"-n{args.requests}", f"http://127.0.0.1:{port}{path}"],
                                 capture_output=True, text=True, check=True).stdout
            after = cpu_seconds([pid])
            failed = int(re.search(r"Failed requests:\s+(\d+)", out).group(1))
            if failed:
                raise SystemExit(f"{name}: {failed} failed requests")
            rps[name].append(float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1)))
            cpu[name].append((after - before) * 1e6 / args.requests)
    for name, _, _, _ in targets:
        print(f"{name:16s} {statistics.median(rps[name]):9.0f} req/s (rounds: "
              f"{', '.join(str(int(x)) for x in sorted(rps[name]))})  "
              f"CPU {statistics.median(cpu[name]):.1f} µs/request")
