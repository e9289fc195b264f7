"""S12: health checks, a fast route and a static file behind a busy app (BENCHMARKS.md, "The scenarios").

Owns two measurements per server, each on a freshly started server:

1. **Behind HAProxy** (Debian's, started here with its own config on a loopback port): health
   checks `GET /hello` (an app route; for sluicegate also its `--health-path`) every 100 ms,
   `fall 2 rise 2`, `timeout check 300ms`, as in the founding report, while `wrk -c16` sends
   `/cpu?ms=30` (pure-Python computing) through HAProxy. Recorded: UP→DOWN transitions
   (HAProxy's `chkdown`), failed checks (`chkfail`), the requests clients saw fail (non-2xx:
   HAProxy's 503 when no server is up, plus socket errors), and the CPU-heavy throughput.
2. **Probes while the app computes** (no proxy): 2 and then 16 clients keep `/cpu?ms=200`
   requests running; meanwhile `/hello`, the health path (sluicegate) and a static file are
   each fetched 10 times a second on fresh connections. Recorded: p50/p99/max latency of each
   probe, and timeouts (2 s).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import payloads
import servers
from bench import loadgen, rawhttp
from bench.harness import Harness, Record

# The test suite's HAProxy harness (tests/haproxy_util.py): one way to start, configure, read
# and stop a real HAProxy, for the tests and this benchmark alike.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests import haproxy_util  # noqa: E402
CPU_MS_CHECKED = 30
CPU_MS_PROBED = 200
PROBE_EVERY_S = 0.1
PROBE_TIMEOUT_S = 2.0
HEALTH = "/healthz"
STATIC = f"/static/{payloads.S2_SMALL}"


def _target(server: servers.Server) -> servers.Target:
    return servers.Target("s12_busy", "/hello", b"hello", static=server.has_static, health=True)


def _behind_haproxy(h: Harness, server: servers.Server, rnd: int, check: str) -> None:
    rec = Record("S12", f"HAProxy checks {check}, wrk -c16 /cpu?ms={CPU_MS_CHECKED}", server.name, rnd,
                 "transitions", "lower")
    if not haproxy_util.available():
        rec.status, rec.note = "n/a", "haproxy not installed"
        h.add(rec)
        return
    try:
        with h.serve(server, _target(server)) as (proc, settings):
            rec.settings = settings
            if check == HEALTH and rawhttp.get(proc.port, HEALTH, timeout=5).body != b"OK\n":
                rec.status, rec.note = "n/a", "no health path of its own"
                h.add(rec)
                return
            proxy = haproxy_util.HAProxy(proc.port, check)
            try:
                res = loadgen.wrk(f"http://127.0.0.1:{proxy.port}/cpu?ms={CPU_MS_CHECKED}", 16,
                                  h.mode.wrk_s * 3, None, timeout_s=5)
                row = proxy.stats()["app"]
            finally:
                proxy.stop()
            d = res.detail or {}
            rec.value = float(row.get("chkdown") or 0)
            failed = d.get("status", 0) + d.get("connect", 0) + d.get("read", 0) + d.get("write", 0) + d.get("timeout", 0)
            rec.errors = failed
            rec.requests = res.requests
            rec.verified = True
            rec.extra.update(chkfail=int(row.get("chkfail") or 0), chkdown=int(row.get("chkdown") or 0),
                             failed_requests=failed, cpu_req_s=res.rps, final_status=row.get("status"))
            rec.note = (f"{row.get('chkfail')} failed checks, {failed} failed requests, "
                        f"{res.rps or 0:.0f} cpu req/s, ends {row.get('status')}")
    except Exception as e:  # a server that fails to start or dies is a failed record
        rec.status, rec.value, rec.note = "failed", None, f"{type(e).__name__}: {e}"
    h.add(rec)


def _probe_loop(port: int, path: str, expect: bytes, stop: threading.Event, out: list, timeouts: list) -> None:
    while not stop.is_set():
        start = time.monotonic()
        try:
            r = rawhttp.get(port, path, timeout=PROBE_TIMEOUT_S)
            if r.status == 200 and r.body == expect:
                out.append(time.monotonic() - start)
            else:
                timeouts.append(f"status {r.status}")
        except (rawhttp.HttpError, OSError) as e:
            timeouts.append(type(e).__name__)
        stop.wait(max(0.0, PROBE_EVERY_S - (time.monotonic() - start)))


def _busy_clients(port: int, n: int, seconds: int) -> subprocess.Popen:
    """`n` clients that keep CPU-bound requests running for `seconds`: wrk, a process of its
    own, so that the probes' clocks in this process never wait for this process's GIL behind
    the clients' threads (measured: that alone put 30-40 ms into the probes' p99)."""
    return subprocess.Popen(["wrk", "-t1", f"-c{n}", f"-d{seconds}s", "--timeout", "30s",
                             f"http://127.0.0.1:{port}/cpu?ms={CPU_MS_PROBED}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _probes(h: Harness, server: servers.Server, rnd: int, busy: int) -> None:
    target = _target(server)
    kinds = [("fast route /hello", "/hello", b"hello")]
    kinds.append(("health path", HEALTH, b"OK\n"))
    kinds.append(("static file", STATIC, payloads.static_path().read_bytes() if server.has_static else None))
    recs = {k: Record("S12", f"{k} p99, {busy} CPU-bound clients", server.name, rnd, "s", "lower")
            for k, _, _ in kinds}
    try:
        with h.serve(server, target) as (proc, settings):
            usable = []
            for name, path, expect in kinds:
                recs[name].settings = settings
                if expect is None:  # no static feature: the app would answer, not the server
                    ok = False
                else:
                    try:
                        r = rawhttp.get(proc.port, path, timeout=5)
                        ok = r.status == 200 and r.body == expect
                    except (rawhttp.HttpError, OSError):
                        ok = False
                if ok:
                    usable.append((name, path, expect))
                else:
                    recs[name].status, recs[name].note = "n/a", f"{path} not served by the server itself"
            stop = threading.Event()
            clients = _busy_clients(proc.port, busy, int(h.mode.wrk_s * 3) + 2)
            time.sleep(0.5)  # the busy clients' first requests are in the app
            results = {name: ([], []) for name, _, _ in usable}
            probes = [threading.Thread(target=_probe_loop, args=(proc.port, p, e, stop, *results[n]), daemon=True)
                      for n, p, e in usable]
            for t in probes:
                t.start()
            time.sleep(h.mode.wrk_s * 3)
            stop.set()
            for t in probes:
                t.join(65)
            try:
                clients.wait(90)
            except subprocess.TimeoutExpired:
                clients.kill()
            for name, (lat, bad) in results.items():
                rec = recs[name]
                if not lat:
                    rec.status, rec.note = "failed", f"no probe answered ({len(bad)} timeouts)"
                    continue
                lat.sort()
                p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
                rec.value, rec.requests, rec.errors, rec.verified = p99, len(lat), len(bad), True
                rec.extra.update(p50=statistics.median(lat), p99=p99, max=lat[-1], timeouts=len(bad))
                rec.note = (f"p50 {statistics.median(lat) * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms, "
                            f"max {lat[-1] * 1e3:.1f} ms, {len(bad)} timeouts")
    except Exception as e:
        for rec in recs.values():
            if rec.status == "ok":
                rec.status, rec.note = "failed", f"{type(e).__name__}: {e}"
    for rec in recs.values():
        h.add(rec)


def s12(h: Harness, server: servers.Server, rnd: int) -> None:
    if server.kind == "anchor":
        return
    _behind_haproxy(h, server, rnd, "/hello")
    if server.name.startswith("sluicegate"):
        _behind_haproxy(h, server, rnd, HEALTH)
    for busy in h.mode.s12_busy:
        _probes(h, server, rnd, busy)
