"""Pool calls wait to start on the server's gate, not in CPython's GIL wait.

CPython's GIL waiters wake every switch interval (5 ms) to ask again; with hundreds of calls
starting at once (a sleeping app's clients after a CPU quota's pause) their wake-ups were most
of the server's context switches. So at most two calls wait for the GIL to start
(`wsgi/pool/start_gate.rs`, `START_WAITERS`); the others sleep on the gate's own condition
variable until a place frees. `--start-gate` sets the places: `on` two, `off` none, `auto` (the
default) two while the allowance binds (a cpuset below the machine, or a quota that throttled
since the last reading: `tests/test_allowance.py`), 16 otherwise.

The fixture (`tests/apps/gil_held.py`) holds the GIL inside one C call until the test writes
to a FIFO, so every call sent meanwhile is stopped where it waits to start, with no timing
involved. Where each server thread waits is read from `/proc/PID/task/TID/syscall`: a thread in
`futex` shows the futex's address, and the GIL's lives in the interpreter's memory (a mapping of
the python executable or of libpython), the gate's in the server's extension module.
"""

import os
import platform
import shutil
import threading
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import PYTHON
from tests.helpers import wait_for
from tests.http_util import Conn, request_bytes
from tests.strace_util import straced

WAITING = 8  # calls sent while the GIL is held
START_WAITERS = 2  # `wsgi::pool::start_gate::START_WAITERS`
# `futex`'s number, as /proc/PID/task/TID/syscall shows it (the first field).
SYS_FUTEX = {"x86_64": "202", "aarch64": "98"}.get(platform.machine())


def interpreter_ranges(pid: int):
    """The address ranges of the interpreter's own mappings: the python executable, or
    libpython (not the server's extension module, where the gate lives)."""
    exe = os.path.realpath(f"/proc/{pid}/exe")
    out = []
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 6 and (parts[5] == exe or os.path.basename(parts[5]).startswith("libpython")):
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out.append((lo, hi))
    return out


def futex_waiters(pid: int) -> Counter:
    """The pool's threads (`sg-app`) asleep in `futex`, counted by the futex's address. (The
    server's other threads attach at times of their own: the main thread to run signal
    handlers, for one.)"""
    seen: Counter = Counter()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "syscall").read_text().split()
        except OSError:
            continue
        if name == "sg-app" and fields and fields[0] == SYS_FUTEX:
            seen[int(fields[1], 16)] += 1
    return seen


def stop_calls_and_count(srv, path: str = "/hello") -> tuple:
    """Hold the GIL with one call, send `WAITING` more (to `path`), and count where they sleep
    before they start: (on the GIL, on the most shared other futex). Then let the GIL go and
    check that every call is answered."""
    fifo = srv.state_path("hold-fifo")
    os.mkfifo(fifo)
    answers: dict = {}

    def call(key: str, path: str) -> None:
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", path))
            answers[key] = c.read_response(timeout=60)

    holder = threading.Thread(target=call, args=("hold", "/hold"))
    holder.start()
    others = [threading.Thread(target=call, args=(f"c{i}", path)) for i in range(WAITING)]
    try:
        srv.wait_marks("hold-started", 1)
        for t in others:
            t.start()
        ranges = interpreter_ranges(srv.pid)
        assert ranges, "no mapping of the interpreter found in /proc/PID/maps"

        def in_interpreter(addr: int) -> bool:
            return any(lo <= addr < hi for lo, hi in ranges)

        def stopped():
            # Every call is asleep somewhere: on the GIL, or on one shared address outside
            # the interpreter (idle pool threads each wait on their own slot, one apiece).
            seen = futex_waiters(srv.pid)
            on_gil = sum(n for a, n in seen.items() if in_interpreter(a))
            elsewhere = max((n for a, n in seen.items() if not in_interpreter(a)), default=0)
            return (on_gil, elsewhere) if on_gil + (elsewhere if elsewhere > 1 else 0) >= WAITING else None

        counts = wait_for(stopped, f"{WAITING} calls asleep before they start",
                          context=lambda: repr(futex_waiters(srv.pid)))
    finally:
        with open(fifo, "wb") as f:  # the app's own read end is open: this does not block
            f.write(b"x")
        holder.join(30)
        for t in others:
            if t.is_alive() or t.ident is not None:
                t.join(30)
    assert answers["hold"].status == 200 and answers["hold"].body == b"released"
    for i in range(WAITING):
        assert answers[f"c{i}"].status == 200 and answers[f"c{i}"].body == b"hello"
    return counts


# The pool, every call dispatched at once, and no admission limit.
POOL = ("--scheduler", "pool", "--max-runnable", "0", "--threads", "16:16")


