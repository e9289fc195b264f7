"""The error log: the `sluicegate` logger, its one format, and keeping it alive under an app.

Every process of a server (a single server, the master, each worker) writes its start, signal,
worker and shutdown lines here, to standard error, each with its pid. An app that configures
logging may disable the loggers that existed before it (`logging.config.dictConfig`); `reclaim()`
undoes that for ours, and runs once the app is imported.
"""

from __future__ import annotations

import logging
import sys

LOGGER_NAME = "sluicegate"
LOG_FORMAT = "[%(asctime)s] [%(process)d] [%(levelname)s] %(message)s"
LOG_DATE_FORMAT = "%Y-%m-%d %H:%M:%S %z"

log = logging.getLogger(LOGGER_NAME)


def configure(level: str) -> None:
    """The error log: the `sluicegate` logger, to standard error. Idempotent (serve() may be
    called more than once in a process)."""
    handler = next((h for h in log.handlers if getattr(h, "_sluicegate", False)), None)
    if handler is None:
        handler = logging.StreamHandler(sys.stderr)
        handler._sluicegate = True  # type: ignore[attr-defined]
        handler.setFormatter(logging.Formatter(LOG_FORMAT, LOG_DATE_FORMAT))
        log.addHandler(handler)
    log.setLevel(level.upper())
    log.propagate = False


def reclaim() -> None:
    """Undo what an app's `logging.config.dictConfig` did to the server's own loggers without
    naming them: with `disable_existing_loggers` (True unless said otherwise, and Django's
    `LOGGING` often leaves it so) every logger that existed is disabled, and the server's
    start, signal, worker and shutdown lines would vanish. A config that names `sluicegate`
    is the operator's choice and is left alone (dictConfig does not disable what it names)."""
    for name in (LOGGER_NAME, f"{LOGGER_NAME}.error"):
        logging.getLogger(name).disabled = False
