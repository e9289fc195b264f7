"""The options table's rows (options.py) for the logs: the access log and its format, the error
log and its level, Python logging's configuration as gunicorn takes it, and syslog
(gunicorn_logging.py).
Rows only: options.py puts them in the one table, in its order.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Mapping, Optional, Tuple

from .option_row import Option
from .parsers import (parse_access_log, parse_access_log_format, parse_bool, parse_error_log,
                      parse_log_config_dict, parse_log_level, parse_path, parse_syslog_addr,
                      parse_syslog_facility)


#: The access log.
ACCESS: Tuple[Option, ...] = (
    Option(
        "access_log", parse_access_log, None,
        "Write one line per request to this file; '-' means standard output, 'off' writes "
        "none (a file named off is ./off).",
        "PATH", "Optional[str]", aliases=("--access-logfile",),
    ),
    Option(
        "access_log_format", parse_access_log_format, "combined",
        "The access log's lines: 'combined' (the Apache/nginx combined format), 'common', "
        "'json' (one object per line, every field below, valid JSON for any byte), a template "
        "of {fields}: client, time, method, target, path, query, protocol, status, bytes, "
        "referer, user_agent, request_id (X-Request-Id), queue_us (parsed to app called), "
        "app_us (app called to iterable closed), send_us (first byte to last byte taken by the "
        "kernel), total_us, end (ok, client_gone, timeout, error), pid, scheduler (inline, "
        "pool, loop); or gunicorn's format, byte for byte as gunicorn writes it: "
        "'%(h)s %(l)s %(u)s %(t)s \"%(r)s\" %(s)s %(b)s \"%(f)s\" \"%(a)s\"' with any of its "
        "atoms h l u t r m U q H s B b f a T D M L p %({header}i)s %({header}o)s %({VAR}e)s "
        "(docs/operations.md, \"Access log\").",
        "FORMAT", "str", aliases=("--access-logformat",), core=True,
    ),
)


#: The error log, Python logging's configuration, syslog.
ERRORS_AND_SYSLOG: Tuple[Option, ...] = (
    Option(
        "log_level", parse_log_level, "info",
        "Level of the error log (standard error, or --error-log): debug, info, warning, error or critical. "
        "debug also prints the traceback behind an app loading error.",
        "LEVEL", "str", core=True,
    ),
    Option(
        "error_log", parse_error_log, "-",
        "Write the error log (start and stop, workers, app errors and tracebacks) to this file, "
        "appended, instead of standard error ('-'). The sluicegate command opens it before it "
        "starts (relative to the directory it starts in) and makes it the process's standard "
        "error, so the workers and the Rust core write there too, and so do errors after that "
        "point. Set once at start (not on HUP); USR1 opens it again by its path in the master "
        "and every worker (logrotate). serve() leaves standard error alone.",
        "PATH", "Optional[str]", aliases=("--error-logfile", "--log-file"),
    ),
    Option(
        "capture_output", parse_bool, "false",
        "Send the app's standard output (print()) to the error log file too: with --error-log "
        "FILE, descriptor 1 becomes FILE as well, as gunicorn's --capture-output does (and as "
        "there, --access-log - then writes to FILE). Without --error-log FILE it changes "
        "nothing (the app's standard error already is the error log). Set once at start.",
        "", "bool", switch=True,
    ),
    Option("log_config_dict", parse_log_config_dict, None,
           "Configure Python logging with this dict (JSON; a table in the TOML file), merged "
           "into gunicorn's defaults as gunicorn's logconfig_dict is (\"version\" may be left "
           "out): the server's lines then go to the loggers gunicorn.error and gunicorn.access "
           "(docs/operations.md, \"Logging\"). Set once at start.",
           "JSON", "Optional[Mapping[str, Any]]"),
    Option("log_config", parse_path, None,
           "Configure Python logging from this ini file (fileConfig, with gunicorn's defaults): "
           "gunicorn's --log-config. Of --log-config-dict, --log-config-json and --log-config "
           "only the first given is used, as in gunicorn. Set once at start.",
           "FILE", "Optional[str]"),
    Option("log_config_json", parse_path, None,
           "The same from a JSON file: gunicorn's --log-config-json. Set once at start.",
           "FILE", "Optional[str]"),
    Option("log_syslog", parse_bool, "false",
           "Send the error and access logs to syslog too (--syslog-addr), as gunicorn does: "
           "'gunicorn.PREFIX.error: [PID] MESSAGE'.", "", "bool", switch=True),
    Option("syslog_addr", parse_syslog_addr, "udp://localhost:514",
           "Where --log-syslog sends: unix://PATH[#dgram], udp://HOST:PORT or tcp://HOST:PORT.",
           "ADDRESS", "str", aliases=("--log-syslog-to",)),
    Option("syslog_prefix", parse_path, None,
           "PREFIX in gunicorn.PREFIX.error; default: the app's name, ':' made '.'.",
           "PREFIX", "Optional[str]", aliases=("--log-syslog-prefix",)),
    Option("syslog_facility", parse_syslog_facility, "user",
           "The syslog facility of --log-syslog (user, daemon, local0 ... local7, ...).",
           "FACILITY", "str", aliases=("--log-syslog-facility",)),
    Option("disable_redirect_access_to_syslog", parse_bool, "false",
           "With --log-syslog, keep the access log out of syslog.", "", "bool", switch=True),
)
