"""The parsers of the options' values (options.py declares which option takes which): each
takes the value as written (a str from the command line or the environment, or a Python value
given to serve()) and returns the typed value, or raises ValueError with a one-line reason that
does not repeat the value (resolution.validate adds the option and the value). The options
that take one of a few names take those of allowed_values.txt (`ALLOWED`).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from .allowed_values import ALLOWED, spelled
from .asgi import refuse_asgi_worker_class
from .gunicorn_config import THREADED_WORKER_CLASSES
from .listeners import BindAddress, parse_bind
from .log_options import parse_gunicorn_log_format

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")

# Upper bounds that keep a value inside the Rust core's integer and Duration types (a u64 byte
# count; Duration::from_secs_f64 panics on overflow). Far beyond any sensible setting.
_MAX_BYTES = 2**63 - 1
_MAX_COUNT = 2**31 - 1
_MAX_SECONDS = 1e9


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
    if text.startswith("tcp://"):  # gunicorn's spelling of a plain HOST:PORT
        text = text[len("tcp://"):]
    if text.startswith("fd://"):
        raise ValueError("gunicorn's fd://N (a socket inherited as descriptor N) is not taken: "
                         "pass sockets by systemd socket activation (LISTEN_FDS), which "
                         "sluicegate uses instead of --bind")
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
    CERT_REQUIRED=2: the names' places in allowed_values.txt) too, so a gunicorn command line
    works unchanged."""
    names = ALLOWED["cert_reqs"]
    if isinstance(value, int) and not isinstance(value, bool):  # ssl.CERT_REQUIRED, 2
        value = str(int(value))
    text = _str(value).strip().lower()
    text = {str(number): name for number, name in enumerate(names)}.get(text, text)
    if text not in names:
        raise ValueError(f"expected {spelled(names)}")
    return text


def parse_tls_min_version(value: object) -> str:
    names = ALLOWED["tls_min_version"]
    text = _str(value).strip().lower().removeprefix("tlsv").removeprefix("tls")
    if text not in names:
        raise ValueError(f"expected {spelled(names)} (nothing older is served)")
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
    if text not in ALLOWED["forwarded_headers"]:
        raise ValueError(f"must be {spelled(ALLOWED['forwarded_headers'])}")
    return text


#: The fields of the access log, in the JSON format's order (the Rust core's list:
#: `_core.ACCESS_LOG_FIELDS`, checked equal by the tests).
ACCESS_LOG_FIELDS = (
    "client", "time", "method", "target", "path", "query", "protocol", "status", "bytes",
    "referer", "user_agent", "request_id", "queue_us", "app_us", "send_us", "total_us", "end",
    "pid", "scheduler",
)


#: A uWSGI log-format string in --access-log-format (src/observe/log_line.rs, UWSGI_PREFIX).
UWSGI_FORMAT_PREFIX = "uwsgi:"


def parse_access_log_format(value: object) -> str:
    """combined, common, json, a template of {field} names, or gunicorn's %(atom)s format
    (written as gunicorn writes it: log_options.parse_gunicorn_log_format)."""
    text = _str(value)
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
    return value  # merged into gunicorn's defaults (which say "version": 1) by logs.configure


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
    """One of LOG_LEVELS, in any case; quotes around it are dropped (`--log-level "'info'"`,
    as a shell-form Dockerfile start line passes it)."""
    text = _unquote(_str(value)).lower()
    if text not in LOG_LEVELS:
        raise ValueError(f"expected one of {', '.join(LOG_LEVELS)}")
    return text


def parse_scheduler(value: object) -> str:
    text = _str(value).strip().lower()
    if text not in ALLOWED["scheduler"]:
        raise ValueError(f"expected one of {', '.join(ALLOWED['scheduler'])}")
    return text


def parse_spin(value: object) -> str:
    text = _str(value).strip().lower()
    if text not in ALLOWED["spin"]:
        raise ValueError(f"expected one of {', '.join(ALLOWED['spin'])}")
    return text


def parse_pace(value: object) -> str:
    text = _str(value).strip().lower()
    if text not in ALLOWED["pace"]:
        raise ValueError(f"expected one of {', '.join(ALLOWED['pace'])}")
    return text


def parse_http2(value: object) -> str:
    """on, tls or off (and the switch spellings: true means on, false off)."""
    text = _str(value).strip().lower()
    if text in ("1", "true", "yes"):
        text = "on"
    elif text in ("0", "false", "no"):
        text = "off"
    if text not in ALLOWED["http2"]:
        raise ValueError(f"expected one of {', '.join(ALLOWED['http2'])}")
    return text


def parse_http3(value: object) -> str:
    """on or off, as `--http2` names its states (and the switch spellings: true means on,
    false off; a Python bool for serve())."""
    if isinstance(value, bool):
        return "on" if value else "off"
    text = _str(value).strip().lower()
    if text in ("1", "true", "yes"):
        text = "on"
    elif text in ("0", "false", "no", ""):
        text = "off"
    if text not in ALLOWED["http3"]:
        raise ValueError(f"expected one of {', '.join(ALLOWED['http3'])}")
    return text


def parse_http3_congestion(value: object) -> str:
    text = _str(value).strip().lower()
    if text not in ALLOWED["http3_congestion"]:
        raise ValueError(f"expected one of {', '.join(ALLOWED['http3_congestion'])}")
    return text


def _unquote(text: str) -> str:
    """The text without spaces around it and one pair of matching quotes."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()
    return text


def parse_proxy_protocol(value: object) -> bool:
    """A switch, or gunicorn 27's modes: off is false; v1, v2 and auto are true (a listener
    that expects a PROXY header reads either version)."""
    if isinstance(value, str) and value.strip().lower() in ("v1", "v2", "auto"):
        return True
    try:
        return parse_bool(value)
    except ValueError:
        raise ValueError("expected true or false (gunicorn's off, v1, v2 or auto too)") from None


def parse_proc_name(value: object) -> Optional[str]:
    """Any printable text; '' or None: the process titles are left alone."""
    if value is None:
        return None
    text = _str(value).strip()
    if any(ord(c) < 32 or c == "\x7f" for c in text):
        raise ValueError("cannot contain control characters")
    return text or None


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
    fallthrough: bool = False

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
        elif key == "fallthrough" and not arg:
            mount["fallthrough"] = True
        elif item:
            raise ValueError(
                f"unknown setting {item!r} (max-age=N, immutable, index=NAME|none, dotfiles, "
                "follow-symlinks, fallthrough)"
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
    """N >= 1 worker processes under a master, `auto` for the CPUs this process may use: its
    cgroup's CPU quota rounded up, at most the CPUs of its affinity (a cpuset), at least one
    (`_core.cpu_allowance`); None (unset): one process, no master."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == "auto":
        from . import _core  # the allowance is read in one place, the Rust core
        return int(_core.cpu_allowance()["workers"])
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
