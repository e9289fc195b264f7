"""Parsers of the logs and metrics' settings: the access log and its formats (sluicegate's,
gunicorn's %(atom)s, uWSGI's), the error log and its level, Python logging's
configuration, syslog's address and facility (gunicorn's), the metrics port's address and
statsd's host.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Mapping, Optional

from ..allowed_values import ALLOWED
from ..uwsgi_compat import UWSGI_FORMAT_PREFIX
from .values import _unquote, parse_path, parse_str


LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


#: The fields of the access log, in the JSON format's order (the Rust core's list:
#: `_core.ACCESS_LOG_FIELDS`, checked equal by the tests).
ACCESS_LOG_FIELDS = (
    "client", "time", "method", "target", "path", "query", "protocol", "status", "bytes",
    "referer", "user_agent", "request_id", "queue_us", "app_us", "send_us", "total_us", "end",
    "pid", "scheduler",
)


def parse_access_log_format(value: object) -> str:
    """combined, common, json, a template of {field} names, or gunicorn's %(atom)s format
    (written as gunicorn writes it: parse_gunicorn_log_format)."""
    text = parse_str(value)
    if text in ALLOWED["access_log_format"] or text.startswith(UWSGI_FORMAT_PREFIX):
        return text  # uwsgi:FORMAT: a uWSGI log-format string (--uwsgi-log-format)
    if "%(" in text:
        return parse_gunicorn_log_format(text)
    names = re.findall(r"\{([^{}]*)\}", text)
    if not names:
        raise ValueError(f"expected {', '.join(ALLOWED['access_log_format'])} or a template "
                         "such as '{client} {method} {path} {status} {app_us}'")
    if text.count("{") != len(names) or text.count("}") != len(names):
        raise ValueError("unbalanced braces in the template")
    unknown = [n for n in names if n not in ACCESS_LOG_FIELDS]
    if unknown:
        raise ValueError(f"unknown field {{{unknown[0]}}} (known: {', '.join(ACCESS_LOG_FIELDS)})")
    return text


def parse_access_log(value: object) -> Optional[str]:
    """A file path, or '-' for standard output; 'off' (any case), '' or None turns the access
    log off. 'off' is what --help shows as the default, so it must not make a file named off
    (a file of that name is './off')."""
    if value is None:
        return None
    text = parse_str(value)
    if not text or text.lower() == "off":
        return None
    return text


def parse_error_log(value: object) -> Optional[str]:
    """A file path; '-', '' or None: standard error."""
    text = parse_path(value)
    return None if text is None or text == "-" else text


def parse_log_level(value: object) -> str:
    """One of LOG_LEVELS, in any case; quotes around it are dropped (`--log-level "'info'"`,
    as a shell-form Dockerfile start line passes it)."""
    text = _unquote(parse_str(value)).lower()
    if text not in LOG_LEVELS:
        raise ValueError(f"expected one of {', '.join(LOG_LEVELS)}")
    return text


def parse_log_config_dict(value: object) -> Optional[Mapping[str, Any]]:
    """A dict for logging.config.dictConfig: JSON text (command line, environment) or a
    mapping (TOML table, gunicorn's logconfig_dict, serve()); '' or None: none."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        import json
        try:
            value = json.loads(value)
        except ValueError as e:
            raise ValueError(f"not valid JSON: {e}") from None
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a JSON object (a dict), not {type(value).__name__}")
    return value  # merged into gunicorn's defaults (which say "version": 1) by logs.configure


#: gunicorn's access log atoms whose value is a number (%d works on them; on the others,
#: text, it fails in gunicorn too).
GUNICORN_NUMERIC_ATOMS = ("B", "T", "D", "M")


_GUNICORN_ATOM = re.compile(r"%(?:%|\((?P<name>[^)]*)\)(?P<spec>[-0 +#]*\d*(?:\.\d*)?)(?P<conv>.?))")


def parse_gunicorn_log_format(text: str) -> str:
    """gunicorn's access_log_format: Python %-formatting over gunicorn's atoms (%(h)s,
    %({header}i)s, ...); the conversions s, d and i, %% for a '%'."""
    at = 0
    for m in _GUNICORN_ATOM.finditer(text):
        if "%" in text[at:m.start()]:
            raise ValueError(f"a '%' at character {text.index('%', at)} names no atom: write "
                             "%(name)s, or %% for a '%'")
        at = m.end()
        name, conv = m["name"], m["conv"]
        if name is None:
            continue
        if conv not in ("s", "d", "i"):
            raise ValueError(f"%({name}){m['spec']}{conv}: only the conversions s, d and i "
                             "are supported")
        if conv in "di" and name not in GUNICORN_NUMERIC_ATOMS:
            raise ValueError(f"%({name}){conv}: gunicorn's atom {name!r} is text, and %{conv} "
                             f"of text fails in gunicorn too (write %({name})s)")
    if "%" in text[at:]:
        raise ValueError(f"a '%' at character {text.index('%', at)} names no atom: write "
                         "%(name)s, or %% for a '%'")
    return text


#: syslog facilities by name (gunicorn's SYSLOG_FACILITIES).
SYSLOG_FACILITIES = {
    "auth": 4, "authpriv": 10, "cron": 9, "daemon": 3, "ftp": 11, "kern": 0, "lpr": 6,
    "mail": 2, "news": 7, "security": 4, "syslog": 5, "user": 1, "uucp": 8, "local0": 16,
    "local1": 17, "local2": 18, "local3": 19, "local4": 20, "local5": 21, "local6": 22,
    "local7": 23,
}


def parse_syslog_addr(value: object) -> str:
    """unix://PATH[#dgram|#stream], udp://HOST[:PORT] or tcp://HOST[:PORT] (gunicorn's)."""
    text = parse_str(value).strip()
    if text.startswith("unix://") and len(text) > 7:
        return text
    for scheme in ("udp://", "tcp://"):
        if text.startswith(scheme):
            port = text[len(scheme):].split("]")[-1].rpartition(":")
            if port[1] and not port[2].isdigit():
                raise ValueError(f"{port[2]!r} is not a valid port number")
            return text
    raise ValueError("expected unix://PATH, udp://HOST:PORT or tcp://HOST:PORT")


def parse_syslog_facility(value: object) -> str:
    text = parse_str(value).strip().lower()
    if text not in SYSLOG_FACILITIES:
        raise ValueError(f"unknown facility (known: {', '.join(SYSLOG_FACILITIES)})")
    return text


def parse_metrics_bind(value: object) -> str:
    """'' (off), HOST:PORT or unix:PATH."""
    text = parse_str(value).strip()
    if not text or text.startswith("unix:") and len(text) > 5:
        return text
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("expected HOST:PORT or unix:PATH, e.g. 127.0.0.1:9100")
    return text


def parse_statsd_host(value: object) -> Optional[str]:
    """HOST[:PORT] (port 8125 if none), [IPV6][:PORT] or unix:PATH (unix://PATH), as gunicorn
    reads it; '' or None: off. Returned as HOST:PORT or unix:PATH."""
    if value is None:
        return None
    text = parse_str(value).strip()
    if not text:
        return None
    if text.startswith("unix:"):
        path = text[len("unix:"):]
        path = path[2:] if path.startswith("//") else path
        if not path:
            raise ValueError("unix: needs a path")
        return "unix:" + path
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else "8125"
        host = f"[{host}]"
    else:
        host, sep, port = text.rpartition(":")
        if not sep:
            host, port = text, "8125"
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("expected HOST:PORT, [IPV6]:PORT or unix:PATH, e.g. localhost:8125")
    return f"{host}:{port}"
