"""Files read on a reload, away from the loop that handles signals.

A certificate, a key or a configuration file on a hung network mount (or a FIFO nobody writes)
blocks the read until it returns; a master blocked there reaps no worker and handles no signal.
`Reading` runs the read on a daemon thread and calls `on_done` when it returns; the read is
overdue after `timeout` seconds, and the caller then gives it up: a read that never returns
leaves only its thread behind, and what it returns late is never used.

A reading thread runs the TLS library (the files are checked by building a configuration),
and a thread's end runs that library's thread-exit work under a process-wide lock. A fork at
that moment gives the child a lock nobody will release: the worker's first use of the library
(a random number for a handshake or a QUIC key) waits forever. `wait_ended_threads()`, called by
the master before each fork, waits until every reading thread whose read returned has left the
process (its entry under /proc/self/task gone), bounded by `EXIT_WAIT_S`.
"""

from __future__ import annotations

import os
import threading
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

from . import thread_names

#: How long a reload waits for its files: a local disk answers in milliseconds, a network
#: mount that is slow but alive in a few seconds.
READ_TIMEOUT_S = 10.0

#: How long a fork waits for ended reading threads to leave the process: their exit takes
#: microseconds; the bound only keeps a thread id reused by a live thread from stalling forks.
EXIT_WAIT_S = 1.0

#: Native ids of the reading threads whose read returned and that may not have left yet.
_ending: set = set()
_ending_lock = threading.Lock()


def wait_ended_threads(timeout: float = EXIT_WAIT_S) -> None:
    """Before a fork: wait until every reading thread whose read returned has left the process
    (see the module's doc). A thread still reading is not waited for."""
    with _ending_lock:
        tids = list(_ending)
    deadline = time.monotonic() + timeout
    for tid in tids:
        while os.path.exists(f"/proc/self/task/{tid}") and time.monotonic() < deadline:
            time.sleep(0.0005)
        with _ending_lock:
            _ending.discard(tid)


class Reading:
    """`read()` on its own thread, from `start()`; `on_done()` is called on that thread when
    it returns."""

    def __init__(self, read: Callable[[], Any], on_done: Callable[[], None],
                 timeout: float = READ_TIMEOUT_S) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self._done = threading.Event()
        self._settled = threading.Lock()
        self._value: Any = None
        self._error: Optional[BaseException] = None
        self._read, self._on_done = read, on_done

    def start(self) -> "Reading":
        thread_names.start(self._run, "sg-reload-read")
        return self

    def _run(self) -> None:
        tid = threading.get_native_id()
        try:
            self._value = self._read()
        except BaseException as e:  # handed to whoever asks for the result
            self._error = e
        finally:
            with _ending_lock:
                _ending.add(tid)
            self._done.set()
            self._on_done()

    def done(self) -> bool:
        return self._done.is_set()

    def overdue(self) -> bool:
        """Still reading past the deadline."""
        return not self.done() and time.monotonic() > self.deadline

    def settle(self) -> bool:
        """True for the first caller only: between the reading's end and its timeout, where
        each is seen on its own thread, the one that settles it decides."""
        return self._settled.acquire(blocking=False)

    def result(self) -> Any:
        """What `read()` returned; what it raised is raised again here."""
        if self._error is not None:
            raise self._error
        return self._value
