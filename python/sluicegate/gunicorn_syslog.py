"""gunicorn's SysLogHandler for `--log-syslog` (gunicorn_logging.py adds it), but a syslog it
cannot write to (a missing socket, a daemon restarting) is said once, in one line of the error
log, and not with logging's `--- Logging error ---` traceback for every record. A module of its
own so that logging.handlers (and the socket, pickle and queue modules it brings) is imported
only by a server that logs to syslog.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict

#: The logger that says a syslog is down or back (gunicorn_logging.ERROR_LOGGER).
ERROR_LOGGER = "gunicorn.error"


#: How long records are dropped after a syslog socket could not be written to, before the
#: next record tries it again (connecting anew).
SYSLOG_RETRY_S = 5.0


class _Unreachable:
    """Whether the syslog at one address is being reached, shared by its handlers (the error
    and the access logger's), so that its failure is said once and not once per logger."""

    def __init__(self) -> None:
        self.down = False
        self.retry_at = 0.0


_unreachable: Dict[str, _Unreachable] = {}


class SysLogHandler(logging.handlers.SysLogHandler):
    """gunicorn's SysLogHandler, but a syslog it cannot write to (a missing socket, a daemon
    restarting) is said once, in one line of the error log, and not with logging's
    `--- Logging error ---` traceback for every record: its records are dropped, and it is
    tried again, a new connection, with a record every SYSLOG_RETRY_S; its return is said too."""

    def __init__(self, shown: str, **kwargs: Any) -> None:
        self.shown = shown
        self.state = _unreachable.setdefault(shown, _Unreachable())
        self._failed = False
        super().__init__(**kwargs)

    def emit(self, record: logging.LogRecord) -> None:
        state = self.state
        if state.down:
            if time.monotonic() < state.retry_at:
                return
            self._reconnect()
        self._failed = False
        super().emit(record)  # calls handleError on failure
        if state.down and not self._failed:
            state.down = False
            _say(logging.INFO, "syslog at %s reached again", self.shown)

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            super().handleError(record)
            return
        self._failed = True
        state = self.state
        state.retry_at = time.monotonic() + SYSLOG_RETRY_S
        if not state.down:
            state.down = True
            _say(logging.WARNING, "syslog at %s cannot be written to (%s): its records are "
                 "dropped, and it is tried again every %gs", self.shown,
                 error.strerror or error, SYSLOG_RETRY_S)

    def _reconnect(self) -> None:
        try:
            if self.socket is not None:
                self.socket.close()
            if self.unixsocket:  # the method's name in every Python this runs on
                connect = getattr(self, "_connect_unixsocket", None) or self._connect_unix
                connect(self.address)
            elif hasattr(self, "createSocket"):  # Python 3.11 and later
                self.socket = None
                self.createSocket()
        except OSError:
            pass  # the send that follows fails again, and says nothing more


def _say(level: int, message: str, *args: Any) -> None:
    """One line of the error log about syslog, through `gunicorn.error` (whose syslog handler
    is down, or just back: it drops or sends it like any other)."""
    logging.getLogger(ERROR_LOGGER).log(level, message, *args)
