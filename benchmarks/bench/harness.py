"""The measurement context shared by every scenario: mode, running servers, result records.

Owns (1) the Mode (durations and counts of quick and full runs: every run bounded), (2) the
lifecycle of a server under test: start, readiness (port accepts, then a probe must return the
exact expected body), stop by PID in a finally, and a registry of every server still running so
that Ctrl-C or an exception stops them all, and (3) the shape of one result record, so that the
report reads one format whatever the scenario.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

import servers
from bench import procs, rawhttp

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
    httperf_conns: int  # S2, at 200/s
    huge_file: bool  # S2's 1 GiB file
    idle_connections: int  # S7
    segment_requests: int  # S4


QUICK = Mode("quick", rounds=1, wrk_s=3, warmup_s=0.5, s6_ab_requests=5000, s4_ab_requests=2000,
             fetch_repeats=5, fetch_min_s=1.0, upload_repeats=2, httperf_conns=400, huge_file=False,
             idle_connections=10_000, segment_requests=20)
FULL = Mode("full", rounds=3, wrk_s=10, warmup_s=2, s6_ab_requests=20000, s4_ab_requests=5000,
            fetch_repeats=10, fetch_min_s=3.0, upload_repeats=5, httperf_conns=1000, huge_file=True,
            idle_connections=10_000, segment_requests=50)


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
            why = " (no request-count recycling)" if target.max_requests else " (static)" if target.static else ""
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
