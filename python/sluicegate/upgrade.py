"""USR2: starting a new master on the listening sockets of this one (a binary upgrade).

The new master is a fresh interpreter (so a new sluicegate and a new app) started from the same
command line, handed the sockets as systemd would hand them (`LISTEN_FDS`, from fd 3), and told
whose sockets they are (`UPGRADE_ENV`). Both masters serve until the operator stops the old one;
no connection is refused at any point. The pid file's part is in pidfile.py.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import List, Sequence

from .listeners import LISTEN_FDS_START, BoundSocket

#: Set in the environment of a master started by USR2: the old master's pid.
UPGRADE_ENV = "SLUICEGATE_UPGRADED_FROM"

#: The duplicates are first moved above every descriptor the sockets use, then down in order.
HIGH_FD = 1000


def start_new_master(sockets: Sequence[BoundSocket], argv: List[str], cwd: str) -> int:
    """Fork and exec `argv` in `cwd` with `sockets` as its LISTEN_FDS; the child's pid."""
    import fcntl  # before the fork (no dlopen in the child): a master never upgraded has none

    pid = os.fork()
    if pid:
        return pid
    try:  # the new master, once exec'd
        high = [os.dup(s.fileno()) for s in sockets]
        moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, HIGH_FD + i) for i, fd in enumerate(high)]
        for i, fd in enumerate(moved):
            os.dup2(fd, LISTEN_FDS_START + i, inheritable=True)
        env = dict(os.environ)
        env.update(LISTEN_FDS=str(len(sockets)), LISTEN_PID=str(os.getpid()))
        env[UPGRADE_ENV] = str(os.getppid())
        env.pop("LISTEN_FDNAMES", None)
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    except BaseException as e:  # noqa: BLE001 - nothing may return into the old master
        print(f"sluicegate: error: cannot start the new master: {e}", file=sys.stderr, flush=True)
    finally:
        os._exit(1)
    return 0  # not reached
