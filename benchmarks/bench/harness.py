"""The helpers every benchmark shares: mode, running servers, result records, the case runner.

Owns (1) the Mode (durations and counts of quick, full and standing runs: every run bounded), (2) the
lifecycle of a server under test: start, readiness (port accepts, then a probe must return the
exact expected body), stop by PID in a finally, and a registry of every server still running so
that Ctrl-C or an exception stops them all, (3) the shape of one result record, so that the
report reads one format whatever the scenario, (4) the case runner and the verified wrk body
that every scenario module (scenarios, s9_s10, s12, s13) uses, and (5) the few helpers of the
tools that start servers by hand (s11, failover, soak, observability, S8's): their environment,
readiness, a wire-level fetch, one response's size. It is the bottom of bench/: it imports no
scenario or tool module, so none of them imports another for a helper.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import servers
from bench import loadgen, procs, rawhttp

FETCH_TIMEOUT_S = 30.0  # one fetch; a server iterating a bare bytes object per byte never ends
RECHECK_TIMEOUT_S = 5.0
SAMPLE_EVERY_S = 0.25  # a handful of requests beside thousands: no weight on the figures
SAMPLE_TIMEOUT_S = 5.0
READY_TIMEOUT_S = 40.0  # mod_wsgi-express and gunicorn take a second or two; granian loads a runtime


@dataclass(frozen=True)
class Mode:
    name: str
    rounds: int
    wrk_s: float  # one wrk run
    warmup_s: float  # wrk warm-up before a timed wrk run
    s6_ab_requests: int
    s4_ab_requests: int
    fetch_repeats: int  # S1, S3 (median of at least this many)
    fetch_min_s: float  # S1, S3, S8: ...and until the fetches add up to this long
    upload_repeats: int  # S8
    httperf_conns: int  # S2, at 200/s (0: no httperf case)
    huge_file: bool  # S2's 1 GiB file
    idle_connections: int  # S7
    segment_requests: int  # S4
    once: tuple[str, ...] = ()  # scenarios measured in the first round only (the others every round)
    s5_clients: tuple[int, ...] = (10, 100, 1000)
    s10_s: float = 10.0  # one S10 wrk run (reloads every 3 s, kills every 5 s)
    upload_min_s: float = 0.0  # S8: its uploads add up to at least this long (else fetch_min_s)
    s12_busy: tuple[int, ...] = (2, 16)  # S12's probe cases: CPU-bound clients beside the probes
    s13_short: bool = False  # S13: c16 and c100 at CONN_MAX_AGE 0 and 60, peers 8 threads, no bursts
    s13_flask: bool = False  # S13: the Flask + SQLAlchemy cases only
    s13_burst: bool = False  # S13: the 300-client bursts only
    s14_ab_requests: int = 4000  # S14 new-conn: requests of each ab run (a full handshake each)
    s14_big_s: float = 10.0  # S14 64 MiB: length of each run
    s15a_requests: int = 3000  # S15a: requests of each h2load run (gunicorn: a fifteenth, its
    # streams run one after another at ~10 req/s)
    s16_plan: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("hello", ("proxy", "keepalive", "uwsgi-tcp", "uwsgi-unix")),
        ("21k", ("proxy", "keepalive", "uwsgi-tcp", "uwsgi-unix")))  # S16: (answer, nginx modes)


QUICK = Mode("quick", rounds=1, wrk_s=3, warmup_s=1, s6_ab_requests=5000, s4_ab_requests=2000,
             fetch_repeats=5, fetch_min_s=1.0, upload_repeats=2, httperf_conns=400, huge_file=False,
             idle_connections=10_000, segment_requests=20, s14_ab_requests=1000, s14_big_s=4,
             s15a_requests=1000)
FULL = Mode("full", rounds=3, wrk_s=10, warmup_s=2, s6_ab_requests=20000, s4_ab_requests=5000,
            fetch_repeats=10, fetch_min_s=3.0, upload_repeats=5, httperf_conns=1000, huge_file=True,
            idle_connections=10_000, segment_requests=50, s10_s=30.0)
# The standing run (`run.py --standing`): every scenario S1-S16 beside every peer in one run of
# about 75 minutes on 2 cores. The scenarios BENCHMARKS.md charts, and those whose ratios to the
# peers are targets within 5-10% (S1's large bodies, S4's new connection per request, S8's
# upload, S13's Django), run in every one of the 3 rounds; the others in the first only (`once`).
# S1 is not once: a single fetch loop of its 688,128-byte `[bytes]` case read 0.91 ms in one run
# and 0.27 ms a minute later (benchmarks/results/2026-11-28-standing/README.md). Runs are short
# (2 s of wrk after 1 s of warm-up), so the figures are medians of 3 short runs: BENCHMARKS.md
# says so beside them.
STANDING = Mode("standing", rounds=3, wrk_s=2, warmup_s=1, s6_ab_requests=5000, s4_ab_requests=5000,
                fetch_repeats=5, fetch_min_s=0.5, upload_repeats=2, httperf_conns=0, huge_file=False,
                idle_connections=10_000, segment_requests=20, upload_min_s=1.5,
                once=("S7", "S9", "S10", "S11", "S12"),
                s5_clients=(1000,), s10_s=9.0, s12_busy=(16,), s13_short=True, s14_ab_requests=1000,
                s14_big_s=4.0, s15a_requests=2000,
                s16_plan=(("hello", ("proxy", "keepalive", "uwsgi-tcp", "uwsgi-unix")),))

# `run.py --tiny`: a mode's plan with every run cut to a minimum (a smoke test of the run itself).
TINY = dict(rounds=1, wrk_s=1, warmup_s=0, s6_ab_requests=500, s4_ab_requests=300, fetch_repeats=2,
            fetch_min_s=0.05, upload_repeats=1, upload_min_s=0.0, huge_file=False, idle_connections=1000,
            segment_requests=5, s10_s=4.0, s14_ab_requests=200, s14_big_s=3.0, s15a_requests=300)


class NotServed(Exception):
    """The server cannot serve this case at all (no such feature): reported as n/a."""


class StartError(Exception):
    """The server did not start or did not answer its probe correctly."""


@dataclass
class Record:
    scenario: str
    case: str
    server: str
    round: int
    metric: str  # "req/s", "s", "replies", "segments"
    better: str  # "higher" or "lower"
    value: float | None = None
    status: str = "ok"  # "ok", "failed", "n/a", "skipped"
    requests: int = 0
    errors: int = 0
    cpu_us_per_req: float | None = None
    peak_rss: int | None = None
    verified: bool = False
    note: str = ""
    settings: str = ""
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


RUNNING: dict[int, procs.ServerProcess] = {}


def stop_all() -> None:
    for proc in list(RUNNING.values()):
        proc.stop()
        RUNNING.pop(proc.sid, None)


class Harness:
    def __init__(self, mode: Mode, logs: Path):
        self.mode = mode
        self.logs = logs
        self.records: list[Record] = []
        self._seq = 0

    @contextlib.contextmanager
    def serve(self, server: servers.Server, target: servers.Target) -> Iterator[tuple[procs.ServerProcess, str]]:
        """Start `server` for `target`; yield (process, settings); always stop it."""
        port = procs.free_port()
        launch = server.launch(target, port)
        if launch is None:
            why = (" (no request-count recycling)" if target.max_requests else " (static)" if target.static
                   else " (no worker processes)" if (target.workers or 1) > 1 else "")
            raise NotServed(f"{server.name} does not serve {target.module}{why}")
        self._seq += 1
        log = self.logs / f"{self._seq:04d}-{server.name}-{target.module}{'-static' if target.static else ''}.log"
        proc = procs.start(server.name, launch.argv, launch.cwd, launch.env, port, log)
        RUNNING[proc.sid] = proc
        try:
            deadline = time.monotonic() + READY_TIMEOUT_S
            if not procs.wait_port(port, deadline, proc):
                raise StartError(f"did not start: {proc.log_tail() or 'no output'}")
            self._probe(proc, target, deadline)
            yield proc, launch.settings
        finally:
            proc.stop()
            RUNNING.pop(proc.sid, None)

    @staticmethod
    def _probe(proc: procs.ServerProcess, target: servers.Target, deadline: float) -> None:
        last = ""
        while time.monotonic() < deadline:
            try:
                r = rawhttp.get(proc.port, target.probe, timeout=10)
                if r.status == 200 and r.body == target.expect:
                    return
                last = f"probe {target.probe}: status {r.status}, {len(r.body)} bytes"
            except (rawhttp.HttpError, OSError) as e:
                last = f"probe {target.probe}: {e}"
            if not proc.alive():
                break
            time.sleep(0.2)
        raise StartError(f"not ready: {last}; log: {proc.log_tail(3)}")

    def add(self, rec: Record) -> Record:
        self.records.append(rec)
        shown = f"{rec.value:,.4g} {rec.metric}" if rec.value is not None else rec.status
        extra = f" [{rec.note}]" if rec.note else ""
        print(f"  {rec.scenario} {rec.case:<34} {rec.server:<17} {shown}{extra}"[:220], flush=True)
        return rec


def sha256(data: bytes | bytearray) -> str:
    return hashlib.sha256(data).hexdigest()


def measure_cpu(proc: procs.ServerProcess):
    """Context: yields a dict filled on exit with the server's cpu_s and peak/current RSS."""

    @contextlib.contextmanager
    def cm() -> Iterator[dict]:
        out: dict = {}
        before = proc.sample()
        try:
            yield out
        finally:
            after = proc.sample()
            out["cpu_s"] = max(0.0, after.cpu_s - before.cpu_s)
            out["peak_rss"] = after.peak_rss
            out["rss"] = after.rss
            out["rss_before"] = before.rss

    return cm()


