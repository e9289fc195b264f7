"""`sys.path` as gunicorn builds it, so that the config file, every hook and the app import the
project's modules the same way under the `sluicegate` console script, `python -m sluicegate`
and gunicorn.

gunicorn puts the working directory first on `sys.path` before it runs the config file (its
`chdir` setting, whose default is the working directory); once the options are known, the
`chdir` directory; then each directory of `pythonpath` (comma-separated, relative ones taken
from that directory), each put first in turn; all before the first hook runs. A directory
already on `sys.path` is left where it is, as gunicorn leaves it. The console script alone has
its own directory (the virtualenv's `bin/`) at `sys.path[0]`, not the working directory: without
this, a `post_fork` hook that imports the project fails there and works under `python -m`.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import List, Optional


def add_first(directory: str) -> None:
    """Put `directory` (made absolute) first on sys.path unless it is on it already."""
    path = os.path.abspath(directory)
    if path not in sys.path:
        sys.path.insert(0, path)


def at_start() -> None:
    """Before the options are read (a gunicorn config file is run then): the working directory."""
    add_first(os.getcwd())


def directories(pythonpath: Optional[str]) -> List[str]:
    """The directories of a `pythonpath` value, in the order given."""
    return [p.strip() for p in (pythonpath or "").split(",") if p.strip()]


def settle(chdir: Optional[str], pythonpath: Optional[str]) -> None:
    """Once in the `--chdir` directory, before any hook: that directory (if given: the working
    directory is the command's `at_start`; serve() leaves sys.path alone without one), then
    each of `--pythonpath`'s, each put first in turn (so the last one given ends up first)."""
    if chdir:
        add_first(chdir)
    for directory in directories(pythonpath):
        add_first(directory)


__all__ = ["add_first", "at_start", "directories", "settle"]
