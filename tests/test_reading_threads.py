"""The master forks a worker only after every reload-reading thread whose read returned has
left the process (reading.py's `wait_ended_threads`): a thread on its way out may hold the TLS
library's process-wide lock, which a child forked then could never take."""

from __future__ import annotations

import os
import threading
import time

from sluicegate import reading


class _SlowExit:
    """Kept in a thread-local: its `__del__` runs as the thread's state is cleared, after the
    read returned and `done()` is true, and keeps the thread in the process a while longer
    (as a native library's thread-exit work does)."""

    def __del__(self) -> None:
        time.sleep(0.3)


def test_a_fork_waits_for_ended_reading_threads_to_leave_the_process():
    tids = []
    local = threading.local()

    def read():
        tids.append(threading.get_native_id())
        local.keep = _SlowExit()
        return "read"

    r = reading.Reading(read, lambda: None).start()
    while not r.done():
        time.sleep(0.001)
    assert r.result() == "read"
    reading.wait_ended_threads()
    assert not os.path.exists(f"/proc/self/task/{tids[0]}")

