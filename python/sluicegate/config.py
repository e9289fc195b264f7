"""The config mapping handed to the Rust core (`_core.Server(app, listeners, config)`), and the
generator of its type (`ServerConfig` in _core.pyi).

Its keys are of two kinds, each declared once:
  - every option marked `core=True` in the table (options.py), passed through unchanged under
    its own name: adding such an option needs no change here, nor in _core.pyi (regenerated);
  - `DERIVED_KEYS`, below: the keys that are not one option each: the thread pool bounds (one
    `--threads MIN:MAX` option, two keys), the static mounts as plain dicts, the Expires rules
    and added headers in the core's form (`expires_rules`, `encoded_headers`), and what the
    supervisor opens at start (the access log fd, wsgi.errors, the signal pipe) or knows (how
    the app was named, a worker's slot, its metrics address).

`python -m sluicegate.config --write-stub` rewrites `ServerConfig` in _core.pyi from these two;
tests/test_options_contract.py checks that the stub equals what it writes, that `core_config`
gives exactly those keys, and that src/config.rs reads exactly those keys.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import tls
from .uwsgi_compat import COMPAT_BUFFER_SIZE, UWSGI_FORMAT_PREFIX
from .validated import CORE_FIELDS, Config

#: wsgi.url_scheme of a plain listener (a TLS listener's environ template says "https").
URL_SCHEME = "http"

#: The core's config keys that are not one option each: (key, type in the stub, meaning).
DERIVED_KEYS: Tuple[Tuple[str, str, str], ...] = (
    ("threads_min", "int", "--threads MIN: app threads kept warm (thread_bounds.py resolves auto)"),
    ("threads_max", "int", "--threads MAX: the most app threads at once"),
    ("static", "List[Dict[str, Any]]", "--static mounts: dicts of parsers.StaticMount's fields"),
    ("static_expires", "List[Tuple[str, int, bool]]",
     "--static-expires, --static-expires-uri: (pattern, seconds, on the URI) per rule"),
    ("add_headers", "bytes", "--add-header: the 'Name: value\\r\\n' lines, encoded"),
    ("metrics_bind", "str", "--metrics-bind for this process (a worker's offset added) or \"\""),
    ("url_scheme", "str", "wsgi.url_scheme (\"http\")"),
    ("access_log_fd", "int", "-1: no access log; else the fd lines are appended to (the caller's)"),
    ("access_log_sink", "Any", "None, or a callable taking each batch of access lines (bytes)"),
    ("statsd", "Any", "None, or (--statsd-host, --statsd-prefix, --dogstatsd-tags)"),
    ("errors", "Any", "the object given to apps as wsgi.errors"),
    ("tls", "Any", "the TLS credentials loaded before binding (tls.py, _core.load_tls) or None"),
    ("signal_fd", "int", "read end of signal.set_wakeup_fd's pipe, or -1"),
    ("app_name", "str", "how log lines name the app (e.g. \"pkg.wsgi:app\")"),
    ("balance_fd", "int", "with worker processes: the memfd of connection counts, or -1"),
    ("balance_slots", "int", "entries in that table (4 bytes each)"),
    ("balance_slot", "int", "this worker's entry"),
    ("head_overflow_closes", "bool",
     "--uwsgi-compat buffer-size: a head over --limit-header-bytes closes, with uWSGI's line"),
)


def core_config(
    cfg: Config, *, threads: Tuple[int, int], access_log_fd: int, errors: Any, signal_fd: int,
    app_name: str = "", balance: Tuple[int, int, int] = (-1, 0, 0),
    access_log_sink: Any = None,
) -> Dict[str, Any]:
    """Every key `_core.Server` requires, from the validated Config and what the supervisor
    opened or chose (`threads`: the pool bounds, see thread_bounds.py). `access_log_fd` and
    `signal_fd` are -1 when off. `balance`: (fd, slots, slot) of the master's connection-count
    table for a worker process (master.py), fd -1 in a single process."""
    out: Dict[str, Any] = {name: getattr(cfg, name) for name in CORE_FIELDS}
    out["threads_min"], out["threads_max"] = threads
    if cfg.uwsgi_log_format is not None:  # --uwsgi-log-format wins over --access-log-format
        out["access_log_format"] = UWSGI_FORMAT_PREFIX + cfg.uwsgi_log_format
    out["static"] = [m.to_core() for m in cfg.static]
    out["static_expires"] = expires_rules(cfg.static_expires, cfg.static_expires_uri)
    out["add_headers"] = encoded_headers(cfg.add_header)
    out["metrics_bind"] = metrics_address(cfg.metrics_bind, balance[2] if balance[0] >= 0 else None)
    out["url_scheme"] = URL_SCHEME
    out["access_log_fd"] = access_log_fd
    out["access_log_sink"] = access_log_sink
    out["statsd"] = ((cfg.statsd_host, cfg.statsd_prefix, cfg.dogstatsd_tags)
                     if cfg.statsd_host else None)
    out["errors"] = errors
    out["tls"] = tls.loaded()
    out["signal_fd"] = signal_fd
    out["app_name"] = app_name
    out["balance_fd"], out["balance_slots"], out["balance_slot"] = balance
    out["head_overflow_closes"] = COMPAT_BUFFER_SIZE in cfg.uwsgi_compat
    return out


def encoded_headers(headers: Sequence[str]) -> bytes:
    """The core's `add_headers` (--add-header): the `Name: value\\r\\n` lines it writes into every
    HTTP/1.1 answer's head."""
    return b"".join(h.encode("latin-1") + b"\r\n" for h in headers)


