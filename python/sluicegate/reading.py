"""Files read on a reload, away from the loop that handles signals.

A certificate, a key or a configuration file on a hung network mount (or a FIFO nobody writes)
blocks the read until it returns; a master blocked there reaps no worker and handles no signal.
`Reading` runs the read on a daemon thread and calls `on_done` when it returns; the read is
overdue after `timeout` seconds, and the caller then gives it up: a read that never returns
leaves only its thread behind, and what it returns late is never used.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional

#: How long a reload waits for its files: a local disk answers in milliseconds, a network
#: mount that is slow but alive in a few seconds.
READ_TIMEOUT_S = 10.0


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
        threading.Thread(target=self._run, daemon=True, name="sluicegate-reload-read").start()
        return self

    def _run(self) -> None:
        try:
            self._value = self._read()
        except BaseException as e:  # handed to whoever asks for the result
            self._error = e
        finally:
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
