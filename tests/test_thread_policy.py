"""The pool's threads run under `SCHED_BATCH`, the event loop's thread under `SCHED_OTHER`
(`wsgi/pool/batch.rs`): a woken app thread, which mostly wakes to wait for the GIL, does not
preempt the thread on its CPU, while a request's arrival still wakes the loop at once.

The app (`tests/apps/thread_policy.py`) answers the name and policy of the thread that ran the
call; the loop's threads are read from /proc (`comm`) with `os.sched_getscheduler(tid)`.
"""

import os
import threading
from pathlib import Path

from tests.helpers import wait_for
from tests.http_util import Conn, request_bytes


def get(port: int, path: str) -> str:
    with Conn.open(port) as c:
        c.send(request_bytes("GET", path))
        r = c.read_response(timeout=30)
    assert r.status == 200, r
    return r.body.decode()


def policies(pid: int) -> dict:
    """Thread name -> set of policy numbers of the threads of that name."""
    out: dict = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            out.setdefault(name, set()).add(os.sched_getscheduler(int(task.name)))
        except OSError:  # the thread ended meanwhile
            pass
    return out


def test_pool_calls_run_under_batch_and_the_loop_under_other(start_server):
    srv = start_server("thread_policy", "--scheduler", "pool")
    assert get(srv.port, "/") == "sg-app SCHED_BATCH"
    # A thread the app starts inherits its caller's policy.
    assert get(srv.port, "/spawned") == "sg-app SCHED_BATCH spawned SCHED_BATCH"
    seen = policies(srv.pid)
    assert seen["sg-loop"] == {os.SCHED_OTHER}, seen
    assert seen["sg-app"] == {os.SCHED_BATCH}, seen
    # The process's main thread keeps the default.
    assert seen[Path(f"/proc/{srv.pid}/comm").read_text().strip()] == {os.SCHED_OTHER}


def test_inline_calls_run_on_the_loop_under_other(start_server):
    srv = start_server("thread_policy", "--scheduler", "inline")
    assert get(srv.port, "/") == "sg-loop SCHED_OTHER"


def test_a_loop_handed_on_keeps_other_and_its_old_thread_joins_the_pool_under_batch(start_server):
    """An inline call that sleeps is taken over: another thread drives the loop (a pool
    thread, which leaves `SCHED_BATCH` for it), and the thread of the call, once it returns,
    joins the pool under `SCHED_BATCH`."""
    srv = start_server("thread_policy", "--threads", "2:8")
    answers = []
    slow = [threading.Thread(target=lambda: answers.append(get(srv.port, "/sleep"))) for _ in range(3)]
    for t in slow:
        t.start()
    for t in slow:
        t.join(30)
    assert len(answers) == 3 and all(a.endswith("SCHED_BATCH") or a == "sg-loop SCHED_OTHER"
                                     for a in answers), answers

    def settled():
        seen = policies(srv.pid)
        ok = seen.get("sg-loop") == {os.SCHED_OTHER} and seen.get("sg-app") == {os.SCHED_BATCH}
        return seen if ok else None

    wait_for(settled, "every sg-loop thread under SCHED_OTHER, every sg-app under SCHED_BATCH",
             context=lambda: repr(policies(srv.pid)))
    # The loop still answers, on a thread under SCHED_OTHER, or from the pool under SCHED_BATCH.
    assert get(srv.port, "/") in ("sg-loop SCHED_OTHER", "sg-app SCHED_BATCH")
