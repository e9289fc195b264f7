"""`--touch-reload` files: which of them were touched since the master last looked.

Polled, one stat() per file on each pass of the master's loop (at least every 0.5 s,
master.TICK_S), as uWSGI's master polls its touch files: a stat works for any file on any file
system (NFS and other network mounts, where inotify sees nothing of other machines' writes),
follows a file that a deploy replaces by renaming a new one over it (an inotify watch would
stay on the old inode), and costs nothing next to the master's wakeups.

A file counts as touched when its modification time differs from the one last seen, or when it
appears (a missing file is not an error: it may be created by the deploy that means to reload);
a file that disappears is not a touch, as in uWSGI.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Dict, Optional, Sequence


def _mtime(path: str) -> Optional[int]:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


class TouchWatch:
    """The files and the modification time each had when last looked at."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.seen: Dict[str, Optional[int]] = {os.path.abspath(p): _mtime(p) for p in paths}

    def changed(self) -> Optional[str]:
        """The first file touched since the last call (each one's new time is noted), or
        None."""
        touched = None
        for path, before in self.seen.items():
            now = _mtime(path)
            if now is None:
                continue
            if now != before:
                self.seen[path] = now
                touched = touched or path
        return touched
