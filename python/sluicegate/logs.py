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
import sys
from typing import Any, Mapping, Optional

from .errors import StartError

LOGGER_NAME = "sluicegate"
LOG_FORMAT = "[%(asctime)s] [%(process)d] [%(levelname)s] %(message)s"
LOG_DATE_FORMAT = "%Y-%m-%d %H:%M:%S %z"

log = logging.getLogger(LOGGER_NAME)


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
