"""`--pid FILE`: the file that names the running server's (or master's) process.

Written atomically (a temporary file renamed over the path), so a reader never sees a half
written pid; removed at the end only if it still names this process (after a USR2 upgrade the
new master owns the path). A file that names another live process is left alone and the start
refused: it is most likely a second server started by mistake with the same --pid, and taking
the file would leave the first one unnamed (and the file removed when the second stops). A file
naming a dead process (a server killed with -9, a reboot) is stale and replaced; a recycled pid
looks alive, as it does to gunicorn, and the error line says which pid to check. During an upgrade the old master's file is set aside as
`FILE.oldbin`, as nginx and gunicorn do, and taken back if the new master fails.
"""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Optional

from .errors import SluicegateError

#: What the old master's pid file becomes while a new master (USR2) starts.
OLD_SUFFIX = ".oldbin"


def write(path: str, replaces: Optional[int] = None) -> None:
    """This process's pid, written atomically; SluicegateError if it cannot be, or if the file
    names another live process (but `replaces`: the old master of a USR2 upgrade, whose file
    could not be set aside)."""
    other = _live_owner(path)
    if other is not None and other != replaces:
        raise SluicegateError(
            f"the pid file {path!r} names a running process (pid {other}): is a server already "
            f"running? Stop it, or remove the file if pid {other} is not a server")
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write(f"{os.getpid()}\n")
        os.replace(tmp, path)
    except OSError as e:
        raise SluicegateError(f"cannot write the pid file {path!r}: {e.strerror}") from e


def _live_owner(path: str) -> Optional[int]:
    """The pid the file names, if that process is alive and not this one; None for no file, an
    unreadable or garbled one, or a dead pid (a stale file, replaced)."""
    try:
        with open(path) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return None
    if pid <= 0 or pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except OSError as e:
        if e.errno != errno.EPERM:  # ESRCH: no such process
            return None
    return pid  # alive (EPERM: alive, another user's)


def remove(path: str) -> None:
    """Remove the pid file, and the `.oldbin` one an upgrade left, where they name this process."""
    for each in (path, path + OLD_SUFFIX):
        try:
            with open(each) as f:
                if f.read().strip() != str(os.getpid()):
                    continue
            os.unlink(each)
        except OSError:
            pass  # gone already, or not ours to remove


def set_aside(path: str) -> None:
    """USR2: the file becomes `FILE.oldbin`, leaving the path to the new master (OSError if
    the rename fails; nothing to do if there is no file)."""
    if os.path.exists(path):
        os.replace(path, path + OLD_SUFFIX)


def take_back(path: str) -> None:
    """The new master failed: `FILE.oldbin` names this process again under its own path."""
    if os.path.exists(path + OLD_SUFFIX):
        try:
            os.replace(path + OLD_SUFFIX, path)
        except OSError:
            pass
