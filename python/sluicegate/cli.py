"""The `sluicegate` command: parse the command line, then hand over to the supervisor.

Its other job is the error contract: every user error (a bad option, an app that does not load,
an address that cannot be bound) ends as ONE line on standard error, `sluicegate: error: ...`,
with exit status 2 for usage errors and 1 for the rest; never a traceback. With
`--log-level debug` the traceback behind the error is logged first.
"""

from __future__ import annotations

import os
import sys
from typing import Optional, Sequence

from . import __version__
from .errors import SluicegateError
from .options import from_command_line, raw_values, validate
from .supervisor import log, serve_config


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the `sluicegate` console script and `python -m sluicegate`."""
    args = sys.argv[1:] if argv is None else list(argv)
    debug = False
    try:
        cfg = validate(raw_values(from_command_line(args, __version__)))
        debug = cfg.log_level == "debug"
        # The command line again, for a master that re-executes itself on USR2 (master.py).
        restart = [sys.executable, "-m", "sluicegate", *args]
        return serve_config(cfg, __version__, owns_process=True, restart=(restart, os.getcwd()))
    except SluicegateError as e:
        if debug and e.__cause__ is not None:
            log.debug("Traceback of the error below:", exc_info=e.__cause__)
        print(f"sluicegate: error: {e}", file=sys.stderr, flush=True)
        return e.exit_code
    except KeyboardInterrupt:
        # Ctrl-C while the app was still loading, before the server's own handler was installed.
        return 130
