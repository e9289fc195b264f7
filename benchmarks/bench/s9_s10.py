"""S9 (cores) and S10 (restarts under load) of BENCHMARKS.md ("The scenarios"): worker processes.

S9: an app that computes ~1 ms of pure Python per request (`apps/s9_cpu.py`), `wrk -c8`, with
one and with two worker processes. A single process uses one core for Python whatever its
thread count, so the figure is requests/s with 2 workers and its ratio to 1 (ideal 2 on two
cores, less what the load generator takes). Sluicegate's "1" is its single process (no
master); the peers' is `-w 1` / `--processes 1` / `--workers 1`.

S10: `wrk -c64` on hello world against two workers while the server is (a) reloaded with SIGHUP
every 3 s, (b) recycling workers by request count, (c) losing a worker to `kill -9` every 5 s.
Counted at the client: non-2xx answers and socket errors. The goal is 0 for (a) and (b) and, for
(c), only the requests in flight on the killed worker. Servers that cannot do a case (granian
has no request-count recycling) are listed as n/a. Signals go to the process the harness
started (the master); `kill -9` picks the lowest-numbered live child.
"""

from __future__ import annotations

import os
import signal
import threading

import servers
from bench import loadgen, procs
from bench.harness import Harness, Record, measure_cpu, per_request_us, run_case, wrk_body

S9_CLIENTS = 8
S10_CLIENTS = 64
S10_WORKERS = 2
HUP_EVERY_S = 3.0
KILL_EVERY_S = 5.0
MAX_REQUESTS = 2000


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return sorted(int(p) for p in f.read().split())
    except OSError:
        return []


def s9(h: Harness, server: servers.Server, rnd: int) -> None:
    by_workers: dict[int, Record] = {}
    for workers in (1, 2):
        ours_single = server.kind == "ours" and workers == 1
        target = servers.Target("s9_cpu", "/hello", b"hello", workers=None if ours_single else workers)
        case = f"{workers} worker{'s' if workers > 1 else ''}, wrk -c{S9_CLIENTS}"
        before = len(h.records)
        run_case(h, "S9", case, server, rnd, "req/s", "higher", target,
              wrk_body(h, "/compute", b"computed\n", S9_CLIENTS))
        if len(h.records) > before:
            by_workers[workers] = h.records[-1]
    one, two = by_workers.get(1), by_workers.get(2)
    if one and two and one.value and two.value:
        two.extra["scaling"] = round(two.value / one.value, 3)
        two.note = (two.note + "; " if two.note else "") + f"{two.value / one.value:.2f}× its 1-worker figure"


class _Disturber(threading.Thread):
    """Sends `what` to the server every `every_s` seconds while wrk runs."""

    def __init__(self, proc: procs.ServerProcess, what: str, every_s: float):
        super().__init__(daemon=True)
        self.proc, self.what, self.every_s = proc, what, every_s
        self.count = 0
        self._stop_evt = threading.Event()

    def run(self) -> None:
        while not self._stop_evt.wait(self.every_s):
            try:
                if self.what == "hup":
                    os.kill(self.proc.popen.pid, signal.SIGHUP)
                elif self.what == "kill":
                    kids = _children(self.proc.popen.pid)
                    if not kids:
                        continue
                    os.kill(kids[0], signal.SIGKILL)
                self.count += 1
            except ProcessLookupError:
                return

    def finish(self) -> None:
        self._stop_evt.set()
        self.join(10)


def _s10_body(h: Harness, what: str):
    def body(proc: procs.ServerProcess, rec: Record) -> None:
        url = f"http://127.0.0.1:{proc.port}/"
        seconds = h.mode.s10_s
        disturber = _Disturber(proc, what, HUP_EVERY_S if what == "hup" else KILL_EVERY_S) if what else None
        with measure_cpu(proc) as m:
            if disturber:
                disturber.start()
            try:
                res = loadgen.wrk(url, S10_CLIENTS, seconds, None, timeout_s=5.0)
            finally:
                if disturber:
                    disturber.finish()
        d = res.detail
        rec.requests = res.requests
        rec.errors = res.errors
        rec.value = float(res.errors)
        rec.cpu_us_per_req = per_request_us(m["cpu_s"], res.requests)
        rec.peak_rss = m["peak_rss"]
        rec.verified = res.requests > 0
        done = f"{disturber.count} {'reloads' if what == 'hup' else 'kills'}; " if disturber else ""
        recycled = ""
        rec.note = (f"{done}{res.requests:,} good answers; non-2xx {d.get('status', 0)}, socket errors: "
                    f"connect {d.get('connect', 0)} read {d.get('read', 0)} write {d.get('write', 0)} "
                    f"timeout {d.get('timeout', 0)}{recycled}")
        rec.extra.update(events=disturber.count if disturber else 0, **{k: d.get(k) for k in
                         ("status", "connect", "read", "write", "timeout")})
        if not proc.alive():
            rec.note += "; the server exited"
    return body


def s10(h: Harness, server: servers.Server, rnd: int) -> None:
    cases = [
        (f"HUP every {HUP_EVERY_S:g} s", "hup", servers.Target("s6_hello", "/", b"Hello, World!", workers=S10_WORKERS)),
        (f"--max-requests {MAX_REQUESTS}", "", servers.Target("s6_hello", "/", b"Hello, World!", workers=S10_WORKERS,
                                                            max_requests=MAX_REQUESTS)),
        (f"kill -9 a worker every {KILL_EVERY_S:g} s", "kill",
         servers.Target("s6_hello", "/", b"Hello, World!", workers=S10_WORKERS, respawn=True)),
    ]
    for name, what, target in cases:
        run_case(h, "S10", f"wrk -c{S10_CLIENTS}, {S10_WORKERS} workers, {name}", server, rnd, "errors", "lower",
              target, _s10_body(h, what))
