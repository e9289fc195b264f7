"""The rows of the options table (options.py) for uWSGI's runtime: `--uwsgi-module`
(uwsgi_module.py), uWSGI's request log lines and logging options (src/observe/uwsgi_format.rs,
log_when.rs; the master's log reopening), and the stats server (uwsgi_stats.py), with their
parsers. Kept apart so that the table stays one screen per subject.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Optional, Tuple

from .parsers import parse_path
from .uwsgi_compat import COMPAT_BUFFER_SIZE, COMPAT_DELTA, COMPAT_MIN_LIFETIME

#: The items of --access-log-when's list (src/observe/log_when.rs reads the same).
WHEN_ITEMS = ("4xx", "5xx", "zero")
WHEN_VALUED = ("slow", "big")


def parse_uwsgi_log_format(value: object) -> Optional[str]:
    """A uWSGI log-format string (any text: uWSGI reads what is not `%(name)` as text)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"expected a string, not {type(value).__name__}")
    if "\n" in value or "\0" in value:
        raise ValueError("a log format is one line")
    return value


def parse_stats(value: object) -> Optional[str]:
    """--stats: uwsgi_stats.parse_stats's address, that module imported only for a value (it
    serves the stats, which no process needs without one)."""
    if value is None:
        return None
    from .uwsgi_stats import parse_stats as parse

    return parse(value)


def parse_log_date(value: object) -> Optional[str]:
    """'on' (C's ctime form), a strftime format, or off ('', 'off', None)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"expected a string, not {type(value).__name__}")
    text = value.strip()
    if text.lower() in ("", "off", "false", "0", "no"):
        return None
    if text.lower() in ("on", "true", "1", "yes"):
        return "on"
    if "\n" in text:
        raise ValueError("a date format is one line")
    return value


def parse_access_log_when(value: object) -> str:
    """all, none, or a comma list of 4xx, 5xx, zero, slow=MS, big=BYTES."""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, not {type(value).__name__}")
    text = value.strip()
    if text in ("", "all", "none"):
        return text or "all"
    for item in (i.strip() for i in text.split(",")):
        name, eq, number = item.partition("=")
        if item in WHEN_ITEMS or (eq and name in WHEN_VALUED and number.strip().isdigit()):
            continue
        raise ValueError(f"{item!r}: expected all, none, or a comma list of 4xx, 5xx, "
                         "slow=MS, zero, big=BYTES")
    return text


def parse_uwsgi_compat(value: object) -> str:
    """One item of --uwsgi-compat: buffer-size, max-requests-delta=N, min-worker-lifetime=N."""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, not {type(value).__name__}")
    text = value.strip()
    name, eq, number = text.partition("=")
    if text == COMPAT_BUFFER_SIZE or (name in (COMPAT_DELTA, COMPAT_MIN_LIFETIME) and eq
                                      and number.isdigit()):
        return text
    raise ValueError(f"{text!r}: expected {COMPAT_BUFFER_SIZE}, {COMPAT_DELTA}=N or "
                     f"{COMPAT_MIN_LIFETIME}=N")


def option_rows(Option: Callable[..., Any], parse_bool: Callable[[object], bool]
                ) -> Tuple[Any, ...]:
    """The rows of options.py's table for uWSGI's runtime, in its order (at its end)."""
    return (
        Option(
            "uwsgi_module", parse_bool, "false",
            "Make `import uwsgi` and `import uwsgidecorators` work in the app, as under uWSGI: "
            "worker_id(), numproc, opt, masterpid(), reload(), set_logvar(), @postfork, ...; "
            "every other name fails at its first call, naming the uWSGI feature "
            "(sluicegate-uwsgi always sets it; docs/operations.md).",
            "", "bool", switch=True,
        ),
        Option(
            "uwsgi_log_format", parse_uwsgi_log_format, None,
            "Write the access log lines in this uWSGI log-format (uWSGI's `log-format`): "
            "%(addr), %(method), %(uri), %(status), %(msecs), %(ltime), %(var.NAME), a "
            "uwsgi.set_logvar key, ... (docs/operations.md); it replaces --access-log-format. "
            "`--access-log-format uwsgi` is uWSGI's default line.",
            "FORMAT", "Optional[str]",
        ),
        Option(
            "access_log_when", parse_access_log_when, "all",
            "Which requests get an access log line, as uWSGI's disable-logging with log-4xx, "
            "log-5xx, log-slow, log-zero, log-big: all, none, or a comma list of 4xx, 5xx, "
            "slow=MS (took at least MS milliseconds), zero (an empty body), big=BYTES.",
            "LIST", "str", core=True,
        ),
        Option(
            "access_log_forwarded_for", parse_bool, "false",
            "In uWSGI's request lines (--access-log-format uwsgi, --uwsgi-log-format), the "
            "address is the request's X-Forwarded-For when it has one (uWSGI's "
            "log-x-forwarded-for).",
            "", "bool", switch=True, core=True,
        ),
        Option(
            "log_date", parse_log_date, None,
            "Start each error log line with the date, as uWSGI's log-date: 'on' for C's ctime "
            "form (Fri Nov 27 02:18:11 2026), or a strftime format (%Y-%m-%d %H:%M:%S), then "
            "' - '.",
            "FORMAT|on", "Optional[str]",
        ),
        Option(
            "log_reopen", parse_bool, "false",
            "Reopen the log files on each reload (uWSGI's log-reopen), as USR1 does.",
            "", "bool", switch=True,
        ),
        Option(
            "touch_logreopen", parse_path, [],
            "Reopen the log files (as USR1 does) when this file's modification time changes "
            "(uWSGI's touch-logreopen; the master looks once a second). Give it several times "
            "for several files.",
            "PATH", "Tuple[str, ...]", repeatable=True,
        ),
        Option(
            "uwsgi_compat", parse_uwsgi_compat, [],
            "uWSGI 2.0's way where it differs from sluicegate's (sluicegate-uwsgi sets them "
            "from the uWSGI configuration): `buffer-size`: a request head larger than "
            "--limit-header-bytes gets no 431: the connection is closed after uWSGI's log line "
            "(nginx in front answers 502); `max-requests-delta=N`: worker K (from 1) is "
            "replaced after --max-requests + (K-1)*N requests, in place of "
            "--max-requests-jitter's random count; `min-worker-lifetime=N`: --max-requests "
            "replaces no worker younger than N seconds. Give it several times for several.",
            "ITEM", "Tuple[str, ...]", repeatable=True,
        ),
        Option(
            "stats", parse_stats, None,
            "Serve uWSGI's stats JSON document (what uwsgitop and uWSGI exporters read) on "
            "HOST:PORT, :PORT, a unix socket path or @NAME (abstract): one document per "
            "connection, as uWSGI's `stats` option.",
            "ADDRESS", "Optional[str]",
        ),
        Option(
            "stats_http", parse_bool, "false",
            "Answer the --stats socket over HTTP (uWSGI's `stats-http`): a client's request gets "
            "the document as application/json.",
            "", "bool", switch=True,
        ),
    )
