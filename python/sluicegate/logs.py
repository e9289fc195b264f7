"""The error log: the `sluicegate` logger, its one format, and keeping it alive under an app.

Every process of a server (a single server, the master, each worker) writes its start, signal,
worker and shutdown lines here, to standard error, each with its pid. An app that configures
logging may disable the loggers that existed before it (`logging.config.dictConfig`); `reclaim()`
undoes that for ours, and runs once the app is imported.

gunicorn's logging options (`--log-config-dict`, `--log-config-json`, `--log-config`,
`--log-syslog`) are applied over that setup by `configure`, as gunicorn applies them
(`gunicorn_logging`): the server's lines then go to the `gunicorn.error` logger, unless the
configuration names `sluicegate` itself, which then keeps the handlers it was given.
"""

from __future__ import annotations

import logging
import os
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Optional, Tuple

from . import gunicorn_logging
from .errors import OptionError

LOGGER_NAME = "sluicegate"
LOG_FORMAT = "[%(asctime)s] [%(process)d] [%(levelname)s] %(message)s"
LOG_DATE_FORMAT = "%Y-%m-%d %H:%M:%S %z"
#: The line with --log-date (uWSGI's log-date: `DATE - ` before each line).
DATED_FORMAT = "%(asctime)s - [%(process)d] [%(levelname)s] %(message)s"
#: C's ctime form, uWSGI's log-date without a format: `Fri Nov 27 02:18:11 2026`.
CTIME_FORMAT = "%a %b %e %H:%M:%S %Y"

log = logging.getLogger(LOGGER_NAME)

#: --error-log FILE as opened at start (an absolute path, and whether standard output goes
#: there too), for USR1 to open again; inherited by the workers over fork.
_error_log: Optional[Tuple[str, bool]] = None


def redirect_stderr(path: str, capture_output: bool = False) -> None:
    """--error-log FILE: the file becomes descriptor 2, so every writer of standard error (the
    logging handler, the Rust core, the worker processes forked later) appends to it; with
    --capture-output descriptor 1 too (the app's print())."""
    global _error_log
    try:
        _put_on_stderr(path, capture_output)
    except OSError as e:
        raise OptionError(f"--error-log {path!r}: cannot open it: {e.strerror}") from None
    if capture_output and hasattr(sys.stdout, "reconfigure"):  # print() reaches it at its \n
        sys.stdout.reconfigure(line_buffering=True)
    _error_log = (os.path.abspath(path), capture_output)  # USR1 opens it again, after --chdir


def _put_on_stderr(path: str, capture_output: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    sys.stderr.flush()
    os.dup2(fd, 2)  # the copy on 2 is inheritable (dup2 clears close-on-exec)
    if capture_output:
        sys.stdout.flush()
        os.dup2(fd, 1)
    os.close(fd)


def reopen_error_log(signame: str) -> None:
    """USR1 (logrotate): the --error-log file opened again by its path, in place of the old
    one (`dup2`), in this process; logged in the new file. Nothing without --error-log."""
    if _error_log is None:
        return
    path, capture_output = _error_log
    try:
        _put_on_stderr(path, capture_output)
    except OSError as e:
        log.error("Received %s: cannot reopen the error log %r: %s", signame, path, e.strerror)
        return
    log.info("Received %s: error log %s reopened", signame, path)


def configure(level: str, setup: Optional[gunicorn_logging.Setup] = None,
              date: Optional[str] = None) -> None:
    """The error log: the `sluicegate` logger, to standard error, then gunicorn's logging
    options if any (StartError if logging refuses them). Idempotent (serve() may be called
    more than once in a process). `date` (--log-date, uWSGI's log-date): each line starts
    with the time in this strftime format and ` - `, or in C's ctime form for `on`."""
    handler = next((h for h in log.handlers if getattr(h, "_sluicegate", False)), None)
    formatter = logging.Formatter(LOG_FORMAT, LOG_DATE_FORMAT) if date is None else \
        logging.Formatter(DATED_FORMAT, CTIME_FORMAT if date == "on" else date)
    if handler is None or isinstance(handler, gunicorn_logging.ToLogger):
        if handler is not None:
            log.removeHandler(handler)
        handler = logging.StreamHandler(sys.stderr)
        handler._sluicegate = True  # type: ignore[attr-defined]
        handler.setFormatter(formatter)
        log.addHandler(handler)
    log.setLevel(level.upper())
    log.propagate = False
    if setup is not None:
        gunicorn_logging.apply(setup, log, handler, formatter)
    reclaim()


def reclaim() -> None:
    """Undo what an app's `logging.config.dictConfig` did to the server's own loggers without
    naming them: with `disable_existing_loggers` (True unless said otherwise, and Django's
    `LOGGING` often leaves it so) every logger that existed is disabled, and the server's
    start, signal, worker and shutdown lines would vanish. A config that names `sluicegate`
    is the operator's choice and is left alone (dictConfig does not disable what it names)."""
    for name in (LOGGER_NAME, f"{LOGGER_NAME}.error", gunicorn_logging.ERROR_LOGGER,
                 gunicorn_logging.ACCESS_LOGGER):
        logging.getLogger(name).disabled = False