def per_request_us(cpu_s: float, requests: int) -> float | None:
    return round(cpu_s / requests * 1e6, 1) if requests else None


# ---- the case runner shared by every scenario --------------------------------------------------------------------------

def run_case(h: Harness, sid: str, case: str, server: servers.Server, rnd: int, metric: str, better: str,
          target: servers.Target, body: Callable[[procs.ServerProcess, Record], None]) -> None:
    """Run one case: start the server, call body(proc, rec), record whatever happened."""
    rec = Record(sid, case, server.name, rnd, metric, better)
    try:
        with h.serve(server, target) as (proc, settings):
            rec.settings = settings
            body(proc, rec)
            if not proc.alive():
                rec.status, rec.value = "failed", None
                rec.note = (rec.note + "; " if rec.note else "") + f"server died: {proc.log_tail(2)}"
    except NotServed as e:
        rec.status, rec.note = "n/a", str(e)
    except StartError as e:
        rec.status, rec.note = "failed", str(e)
    except (rawhttp.HttpError, OSError) as e:
        rec.status, rec.value, rec.note = "failed", None, f"{type(e).__name__}: {e}"
    h.add(rec)


def fail(rec: Record, why: str) -> None:
    if rec.value is not None:
        why += f" (measured {rec.value:,.4g} {rec.metric}, discarded)"
    rec.status, rec.value, rec.verified = "failed", None, False
    rec.note = f"{rec.note}; {why}" if rec.note else why


