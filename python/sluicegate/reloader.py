"""`--reload`, for development: replace the workers when the app's code changes.

The master watches the directory the app is imported from (the working directory, which
sluicegate puts first on `sys.path`) for changes to Python files, and the `--reload-extra`
files and directories for any change, and reloads as on HUP: new workers import the changed
code, and the old ones stop once the new ones serve. A change that does not import (a syntax
error) abandons that reload: the old workers keep serving, the error is logged, and the next
change tries again.

Watching uses the `watchfiles` package (`pip install 'sluicegate[reload]'`): inotify through
the Rust `notify` crate, no polling of every file, and debouncing, so a save that touches
several files causes one reload. It is a development feature, so the dependency is optional.
"""

from __future__ import annotations

import os
import threading

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Callable, List, Sequence

from .errors import StartError
from .thread_names import name_this_thread

#: Changes closer together than this are one reload (an editor saving several files).
DEBOUNCE_MS = 200

#: How often the watcher reports "no change" (its first report says it is watching).
QUIET_REPORT_MS = 200

#: How long `start()` waits for the watcher to be in place.
READY_TIMEOUT_S = 10.0


class Reloader(threading.Thread):
    """Calls `changed(paths)` from its own thread after each batch of relevant changes."""

    def __init__(self, root: str, extra: Sequence[str], changed: Callable[[List[str]], None]):
        super().__init__(name="sg-reloader", daemon=True)
        try:
            import watchfiles
        except ImportError:
            raise StartError("--reload needs the watchfiles package: "
                             "pip install 'sluicegate[reload]'") from None
        self._watchfiles = watchfiles
        self.root = os.path.abspath(root)
        self.extra = [os.path.abspath(p) for p in extra]
        for p in self.extra:
            if not os.path.exists(p):
                raise StartError(f"--reload-extra {p!r}: no such file or directory")
        self.changed = changed
        self.stop_event = threading.Event()
        self.ready = threading.Event()
        python = watchfiles.PythonFilter()

        def relevant(change: object, path: str) -> bool:
            if any(path == p or path.startswith(p + os.sep) for p in self.extra):
                return True
            return python(change, path)

        self.filter = relevant

    def start(self) -> None:
        """Start watching, and return once the watcher is in place: a change made after the
        server says it is listening is never missed (it was, when the first watches were set
        up after a quick edit)."""
        super().start()
        self.ready.wait(READY_TIMEOUT_S)

    def run(self) -> None:
        name_this_thread(self.name)
        paths = [self.root] + [p for p in self.extra if not p.startswith(self.root + os.sep)]
        # yield_on_timeout: an empty batch every QUIET_REPORT_MS; the first one, or the first
        # change, means the watches exist.
        for changes in self._watchfiles.watch(*paths, watch_filter=self.filter,
                                              debounce=DEBOUNCE_MS, step=50,
                                              rust_timeout=QUIET_REPORT_MS, yield_on_timeout=True,
                                              stop_event=self.stop_event, raise_interrupt=False):
            self.ready.set()
            if changes:
                self.changed(sorted({path for _, path in changes}))

    def stop(self) -> None:
        self.stop_event.set()
