"""The error log: the `sluicegate` logger, its one format, and keeping it alive under an app.

Every process of a server (a single server, the master, each worker) writes its start, signal,
worker and shutdown lines here, to standard error, each with its pid. An app that configures
logging may disable the loggers that existed before it (`logging.config.dictConfig`); `reclaim()`
undoes that for ours, and runs once the app is imported.

`--log-config FILE` (logging.config.fileConfig) and `--log-config-dict JSON` (dictConfig),
gunicorn's logconfig and logconfig_dict, are applied over that setup by `configure`: a config
that names `sluicegate` (or `sluicegate.error`) replaces its handlers, level and propagation.
"""

from __future__ import annotations

import logging
import logging.config
import os
import sys
from typing import Any, Mapping, Optional, Tuple

from .errors import OptionError, StartError

LOGGER_NAME = "sluicegate"
LOG_FORMAT = "[%(asctime)s] [%(process)d] [%(levelname)s] %(message)s"
LOG_DATE_FORMAT = "%Y-%m-%d %H:%M:%S %z"

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


def configure(level: str, file_config: Optional[str] = None,
              dict_config: Optional[Mapping[str, Any]] = None) -> None:
    """The error log: the `sluicegate` logger, to standard error, then the operator's logging
    configuration if any (StartError if it is refused). Idempotent (serve() may be called more
    than once in a process)."""
    handler = next((h for h in log.handlers if getattr(h, "_sluicegate", False)), None)
    if handler is None:
        handler = logging.StreamHandler(sys.stderr)
        handler._sluicegate = True  # type: ignore[attr-defined]
        handler.setFormatter(logging.Formatter(LOG_FORMAT, LOG_DATE_FORMAT))
        log.addHandler(handler)
    log.setLevel(level.upper())
    log.propagate = False
    if file_config:
        try:
            with open(file_config, encoding="utf-8"):  # fileConfig's own error hides ENOENT
                pass
            logging.config.fileConfig(file_config, disable_existing_loggers=False)
        except OSError as e:
            raise StartError(f"--log-config {file_config!r}: cannot read it: {e.strerror}") \
                from e
        except Exception as e:
            raise StartError(f"--log-config {file_config!r}: logging refused it: "
                             f"{type(e).__name__}: {e}") from e
    if dict_config:
        try:
            logging.config.dictConfig(dict(dict_config))
        except Exception as e:
            raise StartError(f"--log-config-dict: logging refused it: {type(e).__name__}: {e}") \
                from e
    reclaim()


def reclaim() -> None:
    """Undo what an app's `logging.config.dictConfig` did to the server's own loggers without
    naming them: with `disable_existing_loggers` (True unless said otherwise, and Django's
    `LOGGING` often leaves it so) every logger that existed is disabled, and the server's
    start, signal, worker and shutdown lines would vanish. A config that names `sluicegate`
    is the operator's choice and is left alone (dictConfig does not disable what it names)."""
    for name in (LOGGER_NAME, f"{LOGGER_NAME}.error"):
        logging.getLogger(name).disabled = False