def verify_fetch(port: int, path: str, expect: bytes) -> tuple[rawhttp.Response | None, str]:
    try:
        r = rawhttp.get(port, path, timeout=FETCH_TIMEOUT_S)
    except (rawhttp.HttpError, OSError) as e:
        return None, f"verification fetch: {e}"
    if r.status != 200:
        return None, f"verification fetch: status {r.status}"
    if r.body != expect:
        return None, f"verification fetch: body {len(r.body)} bytes, sha256 differs" if len(r.body) == len(
            expect) else f"verification fetch: body {len(r.body)} bytes, expected {len(expect)}"
    return r, ""


def wrk_body(h: Harness, path: str, expect: bytes, connections: int, seconds: float | None = None,
              warmup: bool = True, timeout_s: float = 2.0) -> Callable[[procs.ServerProcess, Record], None]:
    def body(proc: procs.ServerProcess, rec: Record) -> None:
        ref, why = verify_fetch(proc.port, path, expect)
        if ref is None:
            return fail(rec, why)
        url = f"http://127.0.0.1:{proc.port}{path}"
        if warmup and h.mode.warmup_s:
            loadgen.wrk(url, connections, h.mode.warmup_s, None, timeout_s=timeout_s)
        sampler = Sampler(proc.port, path, expect)
        with measure_cpu(proc) as m:
            sampler.start()
            try:
                res = loadgen.wrk(url, connections, seconds or h.mode.wrk_s, ref.wire_bytes, timeout_s=timeout_s)
            finally:
                sampler.finish()
        fill_load(rec, res, m)
        rec.extra.update(samples_ok=sampler.ok, samples_wrong=sampler.wrong, samples_failed=sampler.failed)
        if sampler.wrong:
            fail(rec, f"{sampler.wrong} of {sampler.ok + sampler.wrong} responses sampled during the run were "
                       f"wrong: {sampler.first_wrong}")
        rec.extra.update({k: res.detail.get(k) for k in ("p50_us", "p90_us", "p99_us", "max_us", "connect", "read",
                                                        "write", "timeout", "status", "bytes_per_response")})
        rec.extra["response_bytes"] = ref.wire_bytes
        recheck(proc, rec, path, expect)
    return body


