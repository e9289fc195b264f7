"""`--touch-logreopen PATH`: the files whose modification time, once changed, has the master
reopen the log files (as USR1 does), as uWSGI's touch-logreopen. The master asks `changed()`
on each turn of its loop; a file is looked at once a second at most. A file that does not
exist yet counts as changed when it appears; one that goes away, when it comes back.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Sequence

#: The least time between two looks at the files.
EVERY_S = 1.0


def _mtime(path: str) -> Optional[int]:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


class Touched:
    """The watched files and the modification time each had when last looked at."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.seen: Dict[str, Optional[int]] = {p: _mtime(p) for p in paths}
        self.next_look = time.monotonic() + EVERY_S

    def changed(self) -> List[str]:
        """The files touched since the last look (none before a second has passed)."""
        if not self.seen or time.monotonic() < self.next_look:
            return []
        self.next_look = time.monotonic() + EVERY_S
        out = []
        for path, before in self.seen.items():
            now = _mtime(path)
            if now != before:
                self.seen[path] = now
                if now is not None:
                    out.append(path)
        return out
