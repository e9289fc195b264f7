"""The one table of sluicegate's options, and the two phases that turn what a user wrote into a
frozen, validated `Config`.

Every option is declared once, in `OPTIONS` (name, parser, default, help, metavar, repeatable).
Everything else is derived from that table, so nothing can drift:
  - the command line and its `--help` (`build_parser`),
  - the environment variables `SLUICEGATE_<NAME>`,
  - the keywords and defaults of `sluicegate.serve()`,
  - gunicorn's spellings of the same options (`aliases`, `-w`, `--keep-alive`, ...),
  - the `Config` dataclass (one field per option; see below),
  - the keys passed straight through to the Rust core (`core=True`), and so the `ServerConfig`
    type in _core.pyi (generated, see config.py) and the keys src/config.rs must read,
  - docs/options.md (`python -m sluicegate.options --markdown > docs/options.md`).
tests/test_options_contract.py fails on any drift between the table and these.

`Config` is written out by hand, as a checked copy of the table, rather than made from it at
import time with `dataclasses.make_dataclass`: a class built at run time is invisible to type
checkers and editors (mypy types it as Any, so `cfg.max_request` would pass unnoticed), and the
copy costs one line per option. It cannot drift: importing this module fails if its fields
differ from OPTIONS in name, order or type, and `python -m sluicegate.options --config-class`
prints the fields to paste.

Resolution has two phases, like ripgrep's lowargs -> hiargs:
  1. raw (`raw_values`): per option, the value from the command line (or a `serve()` keyword),
     else from the environment, else the default, still as written, with where it came from;
  2. validated (`validate`): each raw value goes through its option's parser, giving a frozen
     `Config`. A bad value raises `OptionError` whose one line names the option, the value as
     written and what is wrong with it.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import math
import os
import re
import sys
import typing
from typing import Any, Callable, Dict, List, Mapping, NoReturn, Optional, Sequence, Tuple, Union

from .errors import OptionError
from .gunicorn_config import THREADED_WORKER_CLASSES
from .hooks import Hooks, parse_hooks
from .syspath import parse_pythonpath
from .asgi import refuse_asgi_worker_class
from .listeners import BindAddress, parse_bind

ENV_PREFIX = "SLUICEGATE_"
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")

# Upper bounds that keep a value inside the Rust core's integer and Duration types (a u64 byte
# count; Duration::from_secs_f64 panics on overflow). Far beyond any sensible setting.
_MAX_BYTES = 2**63 - 1
_MAX_COUNT = 2**31 - 1
_MAX_SECONDS = 1e9


# --- Parsers: each takes the value as written (a str from the command line or the environment,
# --- or a Python value given to serve()) and returns the typed value, or raises ValueError with
# --- a one-line reason that does not repeat the value.


def _int(value: object, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected {what}, not a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return int(value)
    raise ValueError(f"expected {what}")


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, not {type(value).__name__}")
    return value


_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(value: object, minimum: int = 0) -> int:
    """A byte count: `65536`, or with a binary suffix `64k`, `16M`, `1G` (k = 1024 bytes)."""
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)\s*", value)
        if not m:
            raise ValueError("expected a byte count such as 65536, 64k, 16M or 1G")
        n = int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    else:
        n = _int(value, "a byte count such as 65536, 64k, 16M or 1G")
    if not minimum <= n <= _MAX_BYTES:
        raise ValueError(f"must be at least {minimum}" if n < minimum else "is too large")
    return n


def parse_positive_size(value: object) -> int:
    return parse_size(value, minimum=1)


def parse_count(value: object) -> int:
    """A whole number of at least 1."""
    n = _int(value, "a whole number")
    if not 1 <= n <= _MAX_COUNT:
        raise ValueError("must be at least 1" if n < 1 else "is too large")
    return n


def parse_count_or_zero(value: object) -> int:
    """A whole number, 0 or more."""
    n = _int(value, "a whole number")
    if not 0 <= n <= _MAX_COUNT:
        raise ValueError("must be 0 or more" if n < 0 else "is too large")
    return n


def parse_seconds_or_off(value: object) -> float:
    """A duration in seconds, >= 0; 0 is off."""
    seconds = _seconds(value)
    if not seconds >= 0:
        raise ValueError("must be a number of seconds >= 0 (0: off)")
    return seconds + 0.0  # -0.0 is 0.0


def parse_seconds(value: object) -> float:
    """A duration in seconds, > 0: `10`, `2.5`."""
    seconds = _seconds(value)
    if not seconds > 0:
        raise ValueError("must be a number of seconds greater than 0")
    return seconds


def _seconds(value: object) -> float:
    if isinstance(value, bool):
        raise ValueError("expected a number of seconds, not a boolean")
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError("expected a number of seconds such as 30 or 2.5") from None
    if not math.isfinite(seconds):
        raise ValueError("must be a finite number of seconds")
    if seconds > _MAX_SECONDS:
        raise ValueError("is too large")
    return seconds


def parse_threads(value: object) -> Optional[Tuple[int, int]]:
    """`MIN:MAX`, or a single `N` meaning `1:N`; MIN >= 0, MAX >= 1, MIN <= MAX. `auto` (or
    None) is None: the bounds are chosen once the app is loaded (see thread_bounds.py)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError("expected (MIN, MAX)")
        low, high = _int(value[0], "MIN:MAX"), _int(value[1], "MIN:MAX")
    elif isinstance(value, str) and ":" in value:
        low_text, _, high_text = value.partition(":")
        low, high = _int(low_text, "MIN:MAX or N"), _int(high_text, "MIN:MAX or N")
    else:
        low, high = 1, _int(value, "MIN:MAX or N")
        low = min(low, high)  # "--threads 0" is refused below for MAX, not for MIN > MAX
    if low < 0:
        raise ValueError("MIN must be 0 or more")
    if high < 1:
        raise ValueError("MAX must be at least 1")
    if high > _MAX_COUNT:
        raise ValueError("MAX is too large")
    if low > high:
        raise ValueError(f"MIN ({low}) is larger than MAX ({high})")
    return (low, high)


def parse_app(value: object) -> Union[str, Callable[..., Any]]:
    """`MODULE:APP` (checked by the loader), or, through serve(), the WSGI callable itself."""
    if callable(value) and not isinstance(value, str):
        return value
    text = _str(value).strip()
    if not text:
        raise ValueError("expected MODULE:APP, e.g. myproject.wsgi:application")
    return text


#: The host of a `--bind :PORT` (gunicorn's form): every IPv4 interface, as gunicorn binds it.
ALL_INTERFACES = "0.0.0.0"


def parse_bind_value(value: object) -> BindAddress:
    """listeners.parse_bind, plus two forms a gunicorn user writes: `:8000` (every interface,
    port 8000, as gunicorn reads it) and a bare `8000`, refused with both readings offered."""
    text = _str(value).strip()
    wire, address = "", text
    for prefix in ("https:", "http:"):
        if text.startswith(prefix):
            wire, address = prefix, text[len(prefix):]
    for prefix in ("uwsgi:", "proxy:"):
        if address.startswith(prefix):
            wire, address = wire + prefix, address[len(prefix):]
    if address.isdigit():
        raise ValueError(
            f"a port alone is not an address: did you mean 127.0.0.1:{address} (this machine "
            f"only) or :{address} (every interface)?"
        )
    if address.startswith(":") and address[1:].isdigit():
        text = f"{wire}{ALL_INTERFACES}{address}"
    return parse_bind(text)


