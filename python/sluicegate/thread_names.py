"""The names the kernel shows for the Python threads sluicegate starts.

CPython before 3.14 keeps a `threading.Thread`'s name to itself: the thread shows in
`/proc/PID/task/*/comm`, `top -H` and `ps -L` under the process's name (`python`,
`sluicegate`), like every other. `name_this_thread` gives the calling thread its name with
prctl(PR_SET_NAME), which names only the thread that calls it, so each thread calls it first
thing; `start` starts a daemon thread that does. The kernel keeps 15 bytes of a name: every
thread of the server, the Rust core's included, is named `sg-` and a word that fits
(docs/architecture.md, "Threads").
"""

from __future__ import annotations

import ctypes
import threading
from typing import Callable, Optional

#: prctl(2): set the calling thread's name.
PR_SET_NAME = 15

#: The bytes of a name the kernel keeps (TASK_COMM_LEN less the NUL).
NAME_BYTES = 15

_libc: Optional[ctypes.CDLL] = None


def name_this_thread(name: str) -> None:
    """Give the calling thread `name` (cut to 15 bytes) in the kernel's eyes; nothing where
    there is no prctl (not Linux)."""
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        _libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:NAME_BYTES]), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def start(target: Callable[[], object], name: str) -> threading.Thread:
    """Start a daemon thread named `name` (for Python and for the kernel) that runs `target`."""

    def run() -> None:
        name_this_thread(name)
        target()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