@pytest.mark.skipif(SYS_FUTEX is None, reason="futex's system call number not known here")
def test_calls_that_cannot_start_wait_on_the_gate_not_on_the_gil(start_server):
    """`--start-gate on`, the GIL held, eight calls dispatched to the pool at once: two wait
    for the GIL, the other six on one other futex (the gate). When the GIL is let go, every
    call is answered."""
    srv = start_server("gil_held", *POOL, "--start-gate", "on")
    on_gil, on_gate = stop_calls_and_count(srv)
    assert on_gil <= START_WAITERS, f"{on_gil} threads wait on the GIL to start"
    assert on_gate >= WAITING - START_WAITERS


@pytest.mark.skipif(SYS_FUTEX is None, reason="futex's system call number not known here")
def test_without_the_gate_every_call_waits_on_the_gil(start_server):
    """`--start-gate off`: all eight calls wait in CPython's own GIL wait (with any pool thread
    still making its first attach), none on a gate: no futex outside the interpreter has more
    than one thread asleep on it."""
    srv = start_server("gil_held", *POOL, "--start-gate", "off")
    on_gil, elsewhere = stop_calls_and_count(srv)
    assert on_gil >= WAITING, f"{on_gil} of {WAITING} threads wait on the GIL"
    assert elsewhere <= 1, f"{elsewhere} threads asleep on one futex outside the interpreter"


@pytest.mark.skipif(SYS_FUTEX is None, reason="futex's system call number not known here")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or shutil.which("taskset") is None,
                    reason="needs two CPUs to give the server fewer, and taskset")
def test_auto_engages_the_gate_on_fewer_cpus_than_the_machine(start_server):
    """`--start-gate auto` (the default) with the server on one CPU of the machine (a cpuset
    below it, as a container's): the gate is in force, as with `on`."""
    srv = start_server(None, command=["taskset", "-c", str(min(os.sched_getaffinity(0))),
                                      PYTHON, "-m", "sluicegate", "--bind", "127.0.0.1:0", *POOL,
                                      "tests.apps.gil_held:app"])
    on_gil, on_gate = stop_calls_and_count(srv)
    assert on_gil <= START_WAITERS, f"{on_gil} threads wait on the GIL to start"
    assert on_gate >= WAITING - START_WAITERS


def first_block_writers(pid: int, trace: str) -> Counter:
    """Who wrote each `/gen` answer's head and first block, by thread name (`sg-app`: the call's
    own thread; `sg-loop`: the event loop), from an strace of the server's writes."""
    names = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            names[task.name] = (task / "comm").read_text().strip()
        except OSError:
            continue
    seen: Counter = Counter()
    for line in Path(trace).read_text().splitlines():
        if "HTTP/1.1 200 OK" in line and "Content-Length: 5" in line:
            seen[names.get(line.split()[0], "?")] += 1
    return seen


def first_block_writers_of(start_server, tmp_path, gate: str, path: str) -> Counter:
    """`first_block_writers` of `WAITING` calls to `path`, stopped and let go as in
    `stop_calls_and_count`, on a pool server with `--start-gate gate`."""
    srv = start_server("gil_held", *POOL, "--start-gate", gate)
    trace = str(tmp_path / "strace.out")
    with straced(srv.pid, trace):
        stop_calls_and_count(srv, path)
    return first_block_writers(srv.pid, trace)


@pytest.mark.skipif(SYS_FUTEX is None, reason="futex's system call number not known here")
def test_while_calls_wait_to_start_the_loop_writes_a_first_block(start_server, tmp_path):
    """A generator's first block was written by the call's thread with the GIL held; through
    loopback TCP that send (the receiving side's work included) was 18% of the app threads' CPU
    with hundreds of sleeping calls waiting for the GIL (S5's app). While calls wait to start,
    the loop writes it instead where the response streams anyway (its declared length not all
    sent): the GIL held, eight calls to a generator sent, then let go; the
    first ones to start find the others waiting, and their heads and first blocks leave from
    `sg-loop`. Every answer arrives whole (`stop_calls_and_count`)."""
    by = first_block_writers_of(start_server, tmp_path, "on", "/gen")
    assert sum(by.values()) == WAITING, by
    assert by["sg-loop"] >= WAITING - 2 * START_WAITERS, by


@pytest.mark.skipif(SYS_FUTEX is None, reason="futex's system call number not known here")
def test_a_body_complete_in_its_first_block_is_written_by_its_call(start_server, tmp_path):
    """The same crowd, but each generator yields its whole declared body at once (as Django's
    and Flask's answers do): nothing will stream, so each call writes its own answer in one
    write; handed to the loop, the shared queue and the loop's wake-up cost more than the
    send."""
    by = first_block_writers_of(start_server, tmp_path, "on", "/gen-whole")
    assert by == Counter({"sg-app": WAITING}), by


@pytest.mark.skipif(SYS_FUTEX is None, reason="futex's system call number not known here")
def test_with_no_call_waiting_the_call_writes_its_own_first_block(start_server, tmp_path):
    """`--start-gate off`: no gate counts who waits, so each call writes its head and first
    block itself, in one write, as every call does when none waits."""
    by = first_block_writers_of(start_server, tmp_path, "off", "/gen")
    assert by == Counter({"sg-app": WAITING}), by
