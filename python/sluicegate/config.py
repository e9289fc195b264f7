"""The config mapping handed to the Rust core (`_core.Server(app, listeners, config)`).

The keys and their meaning are the contract in _core.pyi. Options marked `core=True` in the
table (options.py) pass through unchanged under their own name, so adding such an option needs no
change here; only the keys that are not one option each are built below: the thread pool bounds
(one `--threads MIN:MAX` option, two keys) and what the supervisor opens at start (the access log
fd, wsgi.errors, the signal pipe) or knows (how the app was named, for log lines).
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from .options import OPTIONS, Config

#: The only URL scheme until TLS exists.
URL_SCHEME = "http"


def core_config(
    cfg: Config, *, threads: Tuple[int, int], access_log_fd: int, errors: Any, signal_fd: int,
    app_name: str = "", balance: Tuple[int, int, int] = (-1, 0, 0),
) -> Dict[str, Any]:
    """Every key `_core.Server` requires, from the validated Config and what the supervisor
    opened or chose (`threads`: the pool bounds, see thread_bounds.py). `access_log_fd` and
    `signal_fd` are -1 when off. `balance`: (fd, slots, slot) of the master's connection-count
    table for a worker process (master.py), fd -1 in a single process."""
    out: Dict[str, Any] = {o.name: getattr(cfg, o.name) for o in OPTIONS if o.core}
    out["threads_min"], out["threads_max"] = threads
    out["static"] = [m.to_core() for m in cfg.static]
    out["url_scheme"] = URL_SCHEME
    out["access_log_fd"] = access_log_fd
    out["errors"] = errors
    out["signal_fd"] = signal_fd
    out["app_name"] = app_name
    out["balance_fd"], out["balance_slots"], out["balance_slot"] = balance
    out["metrics_bind"] = metrics_address(cfg.metrics_bind, balance[2] if balance[0] >= 0 else None)
    return out


def metrics_address(address: str, worker: "int | None") -> str:
    """This process's --metrics-bind: the address itself for one process; for worker N of a
    master, the port plus N (HOST:PORT) or the path with `.N` appended (unix:PATH), so every
    worker can be scraped on its own and says which it is."""
    if not address or worker is None:
        return address
    if address.startswith("unix:"):
        return f"{address}.{worker}"
    host, _, port = address.rpartition(":")
    return f"{host}:{int(port) + worker}"
