"""Interleaved `ab` rounds (a new connection per request; `-c1` unless `--concurrency`) against
servers already running.

Owns the A/B measurement behind S4's new-connection figures in BENCHMARKS.md: each round runs
`ab -q -cC -nN` once per server, rotating the order, and reads each server's CPU time (user +
system of all its threads, `bench.procs.cpu_seconds`, the suite's one /proc CPU reader) and its
threads' voluntary context switches (each one a sleep and a wake-up, from /proc/PID/task/*/status)
around the run. Prints the median req/s, CPU per request and wake-ups per request of every server. `run.py` starts and stops servers itself; this script is for
comparing builds or settings side by side, which needs them running at once.

    python3 benchmarks/run.py ab-interleaved NAME=PORT,PATH,PID ... [--requests N] [--rounds R] [--concurrency C]

PID may be several, joined by `+` (a master and its workers).
"""

import argparse
import os
import re
import statistics
import subprocess

from bench.procs import cpu_seconds


def wakeups(pid: int) -> int:
    """Voluntary context switches of all the process's threads so far."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                total += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", f.read(), re.M).group(1))
        except OSError:
            pass
    return total


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("targets", nargs="+", help="NAME=PORT,PATH,PID[+PID...]")
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--concurrency", type=int, default=1, help="ab -c (S6: 64)")


def main(args: argparse.Namespace) -> int | None:
    targets = []
    for t in args.targets:
        name, rest = t.split("=", 1)
        port, path, pid = rest.split(",")
        targets.append((name, int(port), path, [int(p) for p in pid.split("+")]))
    rps = {t[0]: [] for t in targets}
    cpu = {t[0]: [] for t in targets}
    wake = {t[0]: [] for t in targets}
    for r in range(args.rounds):
        k = r % len(targets)
        for name, port, path, pids in targets[k:] + targets[:k]:
            before, w0 = cpu_seconds(pids), sum(wakeups(p) for p in pids)
            out = subprocess.run(["ab", "-q", f"-c{args.concurrency}", f"-n{args.requests}", f"http://127.0.0.1:{port}{path}"],
                                 capture_output=True, text=True, check=True).stdout
            after, w1 = cpu_seconds(pids), sum(wakeups(p) for p in pids)
            failed = int(re.search(r"Failed requests:\s+(\d+)", out).group(1))
            if failed:
                raise SystemExit(f"{name}: {failed} failed requests")
            rps[name].append(float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1)))
            cpu[name].append((after - before) * 1e6 / args.requests)
            wake[name].append((w1 - w0) / args.requests)
    for name, _, _, _ in targets:
        print(f"{name:16s} {statistics.median(rps[name]):9.0f} req/s (rounds: "
              f"{', '.join(str(int(x)) for x in sorted(rps[name]))})  "
              f"CPU {statistics.median(cpu[name]):.1f} µs/request, "
              f"{statistics.median(wake[name]):.2f} wake-ups/request")
