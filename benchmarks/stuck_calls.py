#!/usr/bin/env python3
"""The stuck-calls run: N concurrent requests to an endpoint that computes in pure Python for
60 s (benchmarks/apps/stuck_loop.py), against a server started with `--timeout T`. Prints each
call's status and time (from the common start), then the server's CPU time (user + system of
all its threads, from /proc) right after the last client is answered and again SETTLE seconds
later, once the clients are gone: a server that still runs the loops keeps burning CPU in
between, one that ended them does not. Then a normal request, to show the threads are free.

Not a test (it measures, and its figures depend on the machine). From the repository's root:

    .venv/bin/python benchmarks/stuck_calls.py [--calls 20] [--timeout 1] [--settle 5]
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENT_TIMEOUT = 120.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of the whole process (all threads), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def start_server(timeout: float):
    cmd = [sys.executable, "-m", "sluicegate", "-b", "127.0.0.1:0", "--timeout", str(timeout),
           "benchmarks.apps.stuck_loop:app"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT})
    lines = []
    for line in proc.stderr:
        lines.append(line)
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if m and "istening" in line:
            threading.Thread(target=lambda: [lines.append(x) for x in proc.stderr],
                             daemon=True).start()
            return proc, int(m.group(1)), lines
    raise SystemExit("the server did not start:\n" + "".join(lines))


def one_call(port: int, i: int, t0: float, out: dict) -> None:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT)
    try:
        c.request("GET", f"/loop?n={i}")
        r = c.getresponse()
        r.read()
        out[i] = (r.status, time.monotonic() - t0)
    except Exception as e:  # a client that gives up is a result too
        out[i] = (type(e).__name__, time.monotonic() - t0)
    finally:
        c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=1.0)
    ap.add_argument("--settle", type=float, default=5.0)
    args = ap.parse_args()
    proc, port, log = start_server(args.timeout)
    try:
        results: dict = {}
        t0 = time.monotonic()
        cpu0 = cpu_seconds(proc.pid)
        clients = [threading.Thread(target=one_call, args=(port, i, t0, results))
                   for i in range(args.calls)]
        for t in clients:
            t.start()
        for t in clients:
            t.join()
        done = time.monotonic() - t0
        cpu_done = cpu_seconds(proc.pid)
        for i, (status, at) in sorted(results.items(), key=lambda kv: kv[1][1]):
            print(f"call {i:2d}: {status} after {at:6.2f} s")
        print(f"all {args.calls} answered after {done:.2f} s; server CPU during the run: "
              f"{cpu_done - cpu0:.2f} s")
        time.sleep(args.settle)
        cpu_later = cpu_seconds(proc.pid)
        print(f"server CPU in the {args.settle:.0f} s after the last client was answered: "
              f"{cpu_later - cpu_done:.2f} s")
        t1 = time.monotonic()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT)
        c.request("GET", "/")
        r = c.getresponse()
        print(f"then a normal request: {r.status} {r.read()!r} in "
              f"{(time.monotonic() - t1) * 1000:.1f} ms")
        c.close()
        ended = sum("ended by sluicegate.RequestTimeout" in line for line in log)
        print(f"error log: {ended} calls 'ended by sluicegate.RequestTimeout', "
              f"{sum('not ended' in line for line in log)} 'not ended' lines")
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:  # a build whose stuck calls outlive the stop
            print("the server did not stop within 30 s of SIGTERM: killed")
            proc.kill()
            proc.wait(30)


if __name__ == "__main__":
    main()
