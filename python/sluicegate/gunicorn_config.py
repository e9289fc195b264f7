"""`--config gunicorn.conf.py`: a gunicorn configuration file, read as gunicorn reads it, so that
switching from gunicorn is a change of the program's name.

gunicorn's configuration file is Python: gunicorn runs it as a module and takes the module's
names that are gunicorn settings (`bind`, `workers`, ...), ignoring every other name (imports,
helpers). So does this module. Each setting sluicegate has is mapped onto its option (`SETTINGS`,
below) and then validated like any other value, its errors naming the file, the line and the
setting; each gunicorn setting it does not have is reported on one line saying so and why,
and changes nothing. The hooks (`post_fork`, `when_ready`, ...) the file defines become the
`hooks` option's value (hooks.py runs them); the few sluicegate does not run are reported.

The file has the place of the TOML file among the sources (command line > environment > file >
default), and like it is read again on HUP. A `.py` name is what selects this reader.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import sys
import traceback
from typing import Any, Callable, Dict, Mapping, Tuple

from .asgi import worker_class_refusal
from .errors import OptionError, one_line
from .hooks import SUPPORTED as SUPPORTED_HOOKS, UNSUPPORTED as UNSUPPORTED_HOOKS, from_mapping

#: gunicorn worker classes that mean what every sluicegate process does.
THREADED_WORKER_CLASSES = ("sync", "gthread", "gunicorn.workers.sync.SyncWorker",
                           "gunicorn.workers.gthread.ThreadWorker")

#: gunicorn setting -> (sluicegate option, conversion of gunicorn's Python value to one our
#: option's parser takes). Where the meanings differ: docs/operations.md, "Coming from gunicorn".
SETTINGS: Dict[str, Tuple[str, Callable[[Any], Any]]] = {}


def _same(value: Any) -> Any:
    return value


def _text(value: Any) -> Any:
    """user/group may be a uid/gid number in gunicorn."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _list(value: Any) -> Any:
    """bind, reload_extra_files, raw_env: a string or a list of strings."""
    return [value] if isinstance(value, str) else list(value)


for _gunicorn, _ours, _convert in (
    ("wsgi_app", "app", _same),
    ("bind", "bind", _list),
    ("backlog", "backlog", _same),
    ("workers", "workers", _same),
    ("threads", "threads", _same),
    ("timeout", "timeout", _same),
    ("graceful_timeout", "graceful_timeout", _same),
    ("keepalive", "keepalive_timeout", _same),
    ("max_requests", "max_requests", _same),
    ("max_requests_jitter", "max_requests_jitter", _same),
    ("limit_request_line", "limit_request_line", _same),
    ("limit_request_fields", "limit_headers", _same),
    ("accesslog", "access_log", _same),
    ("loglevel", "log_level", _same),
    ("errorlog", "error_log", _same),
    ("preload_app", "preload", _same),
    ("reload", "reload", _same),
    ("reload_extra_files", "reload_extra", _list),
    ("chdir", "chdir", _same),
    ("user", "user", _text),
    ("group", "group", _text),
    ("umask", "umask", _same),
    ("pidfile", "pid", _same),
    ("forwarded_allow_ips", "forwarded_allow_ips", _same),
    ("proxy_protocol", "proxy_protocol", _same),
    ("certfile", "certfile", _same),
    ("keyfile", "keyfile", _same),
    ("ca_certs", "ca_certs", _same),
    ("cert_reqs", "cert_reqs", _same),
    ("raw_env", "env", _list),
    ("logconfig_dict", "log_config_dict", _same),
    ("logconfig", "log_config", _same),
    ("logconfig_json", "log_config_json", _same),
    ("access_log_format", "access_log_format", _same),
    ("syslog", "log_syslog", _same),
    ("syslog_addr", "syslog_addr", _same),
    ("syslog_prefix", "syslog_prefix", _same),
    ("syslog_facility", "syslog_facility", _same),
    ("disable_redirect_access_to_syslog", "disable_redirect_access_to_syslog", _same),
    ("statsd_host", "statsd_host", _same),
    ("statsd_prefix", "statsd_prefix", _same),
    ("dogstatsd_tags", "dogstatsd_tags", _same),
    ("capture_output", "capture_output", _same),
    ("pythonpath", "pythonpath", _same),
):
    SETTINGS[_gunicorn] = (_ours, _convert)

#: gunicorn's server hooks: functions in the file (hooks.py says which sluicegate runs).
HOOKS = SUPPORTED_HOOKS + tuple(UNSUPPORTED_HOOKS)


