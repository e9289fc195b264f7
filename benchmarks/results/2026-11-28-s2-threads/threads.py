"""Where a server's CPU goes, per thread, during one `wrk` run against it.

    python3 threads.py PID PORT PATH [SECONDS] [CONNS]

Reads every thread's user + system time (/proc/PID/task/*/stat) and name (comm) before and
after `wrk -t1 -cCONNS -dSECONDS`, and prints the requests per second and, per thread name,
the CPU per request (µs) and the share of a core it used. wrk's own output is checked for
non-2xx answers and socket errors (a fast wrong answer is a failure).
"""

import os
import re
import subprocess
import sys
from collections import defaultdict

TICK = os.sysconf("SC_CLK_TCK")


def threads(pid: int) -> dict[int, tuple[str, int]]:
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except FileNotFoundError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(tid)] = (name, int(fields[11]) + int(fields[12]))
    return out


def main() -> None:
    pid, port, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    seconds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    conns = int(sys.argv[5]) if len(sys.argv) > 5 else 100
    before = threads(pid)
    run = subprocess.run(["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", f"http://127.0.0.1:{port}{path}"],
                         capture_output=True, text=True, check=True).stdout
    after = threads(pid)
    if "Non-2xx" in run or "Socket errors" in run:
        sys.exit(f"wrk saw errors:\n{run}")
    requests = int(re.search(r"(\d+) requests in", run).group(1))
    ticks: dict[str, int] = defaultdict(int)
    for tid, (name, t) in after.items():
        ticks[name] += t - before.get(tid, (name, 0))[1]
    total = sum(ticks.values())
    print(f"{requests / seconds:,.0f} req/s, {total / TICK * 1e6 / requests:.1f} µs of CPU per request, "
          f"{total / TICK / seconds:.2f} cores")
    for name, t in sorted(ticks.items(), key=lambda kv: -kv[1]):
        if t:
            print(f"  {name:<16} {t / TICK * 1e6 / requests:6.1f} µs/req  {t / TICK / seconds:.2f} cores")


if __name__ == "__main__":
    main()