def expires_rules(paths: Sequence[str], uris: Sequence[str]) -> List[Tuple[str, int, bool]]:
    """The core's `static_expires` (--static-expires, --static-expires-uri): (pattern, seconds,
    on the URI) per rule, in order."""
    rules = []
    for values, on_uri in ((paths, False), (uris, True)):
        for v in values:
            pattern, _, seconds = v.rpartition(" ")
            rules.append((pattern, int(seconds), on_uri))
    return rules


def metrics_address(address: str, slot: "int | None") -> str:
    """This process's --metrics-bind: the address itself for one process (and for a master,
    which serves the sum over its workers there, metrics_total.py); for the worker in slot S
    (counted from 0), the port plus S + 1 (HOST:PORT) or the path with `.{S + 1}` appended
    (unix:PATH), the number its series' `worker` label carries."""
    if not address or slot is None:
        return address
    if address.startswith("unix:"):
        return f"{address}.{slot + 1}"
    host, _, port = address.rpartition(":")
    return f"{host}:{int(port) + slot + 1}"


# --- ServerConfig in _core.pyi, generated.

STUB = os.path.join(os.path.dirname(__file__), "_core.pyi")
STUB_BEGIN = "# --- ServerConfig: generated by `python -m sluicegate.config --write-stub`"
STUB_END = "# --- end of generated ServerConfig"


def core_keys() -> List[Tuple[str, str, str]]:
    """(key, stub type, meaning) of every key of the core's config, in order."""
    from .options import OPTIONS  # the stub's writer only: a server process never needs it

    keys = []
    for o in OPTIONS:
        if o.core:
            name = o.type
            if name not in ("int", "float", "str", "bool", "Optional[str]"):  # pragma: no cover - table error
                raise TypeError(f"core option {o.name}: type {o.type!r} has no stub spelling")
            keys.append((o.name, name, f"{o.flag} (docs/options.md)"))
    return keys + list(DERIVED_KEYS)


def server_config_stub() -> str:
    """The generated block of _core.pyi: a TypedDict with one key per core config key."""
    lines = [
        STUB_BEGIN,
        "# from the options marked core=True in options.py and config.DERIVED_KEYS; do not edit.",
        "class ServerConfig(TypedDict):",
        '    """The config `Server` takes; every key is required (the Python front fills',
        '    defaults). One key per option marked core=True, under its name, then the keys',
        '    the front derives (config.py)."""',
        "",
    ]
    for key, kind, meaning in core_keys():
        lines.append(f"    {key}: {kind}  # {meaning}")
    lines.append(STUB_END)
    return "\n".join(lines) + "\n"


def stub_with_server_config(text: str) -> str:
    """`text` (a _core.pyi) with its generated block replaced by the current one."""
    start, end = text.index(STUB_BEGIN), text.index(STUB_END)
    end = text.index("\n", end) + 1
    return text[:start] + server_config_stub() + text[end:]


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--stub"]:
        sys.stdout.write(server_config_stub())
        return 0
    if args == ["--write-stub"]:
        with open(STUB, encoding="utf-8") as f:
            text = f.read()
        with open(STUB, "w", encoding="utf-8") as f:
            f.write(stub_with_server_config(text))
        return 0
    print("usage: python -m sluicegate.config --stub | --write-stub", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
