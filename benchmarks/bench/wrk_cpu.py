"""Interleaved `wrk` rounds against servers already running: requests/s, p50, p99 and the
server's own CPU time per request, side by side.

Owns the A/B measurement behind the pool-path figures
(benchmarks/results/2026-11-25-design-measurements/): each round runs `wrk -tT -cC -dD` once per
server and connection count, rotating the order, and reads each
server's CPU time (user + system of all its threads, `bench.procs.cpu_seconds`) around the run.
Prints medians. Bytes are verified by `bench.loadgen.wrk` (a fast wrong answer is a failure).

    python3 benchmarks/run.py wrk-cpu NAME=PORT,PATH,PID[,MIN_BODYLEN] ... \
        [--conns 4,16,100] [--seconds 3] [--rounds 3] [--threads 1]

`--threads` is wrk's `-t` (at most the connection count).
"""

import argparse
import statistics

from bench.loadgen import wrk
from bench.harness import response_size
from bench.procs import cpu_seconds


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("targets", nargs="+", help="NAME=PORT,PATH,PID[,MIN_BODYLEN]")
    ap.add_argument("--conns", default="4,16,100")
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="wrk -t (at most the connections)")


def main(args: argparse.Namespace) -> int | None:
    targets = []
    for t in args.targets:
        name, rest = t.split("=", 1)
        parts = rest.split(",")
        body = int(parts[3]) if len(parts) > 3 else None
        size = response_size(int(parts[0]), parts[1])
        if body is not None and size < body:
            raise SystemExit(f"{name}: a {size}-byte response is shorter than the {body}-byte body")
        body = size
        targets.append((name, int(parts[0]), parts[1], [int(p) for p in parts[2].split("+")], body))
    conns = [int(c) for c in args.conns.split(",")]
    res = {(t[0], c): ([], [], [], []) for t in targets for c in conns}
    for r in range(args.rounds):
        k = r % len(targets)
        for c in conns:
            for name, port, path, pids, body in targets[k:] + targets[:k]:
                before = cpu_seconds(pids)
                out = wrk(f"http://127.0.0.1:{port}{path}", c, args.seconds, body,
                          threads=min(args.threads, c))
                after = cpu_seconds(pids)
                if out.errors or not out.verified or not out.requests:
                    raise SystemExit(f"{name} c{c}: {out.note or 'errors'}")
                rps, cpu, p50, p99 = res[(name, c)]
                rps.append(out.rps)
                p50.append(out.detail.get("p50_us", 0))
                cpu.append((after - before) * 1e6 / out.requests)
                p99.append(out.detail.get("p99_us", 0) / 1000)
    for c in conns:
        for name, *_ in targets:
            rps, cpu, p50, p99 = res[(name, c)]
            print(f"c{c:<4d} {name:22s} {statistics.median(rps):9.0f} req/s  "
                  f"CPU {statistics.median(cpu):6.1f} µs/req  p50 {statistics.median(p50):6.0f} µs  "
                  f"p99 {statistics.median(p99):7.1f} ms  (cpu rounds: "
                  f"{', '.join(f'{x:.1f}' for x in cpu)})")
