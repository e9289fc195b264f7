"""The options of logging and metrics as gunicorn has them (--log-config-dict, --log-config,
--log-config-json, --log-syslog and its address, prefix and facility, --statsd-host, --statsd-prefix, --dogstatsd-tags): their
rows of options.py's table (`option_rows`, given the table's Option class and parsers, as a
lower floor takes what it needs from a higher one) and their parsers, with gunicorn's access
log format's. Each parser takes the raw value and returns the validated one, or raises
ValueError with what was expected.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping, Optional, Tuple


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, not {type(value).__name__}")
    return value


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
    text = _str(value).strip()
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
    text = _str(value).strip().lower()
    if text not in SYSLOG_FACILITIES:
        raise ValueError(f"unknown facility (known: {', '.join(SYSLOG_FACILITIES)})")
    return text


def parse_statsd_host(value: object) -> Optional[str]:
    """HOST[:PORT] (port 8125 if none), [IPV6][:PORT] or unix:PATH (unix://PATH), as gunicorn
    reads it; '' or None: off. Returned as HOST:PORT or unix:PATH."""
    if value is None:
        return None
    text = _str(value).strip()
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


def option_rows(Option: Callable[..., Any], parse_bool: Callable[[object], bool],
                parse_path: Callable[[object], Optional[str]], parse_str: Callable[[object], str],
                parse_log_config_dict: Callable[[object], Any]) -> Tuple[Any, ...]:
    """These options' rows of the table, in its order (after --capture-output)."""
    return (
        Option("log_config_dict", parse_log_config_dict, None,
               "Configure Python logging with this dict (JSON; a table in the TOML file), merged "
               "into gunicorn's defaults as gunicorn's logconfig_dict is (\"version\" may be left "
               "out): the server's lines then go to the loggers gunicorn.error and gunicorn.access "
               "(docs/operations.md, \"Logging\"). Set once at start.",
               "JSON", Optional[Mapping[str, Any]]),
        Option("log_config", parse_path, None,
               "Configure Python logging from this ini file (fileConfig, with gunicorn's defaults): "
               "gunicorn's --log-config. Of --log-config-dict, --log-config-json and --log-config "
               "only the first given is used, as in gunicorn. Set once at start.",
               "FILE", Optional[str]),
        Option("log_config_json", parse_path, None,
               "The same from a JSON file: gunicorn's --log-config-json. Set once at start.",
               "FILE", Optional[str]),
        Option("log_syslog", parse_bool, "false",
               "Send the error and access logs to syslog too (--syslog-addr), as gunicorn does: "
               "'gunicorn.PREFIX.error: [PID] MESSAGE'.", "", bool, switch=True),
        Option("syslog_addr", parse_syslog_addr, "udp://localhost:514",
               "Where --log-syslog sends: unix://PATH[#dgram], udp://HOST:PORT or tcp://HOST:PORT.",
               "ADDRESS", str, aliases=("--log-syslog-to",)),
        Option("syslog_prefix", parse_path, None,
               "PREFIX in gunicorn.PREFIX.error; default: the app's name, ':' made '.'.",
               "PREFIX", Optional[str], aliases=("--log-syslog-prefix",)),
        Option("syslog_facility", parse_syslog_facility, "user",
               "The syslog facility of --log-syslog (user, daemon, local0 ... local7, ...).",
               "FACILITY", str, aliases=("--log-syslog-facility",)),
        Option("disable_redirect_access_to_syslog", parse_bool, "false",
               "With --log-syslog, keep the access log out of syslog.", "", bool, switch=True),
        Option("statsd_host", parse_statsd_host, None,
               "Send gunicorn's statsd metrics here (HOST:PORT, port 8125 by default, or "
               "unix:PATH), beside --metrics-bind (docs/operations.md, \"statsd\").",
               "ADDRESS", Optional[str]),
        Option("statsd_prefix", parse_str, "",
               "A prefix for every statsd metric's name ('.' put after it).", "PREFIX", str),
        Option("dogstatsd_tags", parse_str, "",
               "Datadog tags for every statsd metric: comma-separated key:value pairs.", "TAGS", str),
    )
