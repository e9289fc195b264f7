"""The names the kernel shows for the Python threads sluicegate starts.

CPython before 3.14 keeps a `threading.Thread`'s name to itself: the thread shows in
`/proc/PID/task/*/comm`, `top -H` and `ps -L` under the process's name (`python`,
`sluicegate`), like every other. `name_this_thread` gives the calling thread its name by
prctl(PR_SET_NAME) (`_core.name_thread`, src/server/prctl.rs) in a process that has loaded the
extension, or by writing `/proc/self/task/TID/comm` (the same name, the kernel's other door to
it) in a master, which never loads it (master.py); either names only the thread that calls it,
so each thread calls it first thing; `start` starts a daemon thread that does. The kernel keeps 15 bytes of a name: every
thread of the server, the Rust core's included, is named `sg-` and a word that fits
(docs/architecture.md, "Threads").
"""

from __future__ import annotations

import sys
import threading

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Callable

#: The bytes of a name the kernel keeps (TASK_COMM_LEN less the NUL).
NAME_BYTES = 15


def name_this_thread(name: str) -> None:
    """Give the calling thread `name` (cut to 15 bytes) in the kernel's eyes; nothing where
    the kernel refuses it (not Linux)."""
    core = sys.modules.get("sluicegate._core")
    try:
        if core is not None:
            core.name_thread(name[:NAME_BYTES])
            return
        cut = name.encode()[:NAME_BYTES]
        with open(f"/proc/self/task/{threading.get_native_id()}/comm", "wb") as f:
            f.write(cut)
    except OSError:
        pass


def start(target: Callable[[], object], name: str) -> threading.Thread:
    """Start a daemon thread named `name` (for Python and for the kernel) that runs `target`."""

    def run() -> None:
        name_this_thread(name)
        target()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