#: gunicorn's other settings (gunicorn 23), and why sluicegate ignores each kind.
IGNORED: Dict[str, str] = {}
for _names, _why in (
    (("worker_connections", "spew", "sendfile", "reuse_port", "worker_tmp_dir", "initgroups",
      "tmp_upload_dir", "reload_engine", "paste", "raw_paste_global_conf",
      "proc_name", "default_proc_name", "enable_stdio_inheritance"),
     "a setting sluicegate does not have"),
    (("daemon",), "sluicegate does not daemonize: run it under systemd (docs/operations.md)"),
    (("logger_class",),
     "sluicegate's loggers are configured with logconfig_dict, logconfig_json or logconfig"),
    (("ssl_version",), "use tls_min_version (1.2 or 1.3; nothing older is served)"),
    (("suppress_ragged_eofs", "do_handshake_on_connect"),
     "TLS is the Rust core's (rustls): no such switches"),
    (("ciphers",), "no cipher option: rustls's defaults (docs/tls.md)"),
    (("secure_scheme_headers", "forwarder_headers", "header_map"),
     "sluicegate reads a fixed family of forwarding headers (--forwarded-headers)"),
    (("proxy_allow_ips",), "sluicegate trusts PROXY headers from --forwarded-allow-ips"),
    (("limit_request_field_size",),
     "sluicegate limits the whole request head instead (--limit-header-bytes)"),
    (("permit_obsolete_folding", "strip_header_spaces", "permit_unconventional_http_method",
      "permit_unconventional_http_version", "casefold_http_method",
      "tolerate_dangerous_framing"),
     "sluicegate's HTTP parser is strict and has no such switches"),
    (("check_config", "print_config", "config"), "a command-line switch, not a file setting"),
):
    for _name in _names:
        IGNORED[_name] = _why

log = logging.getLogger("sluicegate")


def load(path: str, options: Mapping[str, Any]) -> Dict[str, Any]:
    """The file's values by sluicegate option name, each with the source it is reported under
    (`FILE, line N: SETTING`), as config_file.load gives them. Reports every setting it ignores
    (one line each)."""
    namespace = _run(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    out: Dict[str, Any] = {}
    hooks: Dict[str, Any] = {}
    for name, value in namespace.items():
        where = _where(path, text, name)
        if name in SETTINGS:
            option, convert = SETTINGS[name]
            if option not in options:  # pragma: no cover - the table and this map drifted
                raise AssertionError(f"gunicorn setting {name} maps to unknown option {option}")
            if value is None:
                continue  # gunicorn's None is its default (off for accesslog): ours
            out[option] = (convert(value), where)
        elif name in HOOKS:
            if callable(value) and name in SUPPORTED_HOOKS:
                hooks[name] = value
            elif callable(value):
                warn(f"{where}: gunicorn hook {name}() {UNSUPPORTED_HOOKS[name]}")
        elif name == "worker_class":
            asgi = worker_class_refusal(str(value))
            if asgi:
                raise OptionError(f"{where}: {asgi}")
            if str(value) in THREADED_WORKER_CLASSES:
                warn(f"{where}: worker_class {value!r} ignored: every sluicegate worker serves "
                     "with its event loop and an elastic pool of threads (--threads)")
            else:
                warn(f"{where}: worker_class {value!r} is not supported and ignored: sluicegate "
                     "serves with its event loop and an elastic pool of threads (--threads)")
        elif name in IGNORED:
            if value is not None and value is not False:  # None, False: off, as here
                warn(f"{where}: {name} ignored: {IGNORED[name]}")
    if hooks:
        try:
            out["hooks"] = (from_mapping(hooks, path), f"{path}: hooks")
        except ValueError as e:  # a hook gunicorn could not call either
            raise OptionError(f"{path}: {e}") from None
    return out


def warn(message: str) -> None:
    """One line on the error log; before logging is set up (the file is read before the server
    starts), straight to standard error in the CLI's own form."""
    if log.handlers:
        log.warning(message)
    else:
        print(f"sluicegate: warning: {one_line(message)}", file=sys.stderr, flush=True)


def _run(path: str) -> Dict[str, Any]:
    """Run the file as gunicorn does (a module named __config__ with __file__ set) and return
    its public names."""
    spec = importlib.util.spec_from_file_location("__config__", path)
    if spec is None or spec.loader is None:
        raise OptionError(f"cannot read config file {path!r}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except FileNotFoundError as e:
        raise OptionError(f"cannot read config file {path!r}: {e.strerror}") from None
    except SyntaxError as e:
        raise OptionError(f"{path}, line {e.lineno}: not valid Python: {e.msg}") from None
    except (Exception, SystemExit) as e:
        line = _line_in(path, e)
        raise OptionError(
            f"{path}{line}: running the gunicorn config file raised "
            f"{type(e).__name__}: {one_line(str(e))}"
        ) from e
    return {k: v for k, v in vars(module).items() if not k.startswith("_")}


def _line_in(path: str, e: BaseException) -> str:
    here = os.path.abspath(path)
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if os.path.abspath(f.filename) == here]
    return f", line {frames[-1].lineno}" if frames else ""


def _where(path: str, text: str, name: str) -> str:
    m = re.search(r"^[ \t]*(?:def[ \t]+)?" + re.escape(name) + r"\b", text, re.M)
    line = text.count("\n", 0, m.start()) + 1 if m else 0
    return f"{path}, line {line}: {name}" if line else f"{path}: {name}"