class Sampler(threading.Thread):
    """Fetches the path every SAMPLE_EVERY_S during a wrk run and compares the whole body: wrk
    itself only counts bytes, and a server may answer correctly when idle and wrongly under load."""

    def __init__(self, port: int, path: str, expect: bytes):
        super().__init__(daemon=True)
        self.port, self.path, self.expect = port, path, expect
        self.ok = self.wrong = self.failed = 0
        self.first_wrong = ""
        self._stop_evt = threading.Event()

    def run(self) -> None:
        while not self._stop_evt.wait(SAMPLE_EVERY_S):
            try:
                r = rawhttp.get(self.port, self.path, timeout=SAMPLE_TIMEOUT_S)
            except (rawhttp.HttpError, OSError):
                self.failed += 1  # refused or slow under load: wrk's error counts say it already
                continue
            if r.status == 200 and r.body == self.expect:
                self.ok += 1
            else:
                self.wrong += 1
                self.first_wrong = self.first_wrong or f"status {r.status}, {len(r.body)} body bytes"

    def finish(self) -> None:
        self._stop_evt.set()
        self.join(SAMPLE_TIMEOUT_S + 1)


def fill_load(rec: Record, res: loadgen.LoadResult, m: dict) -> None:
    rec.value, rec.requests, rec.errors = res.rps, res.requests, res.errors
    rec.cpu_us_per_req = per_request_us(m["cpu_s"], res.requests)
    rec.peak_rss = m["peak_rss"]
    rec.verified = res.verified
    rec.note = res.note
    client_bound(rec, res)
    if res.rps is None:
        fail(rec, "the load generator did not run")
    elif not res.verified:
        fail(rec, "wrong bytes")


# The share of its cores from which a load generator is taken to set the rate itself.
CLIENT_BOUND_SHARE = 0.9


def client_bound(rec: Record, res: loadgen.LoadResult) -> None:
    """The load generator's own CPU per request, and, when it used (nearly) all of its threads'
    cores, the rate it allows at most: what a server that cost nothing would reach here."""
    cpu, threads = res.detail.get("client_cpu_s"), res.detail.get("client_threads") or 1
    if not cpu or not res.requests or not res.seconds:
        return
    us = cpu * 1e6 / res.requests
    rec.extra["client_us_per_req"] = us
    if cpu / res.seconds >= CLIENT_BOUND_SHARE * threads:
        rec.extra["ceiling_rps"] = threads * 1e6 / us


def recheck(proc: procs.ServerProcess, rec: Record, path: str, expect: bytes) -> None:
    """After the load the server must still answer correctly. A wrong answer or a dead server
    fails the case; a server still busy with a backlog (S5) only gets a note."""
    if rec.status != "ok":
        return
    try:
        r = rawhttp.get(proc.port, path, timeout=RECHECK_TIMEOUT_S)
    except (rawhttp.HttpError, OSError) as e:
        if proc.alive() and isinstance(e, rawhttp.HttpError) and "timed out" in str(e):
            rec.note = (rec.note + "; " if rec.note else "") + f"still busy {RECHECK_TIMEOUT_S:g} s after the run"
        else:
            fail(rec, f"after the run: {e}")
        return
    if r.status != 200 or r.body != expect:
        fail(rec, f"after the run: status {r.status}, body {len(r.body)} bytes")


