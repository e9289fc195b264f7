"""The process titles of `--name` (gunicorn's proc_name): what ps, top and /proc/PID/cmdline show
for the master, each worker and a single server, so that they can be told apart and found.

As gunicorn does, the title is set with the setproctitle package when it is installed
(`sluicegate: master [NAME]`, `sluicegate: worker [NAME]`, `sluicegate: server [NAME]`: the
whole command line). Without it, the kernel's short name of the process (/proc/PID/comm, what
`ps -o comm` and `top` show, 15 bytes at most) becomes `master:NAME`, `worker:NAME` or
`server:NAME`, cut to fit: written to /proc/self/comm, which is prctl(PR_SET_NAME) for the
main thread, with no C call of our own.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Optional

#: The longest name the kernel keeps for a process (TASK_COMM_LEN, 16, less the NUL).
COMM_LEN = 15


def title(role: str, name: str) -> str:
    """The full title of a process in `role` (master, worker or server)."""
    return f"sluicegate: {role} [{name}]"


def comm(role: str, name: str) -> str:
    """The short name of a process in `role`, as the kernel keeps it."""
    return f"{role}:{name}".encode()[:COMM_LEN].decode(errors="ignore")


def set_title(role: str, name: Optional[str]) -> None:
    """Set this process's title for `role`; nothing without a name (titles left alone)."""
    if not name:
        return
    try:
        import setproctitle
    except ImportError:
        _set_comm(comm(role, name))
        return
    setproctitle.setproctitle(title(role, name))


def _set_comm(text: str) -> None:
    try:
        with open("/proc/self/comm", "w") as f:
            f.write(text)
    except OSError:
        pass  # no /proc (not Linux): the title is a convenience, never a reason to fail
