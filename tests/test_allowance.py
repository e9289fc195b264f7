"""The server in a container with a CPU limit: each test puts the server in a cgroup of its own
with a CFS quota (cgroup v1's `cpu` controller, or v2's `cpu.max`, whichever this machine
mounts writable), as `docker run --cpus` and Kubernetes `limits.cpu` do, and reads what the
server does there: the workers `--workers auto` starts, the allowance its metrics show, and
whether a throttled inline call is taken for a blocking one. Skipped where no cgroup can be
made (not root, no writable CPU controller)."""

from __future__ import annotations

import http.client
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import PYTHON
from tests.helpers import wait_for
from tests.load import Load
from tests.test_workers import children

V1 = Path("/sys/fs/cgroup/cpu")
V2 = Path("/sys/fs/cgroup")


def _controller() -> tuple[Path, str] | None:
    """Where a CPU-limited cgroup can be made here: (parent directory, version)."""
    if os.geteuid() != 0:
        return None
    if (V1 / "cpu.cfs_quota_us").exists() and os.access(V1, os.W_OK):
        return V1, "v1"
    if (V2 / "cgroup.controllers").exists() and "cpu" in (V2 / "cgroup.subtree_control").read_text():
        return V2, "v2"
    return None


CONTROLLER = _controller()
pytestmark = pytest.mark.skipif(CONTROLLER is None, reason="no writable cgroup CPU controller")


