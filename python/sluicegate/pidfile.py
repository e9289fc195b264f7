"""`--pid FILE`: the file that names the running server's (or master's) process.

Written atomically (a temporary file renamed over the path), so a reader never sees a half
written pid; removed at the end only if it still names this process (after a USR2 upgrade the
new master owns the path). During an upgrade the old master's file is set aside as
`FILE.oldbin`, as nginx and gunicorn do, and taken back if the new master fails.
"""

from __future__ import annotations

import os

from .errors import SluicegateError

#: What the old master's pid file becomes while a new master (USR2) starts.
OLD_SUFFIX = ".oldbin"


def write(path: str) -> None:
    """This process's pid, written atomically; SluicegateError if it cannot be."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write(f"{os.getpid()}\n")
        os.replace(tmp, path)
    except OSError as e:
        raise SluicegateError(f"cannot write the pid file {path!r}: {e.strerror}") from e


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