def parse_cert_reqs(value: object) -> str:
    """none, optional or required; gunicorn's numbers (ssl.CERT_NONE=0, CERT_OPTIONAL=1,
    CERT_REQUIRED=2) too, so a gunicorn command line works unchanged."""
    text = _str(value).strip().lower()
    text = {"0": "none", "1": "optional", "2": "required"}.get(text, text)
    if text not in ("none", "optional", "required"):
        raise ValueError("expected none, optional or required")
    return text


def parse_tls_min_version(value: object) -> str:
    text = _str(value).strip().lower().removeprefix("tlsv").removeprefix("tls")
    if text not in ("1.2", "1.3"):
        raise ValueError("expected 1.2 or 1.3 (nothing older is served)")
    return text


def parse_root_path(value: object) -> str:
    """'' or a path that starts with '/' and does not end with '/'."""
    text = _str(value)
    if text and (not text.startswith("/") or text.endswith("/")):
        raise ValueError("must be empty or start with '/' and not end with '/', e.g. /app")
    if any(ord(c) < 32 or c == "\x7f" for c in text):
        raise ValueError("cannot contain control characters")
    return text


def parse_forwarded_allow_ips(value: object) -> str:
    """Comma-separated addresses and CIDR networks, `unix` (unix-socket peers), `*` (all);
    empty: none. Normalised to the same text without spaces."""
    import ipaddress

    if isinstance(value, (list, tuple)):
        value = ",".join(_str(v) for v in value)
    items = [i.strip() for i in _str(value).split(",")]
    for item in items:
        if item in ("", "*", "unix"):
            continue
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"{item!r} is not an address, a network, 'unix' or '*'") from None
    return ",".join(i for i in items if i)


def parse_forwarded_headers(value: object) -> str:
    """x-forwarded or forwarded."""
    text = _str(value).strip().lower()
    if text not in ("x-forwarded", "forwarded"):
        raise ValueError("must be x-forwarded or forwarded")
    return text


#: The fields of the access log, in the JSON format's order (the Rust core's list:
#: `_core.ACCESS_LOG_FIELDS`, checked equal by the tests).
ACCESS_LOG_FIELDS = (
    "client", "time", "method", "target", "path", "query", "protocol", "status", "bytes",
    "referer", "user_agent", "request_id", "queue_us", "app_us", "send_us", "total_us", "end",
    "pid", "scheduler",
)


def parse_access_log_format(value: object) -> str:
    """combined, common, json, or a template of {field} names."""
    text = _str(value)
    if text in ("combined", "common", "json"):
        return text
    names = re.findall(r"\{([^{}]*)\}", text)
    if not names:
        raise ValueError("expected combined, common, json or a template such as "
                         "'{client} {method} {path} {status} {app_us}'")
    if text.count("{") != len(names) or text.count("}") != len(names):
        raise ValueError("unbalanced braces in the template")
    unknown = [n for n in names if n not in ACCESS_LOG_FIELDS]
    if unknown:
        raise ValueError(f"unknown field {{{unknown[0]}}} (known: {', '.join(ACCESS_LOG_FIELDS)})")
    return text


def parse_metrics_bind(value: object) -> str:
    """'' (off), HOST:PORT or unix:PATH."""
    text = _str(value).strip()
    if not text or text.startswith("unix:") and len(text) > 5:
        return text
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("expected HOST:PORT or unix:PATH, e.g. 127.0.0.1:9100")
    return text


def parse_health_path(value: object) -> str:
    """'' (off) or an absolute path without a query, e.g. /healthz."""
    text = _str(value)
    if text and not text.startswith("/"):
        raise ValueError("must be empty or start with '/', e.g. /healthz")
    if any(ord(c) <= 32 or c in "?#\x7f" for c in text) or not text.isascii():
        raise ValueError("must be a plain ASCII path: no spaces, controls, '?' or '#'")
    return text


def parse_warmup(value: object) -> str:
    """'' (off), an absolute path (/healthz, a query allowed), or http://HOST/PATH to give the
    request a Host the app accepts (Django's ALLOWED_HOSTS)."""
    text = _str(value).strip()
    if not text:
        return ""
    rest = text.split("://", 1)[1] if text.startswith(("http://", "https://")) else ""
    path = ("/" + rest.split("/", 1)[1]) if "/" in rest else ("/" if rest else text)
    if not path.startswith("/") or (rest and not rest.split("/", 1)[0]):
        raise ValueError("expected a path such as /healthz, or http://HOST/PATH")
    if any(ord(c) <= 32 or c in "#\x7f" for c in text) or not text.isascii():
        raise ValueError("must be a plain ASCII path: no spaces, controls or '#'")
    return text


def parse_access_log(value: object) -> Optional[str]:
    """A file path, or '-' for standard output; 'off' (any case), '' or None turns the access
    log off. 'off' is what --help shows as the default, so it must not make a file named off
    (a file of that name is './off')."""
    if value is None:
        return None
    text = _str(value)
    if not text or text.lower() == "off":
        return None
    return text


def parse_error_log(value: object) -> Optional[str]:
    """A file path; '-', '' or None: standard error."""
    text = parse_path(value)
    return None if text is None or text == "-" else text




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
    if value.get("version") != 1:
        raise ValueError('must have "version": 1, as logging.config.dictConfig requires')
    return value


def parse_worker_class(value: object) -> str:
    text = _str(value).strip()
    refuse_asgi_worker_class(text)  # ValueError: it runs ASGI apps (what to run instead)
    if text not in THREADED_WORKER_CLASSES:
        raise ValueError(
            "sluicegate has only its own workers (an event loop and an elastic thread pool, "
            "what gunicorn's sync and gthread name): leave -k out"
        )
    return text


def parse_env_item(value: object) -> str:
    """KEY=VALUE, KEY a non-empty name without '=' or NUL."""
    text = _str(value)
    key, sep, _ = text.partition("=")
    if not sep or not key.strip() or "\0" in text:
        raise ValueError("expected KEY=VALUE, e.g. DJANGO_SETTINGS_MODULE=mysite.settings")
    return text


def parse_log_level(value: object) -> str:
    text = _str(value).strip().lower()
    if text not in LOG_LEVELS:
        raise ValueError(f"expected one of {', '.join(LOG_LEVELS)}")
    return text


SCHEDULERS = ("adaptive", "inline", "pool")


def parse_scheduler(value: object) -> str:
    text = _str(value).strip().lower()
    if text not in SCHEDULERS:
        raise ValueError(f"expected one of {', '.join(SCHEDULERS)}")
    return text


HTTP2_MODES = ("on", "tls", "off")


def parse_http2(value: object) -> str:
    """on, tls or off (and the switch spellings: true means on, false off)."""
    text = _str(value).strip().lower()
    if text in ("1", "true", "yes"):
        return "on"
    if text in ("0", "false", "no"):
        return "off"
    if text not in HTTP2_MODES:
        raise ValueError(f"expected one of {', '.join(HTTP2_MODES)}")
    return text


def parse_bool(value: object) -> bool:
    """A switch: true/false, yes/no, on/off, 1/0 (and Python booleans, for serve())."""
    if isinstance(value, bool):
        return value
    text = _str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("expected true or false")


