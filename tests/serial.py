"""The tests that must run alone: the `serial` marker and the list of tests it is put on.

`./dev test` runs the suite in two parts: every test not marked `serial` in parallel (pytest-xdist,
`-n 4 --dist loadfile -m "not serial"`: most tests wait on a server rather than compute, and every
fixture is private to its process — ephemeral ports, `mkdtemp` state directories, one shared
server pool per worker), then the `serial` ones alone (`-m serial`). A test belongs here when what
it asserts depends on the machine having CPU to spare: CPU-bound apps and the admission, watchdog
and takeover decisions made from how long calls compute, a CPU quota in a cgroup, a load
balancer's 100 ms health checks against a busy server, or a load whose counts it reads. The
fault-injection table (tests/faults/conftest.py) is printed by the process that ran the faults, so
tests/faults runs here too. A plain `pytest tests` ignores the marker and runs everything in one
process.

Loaded as a plugin by tests/conftest.py (`pytest_plugins`).
"""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest

TESTS = Path(__file__).resolve().parent

# Test-file paths under tests/ (a directory takes every file below it); a `::name` suffix would
# take one test only. Each with why it cannot share the machine.
SERIAL = (
    # CPU-bound requests counted as they run at once: admission's classes are decided from how
    # long calls compute, which a busy machine stretches.
    "test_admission.py",
    "test_blocking_room.py",
    "test_busy_app.py",
    # 3,000 quick calls slow the watchdog's looks down, then blocked and computing calls are
    # taken over: what counts as "quick" is measured on the machine.
    "test_concurrency.py",
    # The server in a cgroup with a CFS quota: whether its calls are throttled depends on the
    # CPU the rest of the machine leaves it.
    "test_allowance.py",
    # HAProxy's checks every 100 ms (300 ms timeout, fall 2) against sixteen CPU-bound clients:
    # "never marked DOWN" holds for a server that gets its share of the CPU.
    "test_haproxy.py",
    # A control client that is slow or silent holds only itself: flaky when run beside others.
    "test_ctl_safety.py",
    # Worker k's own max-requests count, read from which worker served how many: on a starved
    # machine a third request can reach a worker that has served its two (seen under -n 4).
    "test_uwsgi_semantics.py::test_max_requests_delta_gives_worker_k_its_own_count",
    # A client that stops reading while `--write-timeout 1` runs: the client must read the
    # head within that second, which a starved machine does not grant (seen failing under -n 4
    # on a loaded machine, passing alone).
    "test_limits.py::test_write_timeout_closes_a_connection_whose_client_stopped_reading",
    # Faults injected under load (tests/load.py) and the fault table printed at the end.
    "faults",
)


def _is_serial(item: pytest.Item) -> bool:
    try:
        path = Path(item.path).resolve().relative_to(TESTS).as_posix()
    except ValueError:
        return False
    name = item.name.split("[")[0]
    for entry in SERIAL:
        where, _, test = entry.partition("::")
        if (path == where or path.startswith(where + "/")) and test in ("", name):
            return True
    return False


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "serial: runs alone, after the parallel part of ./dev test (tests/serial.py)")


def pytest_collection_modifyitems(config, items: List[pytest.Item]) -> None:
    for item in items:
        if _is_serial(item):
            item.add_marker(pytest.mark.serial)
