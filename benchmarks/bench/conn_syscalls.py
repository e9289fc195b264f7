"""System calls per connection of servers already running, counted by the kernel's tracepoints
(`perf trace -s`, or `strace -c -f` with `--strace`) attached to each server's process while
`ab` (no keep-alive: one connection per request) runs against it.

Owns the accept-to-close count behind the new-connection figures in BENCHMARKS.md: for each
server, a warm-up of 500 requests, then the tracer attached to every thread of the process, `ab
-q -cC -nN`, the tracer stopped, and its table (summed over threads) divided by N. Timer sleeps
(`clock_nanosleep`, `nanosleep`: a watchdog's tick, not the connection's work) are listed apart.
strace stops the server at every system call, which shifts the order of events (a slowed server
finds the next connection already waiting in the backlog, and never waits for it); perf's
tracepoints slow it far less, so its counts are the ones quoted.

    python3 benchmarks/run.py syscalls NAME=PORT,PATH,PID ... [--requests N] [--concurrency C] [--strace]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import time
from pathlib import Path

TIMERS = ("clock_nanosleep", "nanosleep")


def count(pid: int, port: int, path: str, requests: int, concurrency: int,
          use_strace: bool) -> dict[str, tuple[int, int]]:
    """syscall -> (calls, errors) during one ab run against the server."""
    url = f"http://127.0.0.1:{port}{path}"
    subprocess.run(["ab", "-q", "-c", str(concurrency), "-n", "500", url], capture_output=True, check=True)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "strace.txt"
        argv = (["strace", "-c", "-f", "-p", str(pid), "-o", str(out)] if use_strace else
                ["perf", "trace", "-s", "-p", str(pid), "-o", str(out)])
        tracer = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # strace attaches to every thread
        ab = subprocess.run(["ab", "-q", "-c", str(concurrency), "-n", str(requests), url],
                            capture_output=True, text=True, check=True).stdout
        tracer.send_signal(2)
        tracer.wait(10)
        table = out.read_text()
    failed = int(re.search(r"Failed requests:\s+(\d+)", ab).group(1))
    if failed:
        raise SystemExit(f"{url}: {failed} failed requests")
    calls: dict[str, tuple[int, int]] = {}

    def add(name: str, n: int, errors: int) -> None:
        c, e = calls.get(name, (0, 0))
        calls[name] = (c + n, e + errors)

    for line in table.splitlines():
        if use_strace:
            m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(\d+)?\s*(\w+)$", line)
            if m and m.group(3) != "total":
                add(m.group(3), int(m.group(1)), int(m.group(2) or 0))
        else:  # perf trace -s: "   name   calls  errors  total  min  avg  max  stddev" per thread
            m = re.match(r"\s+([a-z_0-9]+)\s+(\d+)\s+(\d+)\s+[\d.]+\s", line)
            if m:
                add(m.group(1), int(m.group(2)), int(m.group(3)))
    return calls


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("targets", nargs="+", help="NAME=PORT,PATH,PID (the PID whose threads do the work)")
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--concurrency", type=int, default=1, help="ab -c")
    ap.add_argument("--strace", action="store_true", help="count with strace -c -f instead of perf trace")


def main(args: argparse.Namespace) -> int | None:
    tool = "strace -c -f" if args.strace else "perf trace -s"
    print(f"system calls per connection: {tool}, ab -c{args.concurrency} -n{args.requests} "
          "(no keep-alive); calls (of which failed)")
    for t in args.targets:
        name, rest = t.split("=", 1)
        port, path, pid = rest.split(",")
        calls = count(int(pid), int(port), path, args.requests, args.concurrency, args.strace)
        n = args.requests
        work = {k: v for k, v in calls.items() if k not in TIMERS}
        total = sum(c for c, _ in work.values()) / n
        parts = ", ".join(f"{k} {c / n:.2f}" + (f" ({e / n:.2f})" if e else "")
                          for k, (c, e) in sorted(work.items(), key=lambda kv: -kv[1][0]))
        timers = sum(calls.get(k, (0, 0))[0] for k in TIMERS)
        print(f"{name:12s} {total:5.2f} per connection: {parts}"
              + (f"; timer sleeps {timers} in the run" if timers else ""))
    return None