@dataclasses.dataclass(frozen=True)
class StaticMount:
    """One `--static` mount: URL prefix, directory, and its per-mount settings."""

    prefix: str
    directory: str
    max_age: Optional[int] = None
    immutable: bool = False
    index: Optional[str] = "index.html"
    dotfiles: bool = False
    follow_symlinks: bool = False

    def to_core(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


def parse_static(value: object) -> StaticMount:
    """`URL_PREFIX=DIRECTORY`, optionally followed by `;`-separated settings: `max-age=N`,
    `immutable`, `index=NAME` or `index=none`, `dotfiles`, `follow-symlinks`."""
    if isinstance(value, StaticMount):
        return value
    text = _str(value).strip()
    head, *settings = text.split(";")
    prefix, sep, directory = head.partition("=")
    if not sep or not prefix or not directory:
        raise ValueError("expected URL_PREFIX=DIRECTORY, e.g. /static=./public")
    if not prefix.startswith("/"):
        raise ValueError("the URL prefix must start with '/', e.g. /static")
    # "/static/" (Django's STATIC_URL as written) is the mount "/static".
    prefix = prefix.rstrip("/") or "/"
    if any(c in prefix for c in "?#%\\") or any(ord(c) < 33 for c in prefix):
        raise ValueError("the URL prefix must be a plain path (no ?, #, %, spaces or controls)")
    if not os.path.isdir(directory):
        raise ValueError(f"{directory!r} is not a directory")
    mount: Dict[str, Any] = {"prefix": prefix, "directory": os.path.abspath(directory)}
    for item in (x.strip() for x in settings):
        key, _, arg = item.partition("=")
        if key == "max-age" and arg.isdigit():
            mount["max_age"] = int(arg)
        elif key == "immutable" and not arg:
            mount["immutable"] = True
        elif key == "index" and arg:
            mount["index"] = None if arg == "none" else arg
        elif key == "dotfiles" and not arg:
            mount["dotfiles"] = True
        elif key == "follow-symlinks" and not arg:
            mount["follow_symlinks"] = True
        elif item:
            raise ValueError(
                f"unknown setting {item!r} (max-age=N, immutable, index=NAME|none, dotfiles, "
                "follow-symlinks)"
            )
    if mount.get("index") and ("/" in mount["index"] or mount["index"].startswith(".")):
        raise ValueError("index must be a plain file name")
    return StaticMount(**mount)


# The longest --server-header: the value goes out in every response head, so a mistaken one
# (a file pasted in, 100 KiB) would make every response that much longer. Real ones are a
# product name and version ("nginx/1.27.1", "gunicorn"): 256 bytes leaves room for any.
MAX_SERVER_HEADER = 256


def parse_server_header(value: object) -> str:
    """Any visible text; it becomes a response header, so CR, LF and other controls are refused,
    and so is a value longer than MAX_SERVER_HEADER bytes."""
    text = _str(value)
    if any((ord(c) < 32 and c != "\t") or c == "\x7f" for c in text):
        raise ValueError("cannot contain control characters (CR, LF, ...)")
    if not text.isascii():
        raise ValueError("must be ASCII")
    text = text.strip()
    if len(text) > MAX_SERVER_HEADER:
        raise ValueError(f"is {len(text)} bytes long; at most {MAX_SERVER_HEADER} are allowed")
    return text


def parse_workers(value: object) -> Optional[int]:
    """N >= 1 worker processes under a master, `auto` for one per CPU this process may use;
    None (unset): one process, no master."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == "auto":
        return max(1, len(os.sched_getaffinity(0)))
    n = _int(value, "N or auto")
    if not 1 <= n <= 1024:
        raise ValueError("must be between 1 and 1024")
    return n


def parse_path(value: object) -> Optional[str]:
    """A file path; '' or None: off."""
    if value is None:
        return None
    text = os.fspath(value) if isinstance(value, os.PathLike) else _str(value)
    return text or None


def parse_path_or_off(value: object) -> Optional[str]:
    """A file path; 'off' (any case), '' or None: none. For the options whose --help default
    reads "off" (saying it must not make or read a file named off: that one is './off')."""
    text = parse_path(value)
    if text is None or text.lower() == "off":
        return None
    return text


def _parse_umask(value: object) -> Optional[int]:
    from .privileges import parse_umask
    return parse_umask(value)


def parse_chdir(value: object) -> Optional[str]:
    if value is None:
        return None
    text = os.fspath(value) if isinstance(value, os.PathLike) else _str(value)
    if not text:
        return None
    if not os.path.isdir(text):
        raise ValueError("no such directory")
    return text


def parse_control_socket(value: object) -> str:
    """A unix socket path for the control socket ('' for the default one)."""
    text = os.fspath(value) if isinstance(value, os.PathLike) else _str(value)
    text = text[5:] if text.startswith("unix:") else text
    if "\0" in text:
        raise ValueError("a path cannot hold a NUL byte")
    if len(os.fsencode(text)) > 107:  # sun_path: 108 bytes with its NUL
        raise ValueError("a unix socket path is at most 107 bytes")
    return text


# --- The table.


@dataclasses.dataclass(frozen=True)
class Option:
    """One option, declared once. `name` is the Python identifier (the Config field, the
    serve() keyword, the core's config key); the flag and the env var are derived from it."""

    name: str
    parse: Callable[[object], Any]
    #: The default as a user would write it (shown in --help and the docs); None = off.
    default: Any
    help: str
    metavar: str
    #: The type of the validated value (the Config field's annotation).
    type: Any
    short: Optional[str] = None
    #: Other spellings on the command line: gunicorn's flags (`-w`, `--keep-alive`, ...), so that
    #: a gunicorn command line works by changing only the program's name.
    aliases: Tuple[str, ...] = ()
    #: Given several times on the command line; comma-separated in the environment.
    repeatable: bool = False
    positional: bool = False
    #: A switch: given without a value on the command line (true/false in the environment).
    switch: bool = False
    #: Passed unchanged to `_core.Server`'s config under the same key.
    core: bool = False

    @property
    def flag(self) -> str:
        return self.metavar if self.positional else "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()

    @property
    def flags(self) -> List[str]:
        return [self.flag] + ([self.short] if self.short else []) + list(self.aliases)


OPTIONS: Tuple[Option, ...] = (
    Option(
        "app", parse_app, "sluicegate.demo:app",
        "The WSGI application to serve, as MODULE:APP; MODULE alone means MODULE:application "
        "(as with gunicorn: myproject.wsgi). APP may be a dotted attribute "
        "(pkg.mod:obj.app) or a factory call with literal arguments (mod:create_app() or "
        "mod:create_app('prod', debug=False)). The current directory is searched first. "
        "Without it, sluicegate serves its built-in demo app.",
        "MODULE:APP", Union[str, Callable[..., Any]], positional=True,
    ),
    Option(
        "bind", parse_bind_value, ["127.0.0.1:8000"],
        "Address to listen on: HOST:PORT, :PORT (every IPv4 interface, 0.0.0.0, as with "
        "gunicorn), [IPV6]:PORT or unix:PATH. Port 0 picks a free port "
        "(the 'Listening at:' log line shows it). Give it several times to listen on several "
        "addresses.",
        "ADDRESS", Tuple[BindAddress, ...], short="-b", repeatable=True,
    ),
    Option(
        "config", parse_path_or_off, None,
        "Read options from this TOML file: keys are the options' names as in serve() "
        "(threads = \"4:64\", bind = [\"0.0.0.0:8000\"], app = \"pkg.wsgi:application\"). "
        "A FILE ending in .py is a gunicorn configuration file: its settings that sluicegate "
        "has are used (bind, workers, threads, timeout, keepalive, accesslog, loglevel, ...; "
        "docs/operations.md), each other one is named in a warning. "
        "The command line and the environment override it. Re-read on HUP (with --workers).",
        "FILE", Optional[str], short="-c",
    ),
    Option(
        "check_config", parse_bool, "false",
        "Validate every option, check that --user and --group exist and that the directories "
        "of --access-log, --error-log and --pid do, and import the app, then exit: 0 if all "
        "is well, else 2 with one line saying what is wrong.",
        "", bool, switch=True,
    ),
    Option(
        "print_config", parse_bool, "false",
        "Print the resolved options as TOML, each with where its value came from (command line, "
        "environment, config file or default), then exit.",
        "", bool, switch=True,
    ),
    Option(
        "workers", parse_workers, None,
        "Run a master process and this many worker processes, each with its own event loop and "
        "app threads, all serving the same sockets (auto: one per CPU available). The master "
        "replaces a worker that dies and handles reloads (HUP) and the other operations "
        "signals (docs/operations.md). Unset: one process serves, without a master.",
        "N", Optional[int], short="-w",
    ),
    Option(
        "worker_class", parse_worker_class, "gthread",
        "gunicorn's worker type, accepted so that its command lines work: sync and gthread "
        "name what every sluicegate process does (an event loop, and an elastic pool of "
        "threads for the app: --threads); any other (gevent, eventlet, uvicorn's) is refused.",
        "CLASS", str, short="-k",
    ),
    Option(
        "preload", parse_bool, "false",
        "With --workers: import the app in the master before forking the workers (memory "
        "shared copy-on-write, an import error found before any worker starts). A reload (HUP) "
        "then restarts the workers with the master's copy of the app.",
        "", bool, switch=True,
    ),
    Option(
        "max_requests", parse_count_or_zero, "0",
        "With --workers: replace a worker after it has served this many requests (plus a random "
        "0..--max-requests-jitter); its replacement is ready before it stops accepting, and it "
        "finishes its in-flight requests. Meanwhile, while another worker serves, it ends "
        "keep-alive after each answer and leaves new connections to the others. 0: never.",
        "N", int,
    ),
    Option(
        "max_requests_jitter", parse_count_or_zero, "0",
        "A random 0..N added to --max-requests per worker, so workers are not all replaced at "
        "once.",
        "N", int,
    ),
    Option(
        "reload", parse_bool, "false",
        "For development: watch the app's Python files (under the working directory) and "
        "replace the workers when one changes; code that does not import leaves the old "
        "workers serving. Runs a master with one worker unless --workers says more. Needs "
        "the watchfiles package (pip install 'sluicegate[reload]').",
        "", bool, switch=True,
    ),
    Option(
        "reload_extra", parse_path, [],
        "With --reload: also replace the workers when this file (or anything under this "
        "directory) changes: templates, configuration. Give it several times for several.",
        "PATH", Tuple[str, ...], repeatable=True, aliases=("--reload-extra-file",),
    ),
    Option(
        "warmup", parse_warmup, "",
        "Before a worker (or a single server) says it is ready, call the app once with GET of "
        "this path, in the process (no socket, from 127.0.0.1; http://HOST/PATH sets the Host "
        "header): an answer of 500 or more, or an exception, fails the boot, so a reload "
        "(HUP, --reload) whose code errors on this path is abandoned and the old workers keep "
        "serving. Name a path that touches what a deploy can break. Empty: off.",
        "PATH", str,
    ),
    Option(
        "django_checks", parse_bool, "false",
        "For a Django app: run Django's system checks (manage.py check) before a worker says "
        "ready; an error fails its boot (a reload is abandoned). Without it a Django app's "
        "URLconf, and every view module it imports, is still imported before ready.",
        "", bool, switch=True,
    ),
    Option(
        "max_rss", parse_size, "0",
        "With --workers: replace a worker whose resident memory passes this size (e.g. 512M), "
        "the same way as --max-requests: its replacement is ready before it stops, and it "
        "finishes its in-flight requests. The master looks every 0.5 s. 0: never.",
        "BYTES", int,
    ),
    Option(
        "user", parse_path, None,
        "Run as this user (name or uid) after binding the sockets and before importing the app; "
        "its primary group too unless --group is given. Needs root at start.",
        "USER", Optional[str], short="-u",
    ),
    Option(
        "group", parse_path, None,
        "Run as this group (name or gid), dropped to with --user.",
        "GROUP", Optional[str], short="-g",
    ),
    Option(
        "umask", _parse_umask, None,
        "Set the process umask first (octal, e.g. 027): the permissions of unix socket files and "
        "of files the app creates. Unset: inherited.",
        "MASK", Optional[int], short="-m",
    ),
    Option(
        "pid", parse_path_or_off, None,
        "Write the server's (the master's) process id to this file at start; removed at exit.",
        "FILE", Optional[str], short="-p",
    ),
    Option(
        "threads", parse_threads, "auto",
        "Bounds of the elastic pool of threads that run the app: MIN:MAX, or N for 1:N. Threads "
        "beyond MIN are started under load and stop when idle. auto: 1:1024, except 1:48 for an "
        "app that holds a database connection per thread (Django with a database other than "
        "SQLite and no connection pool), so that a burst stays within PostgreSQL's default "
        "connection limit (see docs/deploying.md).",
        "MIN:MAX", Optional[Tuple[int, int]],
    ),
    Option(
        "max_runnable", parse_count_or_zero, "1",
        "Most app calls on the pool that may run Python at once, for short requests and again "
        "for long ones (by what their path took recently); further requests wait in order, "
        "short ones first, and a call seen blocked (sleeping, waiting for a database) stops "
        "counting, so blocking apps still get up to MAX threads. Keeps a burst of requests from "
        "becoming a convoy of threads fighting for the GIL (see docs/architecture.md). 0: no "
        "limit.",
        "N", int, core=True,
    ),
    Option(
        "scheduler", parse_scheduler, "adaptive",
        "Where app calls run. adaptive: inline on the event loop's thread while calls return "
        "quickly, on the pool as soon as one blocks (see docs/architecture.md). inline: always "
        "inline (a blocked call is still taken over). pool: always on the pool (for apps known "
        "to block on every request).",
        "MODE", str, core=True,
    ),
    Option(
        "backlog", parse_count, "2048",
        "Most connections waiting to be accepted (listen(2) backlog; the kernel may cap it at "
        "net.core.somaxconn).",
        "N", int,
    ),
    Option(
        "header_timeout", parse_seconds, "10",
        "Seconds a client has to send a whole request head; slower gets 408 Request Timeout "
        "(protects against slowloris).",
        "SECONDS", float, core=True,
    ),
    Option(
        "keepalive_timeout", parse_seconds, "75",
        "Seconds an idle keep-alive connection is kept open waiting for its next request.",
        "SECONDS", float, core=True, aliases=("--keep-alive",),
    ),
    Option(
        "read_timeout", parse_seconds, "30",
        "Seconds without progress while the app reads a request body; the app's read then "
        "fails and the connection is closed.",
        "SECONDS", float, core=True,
    ),
    Option(
        "min_body_rate", parse_size, "240",
        "Bytes per second a request body must average, counted from its start, once the "
        "first 5 seconds have passed; a slower client (one byte a second still makes progress) "
        "is cut: the app's read raises TimeoutError and the client gets 408 if nothing was sent. "
        "0: no minimum.",
        "BYTES", int, core=True,
    ),
    Option(
        "body_timeout", parse_seconds_or_off, "0",
        "Seconds a whole request body may take from its start, however fast it comes; past it, "
        "as for --min-body-rate. 0: no limit.",
        "SECONDS", float, core=True,
    ),
    Option(
        "write_timeout", parse_seconds, "30",
        "Seconds without progress while sending a response; the connection is then closed.",
        "SECONDS", float, core=True,
    ),
    Option(
        "timeout", parse_seconds_or_off, "0",
        "Seconds an app call may run. Past it the client gets 504 Gateway Timeout (or, when "
        "the response had begun, the connection is closed), and the request line and the "
        "Python stack of the thread running the call are logged once. The call keeps its "
        "thread (Python cannot stop one): see --max-stuck. 0: off.",
        "SECONDS", float, core=True, short="-t",
    ),
    Option(
        "max_stuck", parse_count_or_zero, "4",
        "With --workers and --timeout: when this many app calls of one worker are past the "
        "timeout and still running, the worker is replaced the way --max-requests replaces "
        "one (its replacement is ready first, its other requests finish). 0: never.",
        "N", int,
    ),
    Option(
        "graceful_timeout", parse_seconds, "30",
        "Seconds in-flight requests get to finish after SIGTERM or the first SIGINT.",
        "SECONDS", float, core=True,
    ),
    Option(
        "limit_request_line", parse_positive_size, "8k",
        "Longest request line (method, target, version) in bytes; longer gets 414 URI Too Long.",
        "BYTES", int, core=True,
    ),
    Option(
        "limit_header_bytes", parse_positive_size, "64k",
        "Largest request head (request line and header fields) in bytes; larger gets 431 "
        "Request Header Fields Too Large.",
        "BYTES", int, core=True,
    ),
    Option(
        "limit_headers", parse_count, "100",
        "Most header fields in one request; more gets 431 Request Header Fields Too Large.",
        "N", int, core=True, aliases=("--limit-request-fields",),
    ),
    Option(
        "limit_body", parse_size, "1G",
        "Largest request body in bytes; larger gets 413 Content Too Large.",
        "BYTES", int, core=True,
    ),
    Option(
        "limit_response_headers", parse_size, "64k",
        "Largest header section the app may give start_response (names and values, bytes); "
        "larger is refused like any invalid header: the app gets a ValueError naming the "
        "header, the client a 500, the error log the reason.",
        "BYTES", int, core=True,
    ),
    Option(
        "max_drain", parse_size, "64k",
        "A request body the app did not read is drained up to this many bytes so the "
        "connection can be kept alive; a larger one closes the connection.",
        "BYTES", int, core=True,
    ),
    Option(
        "http2", parse_http2, "on",
        "HTTP/2 (docs/http-support.md). on: TLS listeners offer h2 beside http/1.1 (ALPN) and "
        "plain listeners accept h2c with prior knowledge (a connection that opens with the "
        "HTTP/2 preface); tls: only over TLS; off: HTTP/1.1 only (a preface gets 505).",
        "MODE", str, core=True,
    ),
    Option(
        "http2_max_streams", parse_count, "100",
        "Most concurrent streams one HTTP/2 connection may open "
        "(SETTINGS_MAX_CONCURRENT_STREAMS); each is one app call.",
        "N", int, core=True,
    ),
    Option(
        "static", parse_static, [],
        "Serve the files under DIRECTORY at URL_PREFIX (/static, or /static/ as Django's "
        "STATIC_URL writes it) from the Rust core, without calling the app: GET and HEAD with sendfile, Range, conditional requests, precompressed .br/.gz "
        "siblings. Settings after ';': max-age=N and immutable (Cache-Control), index=NAME|none "
        "(default index.html), dotfiles (serve names starting with '.'), follow-symlinks (allow "
        "symlinks that leave the directory). Give it several times for several mounts.",
        "URL_PREFIX=DIRECTORY[;SETTING...]", Tuple[StaticMount, ...], repeatable=True,
    ),
    Option(
        "static_fallthrough", parse_bool, "false",
        "When no static file matches a request under a --static prefix, pass the request to the "
        "app instead of answering 404.",
        "", bool, switch=True, core=True,
    ),
    Option(
        "write_high_water", parse_positive_size, "1M",
        "Backpressure for streaming responses: when more than this many bytes are queued for a "
        "client that reads slowly, the app's thread waits until half of them are sent.",
        "BYTES", int, core=True,
    ),
    Option(
        "root_path", parse_root_path, "",
        "The path the app is mounted at, given to it as SCRIPT_NAME: empty, or like /app (a "
        "leading '/' and no trailing '/').",
        "PATH", str, core=True,
    ),
    Option(
        "forwarded_allow_ips", parse_forwarded_allow_ips, "127.0.0.1,::1,unix",
        "Peers (addresses, CIDR networks, 'unix' for unix-socket peers, '*' for all) whose "
        "forwarding headers are believed: the client's address, scheme, host and port they "
        "give become REMOTE_ADDR, REMOTE_PORT, wsgi.url_scheme, HTTP_HOST, SERVER_NAME, "
        "SERVER_PORT and the access log's client. From other peers the headers reach the app "
        "unchanged and change nothing. Also who may send a PROXY protocol header. Empty: "
        "nobody.",
        "LIST", str, core=True,
    ),
    Option(
        "proxy_protocol", parse_bool, "false",
        "Every HTTP listener expects a PROXY protocol header (v1 or v2, HAProxy's send-proxy "
        "and send-proxy-v2) before the first request, from peers in --forwarded-allow-ips "
        "only; its client address becomes the connection's. One listener only: bind it as "
        "proxy:HOST:PORT. A missing or malformed header closes the connection.",
        "", bool, switch=True,
    ),
    Option(
        "certfile", parse_path, None,
        "Serve HTTPS: the certificate chain (PEM: the server certificate first, then its "
        "intermediates). Every listener then speaks TLS, as with gunicorn, except one bound as "
        "http:HOST:PORT (a plain health port); without it, https:HOST:PORT makes one listener "
        "TLS. The files are read and checked (key matches, chain order, expiry) before binding "
        "and before --user. See docs/tls.md.",
        "FILE", Optional[str], core=True,
    ),
    Option(
        "keyfile", parse_path, None,
        "The private key of --certfile (PEM, unencrypted: PKCS#8, SEC1 or PKCS#1). Default: "
        "the key is in the --certfile file.",
        "FILE", Optional[str], core=True,
    ),
    Option(
        "ca_certs", parse_path, None,
        "The CAs (PEM) whose client certificates are accepted, for --cert-reqs optional or "
        "required (mutual TLS).",
        "FILE", Optional[str], core=True,
    ),
    Option(
        "cert_reqs", parse_cert_reqs, "none",
        "Client certificates: none (not asked for), optional (asked for; a valid one sets "
        "SSL_CLIENT_VERIFY=SUCCESS), required (refused without one). gunicorn's 0, 1, 2 too.",
        "MODE", str, core=True,
    ),
    Option(
        "tls_min_version", parse_tls_min_version, "1.2",
        "The oldest TLS version served: 1.2 or 1.3 (nothing older exists here).",
        "VERSION", str, core=True,
    ),
    Option(
        "forwarded_headers", parse_forwarded_headers, "x-forwarded",
        "Which forwarding headers are read from trusted peers: 'x-forwarded' (X-Forwarded-For, "
        "-Proto, -Ssl, -Host, -Port) or 'forwarded' (RFC 7239). Only one family: a proxy that "
        "sets one passes the other through from the client, who could then spoof it.",
        "FAMILY", str, core=True,
    ),
    Option(
        "health_path", parse_health_path, "",
        "A path the server answers itself, without calling the app: GET or HEAD of it gets "
        "200 OK, and 503 from the moment a stop begins (see --drain-delay). Answered by the "
        "event loop within milliseconds even while every app thread is busy, so a load "
        "balancer's health check does not queue behind the app. Empty: off.",
        "PATH", str, core=True,
    ),
    Option(
        "drain_delay", parse_seconds_or_off, "0",
        "Seconds a graceful stop (SIGTERM, a reload's old workers) keeps accepting and serving "
        "as before while --health-path answers 503, so that a load balancer takes the server "
        "out before its listener closes; --graceful-timeout counts from the end of it. 0: off.",
        "SECONDS", float, core=True,
    ),
    Option(
        "access_log", parse_access_log, None,
        "Write one line per request to this file; '-' means standard output, 'off' writes "
        "none (a file named off is ./off).",
        "PATH", Optional[str], aliases=("--access-logfile",),
    ),
    Option(
        "access_log_format", parse_access_log_format, "combined",
        "The access log's lines: 'combined' (gunicorn's default), 'common', 'json' (one object "
        "per line, every field below, valid JSON for any byte) or a template of {fields}: "
        "client, time, method, target, path, query, protocol, status, bytes, referer, "
        "user_agent, request_id (X-Request-Id), queue_us (parsed to app called), app_us (app "
        "called to iterable closed), send_us (first byte to last byte taken by the kernel), "
        "total_us, end (ok, client_gone, timeout, error), pid, scheduler (inline, pool, loop).",
        "FORMAT", str, core=True,
    ),
    Option(
        "server_timing", parse_bool, "false",
        "Add a Server-Timing header to every app response: queue;dur= and app;dur= (the app's "
        "time until its head was sent), in milliseconds.",
        "", bool, switch=True, core=True,
    ),
    Option(
        "metrics_bind", parse_metrics_bind, "",
        "Serve Prometheus metrics (GET /metrics) and the app calls in flight with their Python "
        "stacks (GET /debug/requests, with --debug-requests only) on this address of their "
        "own, HOST:PORT or unix:PATH, answered by the Rust core's event loop as a listener of "
        "its own. With --workers the master answers there with the sum over its workers (one "
        "scrape target; counters never go back when a worker is replaced), and worker N (its "
        "slot, from 1) listens on PORT+N (or PATH.N) with its own series labelled "
        "worker=\"N\". Empty: off.",
        "ADDRESS", str,
    ),
    Option(
        "debug_requests", parse_bool, "false",
        "Serve GET /debug/requests on --metrics-bind: every app call in flight, its request "
        "line (query strings shown as ?…) and its Python stack, which shows the app's source "
        "lines. Off by default: whoever reaches the metrics port can read it.",
        "", bool, switch=True, core=True,
    ),
    Option(
        "control_socket", parse_control_socket, "",
        "The control socket's path (a unix socket, mode 0600), which `sluicegate ctl` talks to: "
        "status, in-flight requests, reload, worker counts, log reopening, stop "
        "(docs/operations.md). Empty: $XDG_RUNTIME_DIR/sluicegate-PID.ctl, or "
        "/tmp/sluicegate-PID.ctl without it, PID being the master's (or the single process's).",
        "PATH", str,
    ),
    Option(
        "no_control_socket", parse_bool, "false",
        "Run no control socket (`sluicegate ctl` then cannot reach this server).",
        "", bool, switch=True, core=True,
    ),
    Option(
        "log_level", parse_log_level, "info",
        "Level of the error log (standard error, or --error-log): debug, info, warning, error or critical. "
        "debug also prints the traceback behind an app loading error.",
        "LEVEL", str, core=True,
    ),
    Option(
        "error_log", parse_error_log, "-",
        "Write the error log (start and stop, workers, app errors and tracebacks) to this file, "
        "appended, instead of standard error ('-'). The sluicegate command opens it before it "
        "starts (relative to the directory it starts in) and makes it the process's standard "
        "error, so the workers and the Rust core write there too, and so do errors after that "
        "point. Set once at start (not on HUP); USR1 opens it again by its path in the master "
        "and every worker (logrotate). serve() leaves standard error alone.",
        "PATH", Optional[str], aliases=("--error-logfile", "--log-file"),
    ),
    Option(
        "capture_output", parse_bool, "false",
        "Send the app's standard output (print()) to the error log file too: with --error-log "
        "FILE, descriptor 1 becomes FILE as well, as gunicorn's --capture-output does (and as "
        "there, --access-log - then writes to FILE). Without --error-log FILE it changes "
        "nothing (the app's standard error already is the error log). Set once at start.",
        "", bool, switch=True,
    ),
    Option(
        "log_config_dict", parse_log_config_dict, None,
        "Configure Python logging with this dict (JSON on the command line and in the "
        "environment, a table in the TOML file), given to logging.config.dictConfig after the "
        "error log is set up: gunicorn's --log-config-dict (logconfig_dict). The server's "
        "loggers are 'sluicegate' (start, stop, workers) and 'sluicegate.error' (app errors "
        "and tracebacks); a config that names 'sluicegate' takes its handlers over. Set once "
        "at start.",
        "JSON", Optional[Mapping[str, Any]],
    ),
    Option(
        "log_config", parse_path, None,
        "Configure Python logging from this ini file, given to logging.config.fileConfig "
        "after the error log is set up: gunicorn's --log-config (logconfig). Same loggers as "
        "--log-config-dict; both may be given (the file first). Set once at start.",
        "FILE", Optional[str],
    ),
    Option(
        "hooks", parse_hooks, None,
        "gunicorn's server hooks: a module (MODULE, imported after --chdir, or a FILE.py) "
        "whose functions with gunicorn's hook names (on_starting, post_fork, "
        "post_worker_init, pre_request, ...) run as gunicorn runs them, with its arguments "
        "(docs/operations.md, \"Hooks\"). A "
        "gunicorn.conf.py given to --config sets this from its own functions. Set once at "
        "start.",
        "MODULE", Optional[Hooks],
    ),
    Option(
        "server_header", parse_server_header, "sluicegate",
        "Value of the Server response header (ASCII, at most 256 bytes); empty sends none.",
        "TEXT", str, core=True,
    ),
    Option(
        "chdir", parse_chdir, None,
        "Change to this directory before loading the app; relative --access-log and unix: "
        "paths are then relative to it too.",
        "DIR", Optional[str],
    ),
    Option(
        "pythonpath", parse_pythonpath, None,
        "Directories put first on sys.path (comma-separated, relative to --chdir) before the "
        "hooks and the app: gunicorn's --pythonpath (docs/operations.md).",
        "DIRS", Optional[str],
    ),
    Option(
        "env", parse_env_item, [],
        "Set this environment variable for the app, KEY=VALUE (e.g. "
        "DJANGO_SETTINGS_MODULE=mysite.settings.prod), as gunicorn's -e does: the sluicegate "
        "command sets it before loading the app, in the master and so in every worker; "
        "serve() leaves os.environ alone. Set once at start. Give it several times for several.",
        "KEY=VALUE", Tuple[str, ...], short="-e", repeatable=True,
    ),
)

BY_NAME: Dict[str, Option] = {o.name: o for o in OPTIONS}

@dataclasses.dataclass(frozen=True)
class Config:
    """The validated options, one field per entry of OPTIONS, in its order and with its type
    (checked when this module is imported, and by a contract test): written out so that type
    checkers see every field, while OPTIONS stays the one place an option is declared."""

    app: Union[str, Callable[..., Any]]
    bind: Tuple[BindAddress, ...]
    config: Optional[str]
    check_config: bool
    print_config: bool
    workers: Optional[int]
    worker_class: str
    preload: bool
    max_requests: int
    max_requests_jitter: int
    reload: bool
    reload_extra: Tuple[str, ...]
    warmup: str
    django_checks: bool
    max_rss: int
    user: Optional[str]
    group: Optional[str]
    umask: Optional[int]
    pid: Optional[str]
    threads: Optional[Tuple[int, int]]
    max_runnable: int
    scheduler: str
    backlog: int
    header_timeout: float
    keepalive_timeout: float
    read_timeout: float
    min_body_rate: int
    body_timeout: float
    write_timeout: float
    timeout: float
    max_stuck: int
    graceful_timeout: float
    limit_request_line: int
    limit_header_bytes: int
    limit_headers: int
    limit_body: int
    limit_response_headers: int
    max_drain: int
    http2: str
    http2_max_streams: int
    static: Tuple[StaticMount, ...]
    static_fallthrough: bool
    write_high_water: int
    root_path: str
    forwarded_allow_ips: str
    proxy_protocol: bool
    certfile: Optional[str]
    keyfile: Optional[str]
    ca_certs: Optional[str]
    cert_reqs: str
    tls_min_version: str
    forwarded_headers: str
    health_path: str
    drain_delay: float
    access_log: Optional[str]
    access_log_format: str
    server_timing: bool
    metrics_bind: str
    debug_requests: bool
    control_socket: str
    no_control_socket: bool
    log_level: str
    error_log: Optional[str]
    capture_output: bool
    log_config_dict: Optional[Mapping[str, Any]]
    log_config: Optional[str]
    hooks: Optional[Hooks]
    server_header: str
    chdir: Optional[str]
    pythonpath: Optional[str]
    env: Tuple[str, ...]


def config_matches_options() -> Optional[str]:
    """None when Config's fields are exactly OPTIONS (names, order, types), else what differs."""
    hints = typing.get_type_hints(Config)
    fields = [(f.name, hints[f.name]) for f in dataclasses.fields(Config)]
    table = [(o.name, o.type) for o in OPTIONS]
    if fields == table:
        return None
    return (f"Config fields {fields} differ from OPTIONS {table}: paste the output of "
            "`python -m sluicegate.options --config-class` into class Config")


def config_class_fields() -> str:
    """Config's field lines, as they must be written (for --config-class)."""
    def spell(t: Any) -> str:
        text = t.__name__ if isinstance(t, type) else repr(t)
        return re.sub(r"\b(?:[a-z_]+\.)+([A-Za-z_]\w*)", r"\1", text)
    return "".join(f"    {o.name}: {spell(o.type)}\n" for o in OPTIONS)


_mismatch = config_matches_options()
if _mismatch:  # a programming error: the table and the class were edited apart
    raise AssertionError(_mismatch)


# --- Phase 1: raw values, with where each came from.


@dataclasses.dataclass(frozen=True)
class Raw:
    """A value as written, and where: '--threads', 'SLUICEGATE_THREADS', 'threads=' (a serve()
    keyword) or 'default'. The source is part of every error message."""

    value: Any
    source: str


def raw_values(
    given: Mapping[str, Raw] = {},
    env: Optional[Mapping[str, str]] = None,
) -> Dict[str, Raw]:
    """Per option: the given value (command line or serve() keyword), else the environment,
    else the --config file (named on the command line or in the environment), else the
    default."""
    env = os.environ if env is None else env
    path = given["config"].value if "config" in given else env.get(BY_NAME["config"].env)
    path = parse_path_or_off(path)
    from_file: Dict[str, Any] = {}
    if path and str(path).endswith(".py"):
        from . import gunicorn_config
        from_file = gunicorn_config.load(str(path), BY_NAME)
    elif path:
        from . import config_file
        from_file = config_file.load(str(path), BY_NAME)
    raw: Dict[str, Raw] = {}
    for o in OPTIONS:
        if o.name in given:
            raw[o.name] = given[o.name]
        elif o.env in env:
            text = env[o.env]
            raw[o.name] = Raw(text.split(",") if o.repeatable else text, o.env)
        elif o.name in from_file:
            value, where = from_file[o.name]
            if o.repeatable and not isinstance(value, list):
                value = [value]
            raw[o.name] = Raw(value, where)
        else:
            raw[o.name] = Raw(o.default, "default")
    return raw


def describe(raw: Mapping[str, Raw]) -> str:
    """--print-config: every option as TOML, with where its value came from."""
    from . import config_file
    lines = []
    for o in OPTIONS:
        if o.name in ("config", "check_config", "print_config"):
            continue
        r = raw[o.name]
        source = "default" if r.source == "default" else r.source
        value = r.value
        if value is None or (isinstance(value, list) and not value and not o.default):
            lines.append(f"# {o.name}: off  ({source})")
            continue
        if isinstance(value, bool) or o.switch:
            try:
                value = parse_bool(value)
            except ValueError:
                pass
        if callable(value):
            value = getattr(value, "__qualname__", repr(value))
        if isinstance(value, Hooks) and not value.is_module:  # functions: not TOML
            names = ", ".join(n for n, _ in value.functions)
            lines.append(f"# {o.name}: the functions {names}  # {source}")
            continue
        if isinstance(value, Mapping):  # log_config_dict: as the JSON its option takes
            import json
            value = json.dumps(value)
        lines.append(f"{o.name} = {config_file.render(value)}  # {source}")
    return "\n".join(lines)


def from_keywords(keywords: Mapping[str, Any], caller: str = "serve()") -> Dict[str, Raw]:
    """serve()'s keyword arguments as raw values; an unknown name is a TypeError, as for any
    Python function."""
    raw: Dict[str, Raw] = {}
    for name, value in keywords.items():
        if name not in BY_NAME:
            close = difflib.get_close_matches(name, BY_NAME, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{caller} got an unexpected keyword argument {name!r}{hint}")
        o = BY_NAME[name]
        if o.repeatable and (isinstance(value, (str, bytes)) or not isinstance(value, Sequence)):
            value = [value]
        raw[name] = Raw(value, f"{name}=")
    return raw


# --- Phase 2: validation.


def validate(raw: Mapping[str, Raw]) -> Config:
    """Parse every raw value with its option's parser into a frozen Config; raise OptionError
    naming the first bad one."""
    values: Dict[str, Any] = {}
    for o in OPTIONS:
        r = raw[o.name]
        if o.repeatable:
            items = list(r.value)
            if not items and o.default:
                raise OptionError(f"{_where(o, r)}: give at least one value")
            parsed = tuple(_parse_one(o, r, item) for item in items)
            for i, p in enumerate(parsed):
                # Port 0 twice is two different free ports, not a duplicate.
                if p in parsed[:i] and getattr(p, "port", None) != 0:
                    raise OptionError(f"{_where(o, r, items[i])}: given twice")
            values[o.name] = parsed
        else:
            values[o.name] = _parse_one(o, r, r.value)
    return Config(**values)


def _parse_one(o: Option, r: Raw, value: object) -> Any:
    try:
        return o.parse(value)
    except ValueError as e:
        raise OptionError(f"{_where(o, r, value)}: {e}") from None


# How much of a bad value an error line quotes.
_MAX_SHOWN = 80


def _where(o: Option, r: Raw, value: object = None) -> str:
    """How the bad value is named in an error: `--threads '5:2'`, `SLUICEGATE_THREADS='5:2'`,
    `threads=(5, 2)`."""
    shown = repr(value if value is not None else r.value)
    if len(shown) > _MAX_SHOWN:
        # A pasted file as a value: the error stays one readable line.
        shown = shown[:_MAX_SHOWN] + f"... ({len(shown)} characters)"
    if r.source == "default":
        return f"default of {o.flag} {shown}"
    if r.source.startswith(ENV_PREFIX) or r.source.endswith("="):
        name = r.source if r.source.endswith("=") else r.source + "="
        return f"{name}{shown}"
    return f"{r.source} {shown}"


def resolve(keywords: Mapping[str, Any] = {}, env: Optional[Mapping[str, str]] = None) -> Config:
    """Both phases for serve(): keywords > environment > defaults -> Config."""
    return validate(raw_values(from_keywords(keywords), env))


# --- The command line.


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (`sluicegate: error: ...`, exit status 2)
    instead of the usage text followed by the error."""

    def error(self, message: str) -> NoReturn:
        raise OptionError(f"{message} (see sluicegate --help)")


def build_parser(version: str = "") -> argparse.ArgumentParser:
    parser = _Parser(
        prog="sluicegate",
        usage="sluicegate [OPTIONS] [MODULE:APP]",
        description="Serve a WSGI application over HTTP with sluicegate's Rust core.",
        epilog=(
            f"Every option can also be set with an environment variable {ENV_PREFIX}<NAME> "
            f"(e.g. {ENV_PREFIX}THREADS=4:64; several addresses comma-separated in "
            f"{ENV_PREFIX}BIND). The command line wins over the environment. "
            "Byte sizes take the suffixes k, M and G (powers of 1024). "
            "Signals: SIGTERM or SIGINT shut down gracefully; a second SIGINT stops at once."
        ),
        allow_abbrev=False,
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=32),
    )
    for o in OPTIONS:
        help_text = f"{o.help} [default: {_show_default(o)}; env: {o.env}]".replace("%", "%%")
        if o.positional:
            parser.add_argument(
                o.name, nargs="?", metavar=o.metavar, default=argparse.SUPPRESS, help=help_text
            )
        else:
            if o.switch:
                parser.add_argument(
                    *([o.short] if o.short else []), o.flag, *o.aliases,
                    dest=o.name,
                    action="store_const",
                    const="true",
                    default=argparse.SUPPRESS,
                    help=help_text,
                )
                continue
            parser.add_argument(
                *([o.short] if o.short else []), o.flag, *o.aliases,
                dest=o.name,
                metavar=o.metavar,
                action="append" if o.repeatable else "store",
                default=argparse.SUPPRESS,
                help=help_text,
            )
    parser.add_argument(
        "--version", action="version", version=f"sluicegate {version}",
        help="Print sluicegate's version and exit.",
    )
    return parser


def from_command_line(argv: Sequence[str], version: str = "") -> Dict[str, Raw]:
    """Phase 1 for the command line: only the options given, as written. An unknown option is
    named on its own, with the closest known flag (argparse alone would name it together with
    the arguments after it, the app path among them)."""
    parser = build_parser(version)
    namespace, extra = parser.parse_known_args(list(argv))
    if extra:
        raise OptionError(unknown_argument(extra))
    return {
        name: Raw(value, BY_NAME[name].flag) for name, value in vars(namespace).items()
    }


def all_flags() -> List[str]:
    return [f for o in OPTIONS if not o.positional for f in o.flags] + ["--version", "--help"]


def unknown_argument(extra: Sequence[str]) -> str:
    """The error for what argparse could not place: the first unknown option, with a "did you
    mean" from the table, or else the second app path."""
    flags = all_flags()
    for arg in extra:
        if arg.startswith("-") and len(arg) > 1 and not arg[1:].replace(".", "").isdigit():
            name = arg.split("=", 1)[0]
            from .gunicorn_config import IGNORED
            setting = name.lstrip("-").replace("-", "_")
            if name.startswith("--") and setting in IGNORED:
                return f"unknown option {name}; gunicorn's {setting}: {IGNORED[setting]}"
            # Compared without the dashes, which every flag shares.
            bare = {f.lstrip("-"): f for f in flags}
            close = difflib.get_close_matches(name.lstrip("-"), bare, n=1, cutoff=0.6)
            hint = f"did you mean {bare[close[0]]}?" if close else "see sluicegate --help"
            return f"unknown option {name} ({hint})"
    return (f"unexpected argument {extra[0]!r}: give one MODULE:APP (see sluicegate --help)")


def _show_default(o: Option) -> str:
    if o.default is None:
        return "off"
    if isinstance(o.default, list):
        return ", ".join(o.default)
    return repr(o.default) if o.default == "" else str(o.default)


# --- docs/options.md


def markdown() -> str:
    """The text of docs/options.md, generated from OPTIONS."""
    lines = [
        "# sluicegate options",
        "",
        "<!-- Generated from python/sluicegate/options.py by",
        "     `python -m sluicegate.options --markdown > docs/options.md`; do not edit by hand. -->",
        "",
        "Usage: `sluicegate [OPTIONS] [MODULE:APP]`, `python -m sluicegate [OPTIONS] [MODULE:APP]`,",
        "or `sluicegate.serve(app, **options)` from Python.",
        "",
        "Each option is set, from strongest to weakest, on the command line (or as a keyword of",
        f"`serve()`), in its environment variable `{ENV_PREFIX}<NAME>`, in the `--config` TOML file",
        "(keys are the `serve()` names), or by its default. Byte",
        "sizes take the suffixes `k`, `M` and `G` (powers of 1024: `64k` = 65536). A bad value",
        "stops sluicegate with one line naming the option (exit status 2).",
        "",
        "| Option | Environment variable | `serve()` keyword | Default |",
        "| --- | --- | --- | --- |",
    ]
    for o in OPTIONS:
        flag = ", ".join(f"`{f}`" for f in o.flags) + ("" if o.positional or not o.metavar else f" {o.metavar}")
        lines.append(f"| {flag} | `{o.env}` | `{o.name}` | {_md_default(o)} |")
    lines.append("| `--version` | | | |")
    lines.append("")
    for o in OPTIONS:
        title = ", ".join(f"`{f}`" for f in o.flags)
        lines += [f"## {title}" + ("" if o.positional or not o.metavar else f" {o.metavar}"), "", o.help, ""]
        lines.append(f"- Default: {_md_default(o)}")
        env_note = " (comma-separated list)" if o.repeatable else ""
        lines.append(f"- Environment: `{o.env}`{env_note}")
        if o.repeatable:
            lines.append(f"- `serve()`: `{o.name}=` a string or a list of strings")
        else:
            lines.append(f"- `serve()`: `{o.name}=`")
        if o.repeatable:
            lines.append("- Repeatable")
        lines.append("")
    lines += ["## `--version`", "", "Print sluicegate's version and exit.", ""]
    return "\n".join(lines)


def _md_default(o: Option) -> str:
    if o.default is None:
        return "off"
    if o.default == "":
        return "empty"
    return f"`{_show_default(o)}`"


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--config-class"]:
        sys.stdout.write(config_class_fields())
        return 0
    if args != ["--markdown"]:
        print("usage: python -m sluicegate.options --markdown > docs/options.md | --config-class",
              file=sys.stderr)
        return 2
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