@pytest.fixture
def cgroup(request):
    """make(cpus) -> the cgroup's directory, limited to `cpus` CPUs (period 100 ms); removed at
    teardown, once its processes have ended (so a test asks for it before `start_server`,
    whose servers are stopped first)."""
    made = []

    def make(cpus: float) -> Path:
        parent, version = CONTROLLER
        d = parent / f"sg-test-{os.getpid()}-{len(made)}"
        d.mkdir()
        made.append(d)
        quota = int(cpus * 100_000)
        if version == "v1":
            (d / "cpu.cfs_period_us").write_text("100000")
            (d / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            (d / "cpu.max").write_text(f"{quota} 100000")
        return d

    yield make
    for d in made:
        wait_for(lambda: not (d / "cgroup.procs").read_text().strip(), f"{d} emptied", 30)
        d.rmdir()


def in_cgroup(d: Path, *argv: str) -> list[str]:
    """A command line that joins the cgroup `d`, then runs `argv` (exec: the same process)."""
    sh = shutil.which("sh")
    return [sh, "-c", f'echo $$ > {d}/cgroup.procs && exec "$@"', "sh", *argv]


def metrics(port: int) -> dict:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    return {s.name: s.value for fam in text_string_to_metric_families(text) for s in fam.samples
            if not s.labels}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("cpus, workers", [(0.5, 1), (1.5, 2)])
def test_workers_auto_starts_the_quota_rounded_up(cgroup, start_server, cpus, workers):
    """--workers auto counted the CPUs of the affinity mask (2 here) whatever the container's
    quota: under half a CPU it started 2 workers that shared 50 ms of CPU per 100 ms."""
    if len(os.sched_getaffinity(0)) < workers:
        pytest.skip("needs as many CPUs as workers")
    d = cgroup(cpus)
    srv = start_server(None, command=in_cgroup(
        d, PYTHON, "-m", "sluicegate", "--bind", "127.0.0.1:0", "--workers", "auto",
        "tests.apps.hello:app"))
    wait_for(lambda: len(children(srv.pid)) == workers, f"{workers} workers", 30)
    assert len(children(srv.pid)) == workers


def test_metrics_show_the_allowance_and_the_throttling(cgroup, start_server):
    """The quota the process may use and how often it was throttled are on /metrics."""
    d = cgroup(0.5)
    mport = free_port()
    srv = start_server(None, command=in_cgroup(
        d, PYTHON, "-m", "sluicegate", "--bind", "127.0.0.1:0", "--metrics-bind",
        f"127.0.0.1:{mport}", "tests.apps.hello:app"))
    wait_for(lambda: _scrapes(mport), "the metrics listener")
    m = metrics(mport)
    assert m["process_cpu_allowance_cores"] == pytest.approx(0.5)
    assert "process_cpu_throttled_periods_total" in m
    assert "process_cpu_throttled_seconds_total" in m
    assert srv.pid


def _scrapes(port: int) -> bool:
    try:
        metrics(port)
        return True
    except OSError:
        return False


def test_a_throttled_inline_call_is_not_taken_for_a_blocking_one(cgroup, start_server):
    """Under a quota the watchdog judged an inline call by the wall: a call stopped by the quota
    for tens of milliseconds looked like one that computes for 50 ms, was taken over, and put
    the server into dispatch mode, where every call went to the pool (0.2x the quota's share of
    the unconstrained rate for hello world). Judged by the thread's CPU clock, and with the
    throttled time taken off pool calls, calls of 1 ms of CPU from one client stay inline
    while a quota of a tenth of a CPU throttles the server every period. And one run in three
    still failed: during a stop the GIL went to another thread (`sg-control`, a Python thread
    that polls its socket every 500 ms), which the quota stopped holding it; the loop thread,
    asleep waiting for the GIL, was read as blocked and the call taken over. A wait for the GIL
    while another thread can run is not blocking (`thread_state::thread_wait`)."""
    mport = free_port()
    d = cgroup(0.1)
    # Started inside the cgroup, as in a container: a server moved into one while it runs
    # knows of the quota only at its next reading (every second), and a call judged before
    # that by the wall may rightly be taken over.
    srv = start_server(None, command=in_cgroup(
        d, PYTHON, "-m", "sluicegate", "--bind", "127.0.0.1:0", "--metrics-bind",
        f"127.0.0.1:{mport}", "tests.apps.busy:app"))
    wait_for(lambda: _scrapes(mport), "the metrics listener")
    with Load(srv.port, clients=1, path="/cpu?ms=1&token=t") as load:
        load.wait_for(400, timeout=120)
    m = metrics(mport)
    assert m["process_cpu_throttled_periods_total"] > 0, "the quota never throttled: no test"
    assert m["sluicegate_takeovers_total"] == 0
    assert m["sluicegate_pool_calls_total"] == 0
    assert m["sluicegate_inline_calls_total"] >= 400


def test_the_start_gate_narrows_while_the_quota_throttles(cgroup, start_server):
    """`--start-gate auto` under a quota: 16 places while the quota does not throttle (the
    process's threads then run as on the whole machine, where two places cost S5's sleeping app
    14% of its rate: benchmarks/results/2026-11-29-gate-unbound/), two from the watchdog's first
    reading that sees the cgroup throttled (a process of the same cgroup spinning past the
    quota), 16 again once a reading sees no more."""
    mport = free_port()
    d = cgroup(0.5)
    srv = start_server(None, command=in_cgroup(
        d, PYTHON, "-m", "sluicegate", "--bind", "127.0.0.1:0", "--scheduler", "pool",
        "--metrics-bind", f"127.0.0.1:{mport}", "tests.apps.hello:app"))
    wait_for(lambda: _scrapes(mport), "the metrics listener")
    places = lambda: metrics(mport).get("sluicegate_start_gate_places")  # noqa: E731
    wait_for(lambda: places() == 16, "16 places under a quota that does not throttle")
    spinner = subprocess.Popen(in_cgroup(d, PYTHON, "-c", "while True: pass"))
    try:
        wait_for(lambda: places() == 2, "two places while the quota throttles", timeout=30)
    finally:
        spinner.kill()
        spinner.wait()
    wait_for(lambda: places() == 16, "16 again once it no longer throttles", timeout=30)
    assert srv.pid


@pytest.mark.parametrize("workers", [[], ["--workers", "1"]], ids=["single", "master"])
def test_ctl_status_shows_the_allowance_and_the_throttling(cgroup, start_server, tmp_path,
                                                           workers):
    """`ctl status` showed no CPU figure at all: under a container's limit an operator could
    not see the quota the server was given, nor that the kernel was throttling it."""
    from tests.test_ctl import ctl, ctl_json

    d = cgroup(0.5)
    sock = str(tmp_path / "sg.ctl")
    srv = start_server(None, command=in_cgroup(
        d, PYTHON, "-m", "sluicegate", "--bind", "127.0.0.1:0", "--control-socket", sock,
        *workers, "tests.apps.hello:app"))
    a = ctl_json(sock, "status")["master"]["allowance"]
    if workers:  # read by the worker it asked: the master still has no extension (master.py)
        with open(f"/proc/{srv.pid}/maps") as f:
            assert "/_core." not in f.read()
    code, text, _ = ctl("--socket", sock, "status")
    stat = dict(line.split() for line in (d / "cpu.stat").read_text().splitlines())
    assert a["quota"] == pytest.approx(0.5) and a["period_s"] == pytest.approx(0.1)
    assert a["cpus"] == len(os.sched_getaffinity(0))
    assert 0 <= a["nr_throttled"] <= int(stat["nr_throttled"])
    assert 0 <= a["nr_periods"] <= int(stat["nr_periods"])
    assert code == 0 and "cpu  quota 0.5 of" in text and "(50 ms of every 100 ms)" in text
    assert re.search(r"throttled \d+ of \d+ periods, \d+\.\d{3}s", text)

