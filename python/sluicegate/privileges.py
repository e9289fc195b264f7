"""Running as a less privileged user: `--user`, `--group` and `--umask`.

A server started as root (to bind port 80, or to create a socket in /run) drops to `--user` and
`--group` after binding and before importing the app, so the app never runs as root: a single
server or a `--preload` master switches itself; otherwise the master keeps its user (it runs no
app code, and stays able to start the new master of a USR2 upgrade, to write the pid file and to
remove its socket files) and each worker switches right after it is forked. The order
is the one that cannot fail half-way: supplementary groups, then the group, then the user (once
the user is changed, the group can no longer be). `--umask` is set first of all: it decides the
permissions of the unix socket files and of every file the app creates.
"""

from __future__ import annotations

import grp
import os
import pwd
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import List, Optional, Tuple

from .errors import StartError
from .logs import log


def user_id(name: str) -> int:
    """A user name or a numeric uid, to a uid (ValueError naming it if unknown)."""
    if name.isdigit():
        return int(name)
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        raise ValueError(f"no such user {name!r}") from None


def group_id(name: str) -> int:
    """A group name or a numeric gid, to a gid (ValueError naming it if unknown)."""
    if name.isdigit():
        return int(name)
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        raise ValueError(f"no such group {name!r}") from None


#: The interpreter's directories, once read (`_interpreter_dirs`).
_INTERPRETER_DIRS: List[Tuple[str, str]] = []


def _interpreter_dirs() -> List[Tuple[str, str]]:
    """Read once, as the starting user (`drop` reads them before it switches: after a switch,
    sysconfig may no longer be able to say); sysconfig is imported only then, not by every
    process that never switches nor fails an import."""
    if not _INTERPRETER_DIRS:
        import sysconfig

        paths = sysconfig.get_paths()
        stdlib = paths.get("stdlib", "")
        _INTERPRETER_DIRS[:] = [
            ("the interpreter's standard library", stdlib),
            ("the interpreter's compiled modules", os.path.join(stdlib, "lib-dynload")),
            ("the installed packages", paths.get("purelib", ""))]
    return _INTERPRETER_DIRS


def _import_before_switching() -> None:
    """What a process imports at its first need rather than at its start, and may need once
    switched (where the interpreter's directories may no longer be readable: `unreadable`):
    json and struct (the control socket's first message, control_protocol.py and
    control_server.py), fcntl (a USR2 upgrade, upgrade.py)."""
    import fcntl  # noqa: F401
    import json  # noqa: F401
    import struct  # noqa: F401


def drop(user: Optional[str], group: Optional[str]) -> None:
    """Become `user` (with its primary group unless `group` is given) and/or `group`. A process
    that is that user and group already has nothing to do: the new master of a USR2 upgrade
    from a master that switched itself (`--preload`) starts as the user, and only root may set
    the groups again."""
    if user is None and group is None:
        return
    try:
        uid = user_id(user) if user else None
        gid = group_id(group) if group else None
        if gid is None and uid is not None:
            gid = pwd.getpwuid(uid).pw_gid
    except (ValueError, KeyError) as e:
        raise StartError(f"cannot switch user: {e}") from None
    if is_already(uid, gid):
        return
    _interpreter_dirs()
    _import_before_switching()
    try:
        if gid is not None:
            if uid is not None:
                name = pwd.getpwuid(uid).pw_name
                os.initgroups(name, gid)
            else:
                os.setgroups([])
            os.setgid(gid)
        if uid is not None:
            os.setuid(uid)
    except OSError as e:
        raise StartError(f"cannot switch to user {user or '-'} group {group or '-'}: {e.strerror}"
                         " (only root can)") from None
    blocked = unreadable()
    if blocked:
        (what, path), more = blocked[0], len(blocked) - 1
        log.warning("After switching to user %s group %s: cannot read %s, %s (permission "
                    "denied)%s: a module not imported yet that lives there will fail to import "
                    "(\"No module named ...\"); give that user read and search access to it",
                    user or "-", group or "-", what, path,
                    f" and {more} more import director{'y' if more == 1 else 'ies'}"
                    if more else "")


def unreadable() -> List[Tuple[str, str]]:
    """The directories an import needs that this process cannot read (what, path): the
    interpreter's standard library and compiled modules, the installed packages, and every
    other sys.path directory (the working directory, where the app is imported from, among
    them). After a user switch these make an import say "not found" and hide the cause."""
    known = {os.path.abspath(p): what for what, p in _interpreter_dirs() if p}
    cwd = os.getcwd()
    dirs = [(known.get(os.path.abspath(p or "."), "the working directory (where the app is "
             "imported from)" if os.path.abspath(p or ".") == cwd else "a sys.path directory"),
             p) for p in sys.path if not p.endswith(".zip")]
    dirs += list(_interpreter_dirs())
    out: List[Tuple[str, str]] = []
    for what, path in dirs:
        path = os.path.abspath(path or ".")
        if path in [p for _, p in out]:
            continue
        try:
            is_dir = os.path.isdir(path) if os.stat(path) else False
        except PermissionError:  # a directory above it may not be searched
            out.append((what, path))
            continue
        except OSError:
            continue  # missing: nothing to read there, and no cause hidden
        if is_dir and not os.access(path, os.R_OK | os.X_OK):
            out.append((what, path))
    return out


def is_already(uid: Optional[int], gid: Optional[int]) -> bool:
    """Whether this process runs as `uid` and `gid` (None: any), real and effective, and is not
    root (root switches anyway: its supplementary groups are root's until it does)."""
    if os.geteuid() == 0:
        return False
    ids_ok = uid is None or os.getuid() == os.geteuid() == uid
    return ids_ok and (gid is None or os.getgid() == os.getegid() == gid)