# ---- servers started by hand: the tools outside the suite (s11, soak, failover, observability, S8's)
# These start a server themselves (a unix socket, two instances behind HAProxy, options the suite's
# table does not have) with sluicegate's own venv and the peers' venv.

SG = servers.SLUICEGATE_PY  # sluicegate's work-tree build (./dev build)
PEERS = servers.VENV / "bin"  # the peers' venv (setup.sh)


def env_for(argv0: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICEGATE_")}
    env["PYTHONPATH"] = str(servers.APPS)
    env["PATH"] = f"{Path(argv0).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


def wait_ready(kind_target: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            if kind_target.startswith("unix:"):
                s = socket.socket(socket.AF_UNIX)
                s.connect(kind_target[5:])
            else:
                host, port = kind_target.rsplit(":", 1)
                s = socket.create_connection((host, int(port)))
            s.close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{kind_target} never became ready")


def fetch_wire(port: int, path: str, sock: socket.socket | None = None) -> tuple[int, bytes]:
    """One keep-alive GET (through nginx, say): (bytes on the wire, decoded body). `sock` is a
    connection already open (a TLS one: the bytes counted are then the plaintext's)."""
    with sock or socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
        f = s.makefile("rb")
        raw = b""
        head = []
        while (line := f.readline()) != b"\r\n":
            head.append(line)
            raw += line
        raw += b"\r\n"
        fields = {ln.split(b":", 1)[0].strip().lower(): ln.split(b":", 1)[1].strip() for ln in head[1:]}
        body = b""
        if b"content-length" in fields:
            body = f.read(int(fields[b"content-length"]))
            raw += body
        else:
            while True:
                size_line = f.readline()
                raw += size_line
                n = int(size_line.strip(), 16)
                chunk = f.read(n + 2)
                raw += chunk
                if n == 0:
                    break
                body += chunk[:-2]
        return len(raw), body


def response_size(port: int, path: str) -> int:
    """Bytes of one whole keep-alive response (head + body), for wrk's byte check."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += s.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = int(next(ln.split(b":", 1)[1] for ln in head.split(b"\r\n")
                          if ln.lower().startswith(b"content-length:")))
        while len(body) < length:
            body += s.recv(65536)
        return len(head) + 4 + length


def by_hand_argv(name: str, port: int, app: str, body_limit: int) -> list[str] | None:
    bind = f"127.0.0.1:{port}"
    if name == "sluicegate":
        return [str(SG), "-m", "sluicegate", "--bind", bind, app]
    if name == "sluicegate-base":
        base = os.environ.get("SLUICEGATE_BASE_PY")
        return [base, "-m", "sluicegate", "--bind", bind, app] if base else None
    if name == "granian":
        return [str(PEERS / "granian"), "--interface", "wsgi", "--host", "127.0.0.1", "--port",
                str(port), "--workers", "1", "--blocking-threads", "4", "--http", "1", app]
    if name == "gunicorn-gthread":
        return [str(PEERS / "gunicorn"), "-w", "1", "-k", "gthread", "--threads", "4", "--bind",
                bind, app]
    if name == "waitress":
        return [str(PEERS / "waitress-serve"), "--listen", bind, "--max-request-body-size",
                str(body_limit), app]
    raise SystemExit(f"unknown server {name}")


@contextlib.contextmanager
def serving_by_hand(name: str, app: str, body_limit: int = 128 << 20):
    """`name` serving `app` on a free port (yields the port; None if the server is not set
    up, e.g. sluicegate-base without SLUICEGATE_BASE_PY); stopped on the way out."""
    port = procs.free_port()
    argv = by_hand_argv(name, port, app, body_limit)
    if argv is None:
        yield None
        return
    p = subprocess.Popen(argv, cwd=servers.APPS, env=env_for(argv[0]),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        wait_ready(f"127.0.0.1:{port}", time.monotonic() + 30)
        yield port
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
