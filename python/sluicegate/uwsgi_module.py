"""The `uwsgi` module apps import, as uWSGI 2.0's Python plugin gives it
(plugins/python/uwsgi_pymodule.c), for `--uwsgi-module`: installed into `sys.modules` as
`uwsgi` by `install()` (with `uwsgidecorators`, uwsgi_decorators.py), so that `import uwsgi`
works inside the server only, as under uWSGI, and fails outside it.

What it gives: `worker_id()` (1-based; 0 in the master, as uWSGI's `mywid`), `numproc`,
`masterpid()` (0 without a master, as uWSGI), `opt` (the resolved uWSGI options, str -> bytes,
a list for a repeated key, `set_options`), `reload()` (HUP to the master: a graceful reload;
without a master, to the process), `stop()`, `set_logvar()`/`get_logvar()` (a request's
values that a uWSGI log-format reads as `%(key)`: kept in the request's environ under
`LOGVAR_PREFIX` + key, which the access log reads after the app's call), `log()`,
`total_requests()` and `request_id()` (this worker's requests: uWSGI's first counts every
worker's), `mem()`, `micros()`, `version`, `version_info`,
`hostname`, `buffer_size`, `started_on`, `has_threads`, `cores`, `is_a_reload`, `loop`,
`magic_table`, `SPOOL_*`, and `post_fork_hook` run by the worker after the app is loaded and
before its first request (`after_worker_start`). Every other name of uWSGI's module (the
spooler, mules, the cache, queue, metrics, sharedarea, signals and timers, locks, RPC,
websockets...) is a function that raises `UwsgiUnsupported` naming the feature at its first
call (`UNSUPPORTED`), and a name uWSGI does not have either is an AttributeError.

How values reach the workers: the entry point calls `set_options(pairs)` in the main process;
the pairs are kept here and in the environment (`OPTIONS_ENV`, JSON, written by the resolving
process: `options_text`), which forked workers and a USR2 upgrade's new master inherit; a
process reads its own pairs back without json. `in_worker()` is called in each worker just forked.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
import types

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

#: The uWSGI release whose module this one follows.
UWSGI_VERSION = "2.0.31"
#: Where `set_options` leaves the resolved pairs for processes started later.
OPTIONS_ENV = "SLUICEGATE_UWSGI_OPTIONS"
#: The environ key prefix of `set_logvar`'s values (the access log reads them from there).
LOGVAR_PREFIX = "uwsgi.logvar."

if TYPE_CHECKING:
    OptValue = Union[bytes, bool, List[Union[bytes, bool]]]


class UwsgiUnsupported(RuntimeError):
    """A uWSGI feature sluicegate does not provide, called from the app."""


#: The names of uWSGI's module that sluicegate does not provide, by the feature they belong to.
UNSUPPORTED: Dict[str, Tuple[str, ...]] = {
    "the spooler": (
        "send_to_spooler", "spool", "set_spooler_frequency", "spooler_jobs", "spooler_pid",
        "spooler_pids", "spooler_get_task", "i_am_the_spooler", "spoolers"),
    "mules and farms": (
        "mule_id", "mule_msg", "farm_msg", "mule_get_msg", "farm_get_msg", "in_farm"),
    "the caching framework": (
        "cache_get", "cache_set", "cache_update", "cache_del", "cache_exists", "cache_clear",
        "cache_inc", "cache_dec", "cache_mul", "cache_div", "cache_num", "cache_keys"),
    "the queue framework": (
        "queue_get", "queue_set", "queue_last", "queue_push", "queue_pull", "queue_pop",
        "queue_slot", "queue_pull_slot"),
    "uWSGI metrics": (
        "metric_inc", "metric_dec", "metric_mul", "metric_div", "metric_get", "metric_set",
        "metric_set_max", "metric_set_min"),
    "the signal framework (signals, timers, cron, file monitors)": (
        "register_signal", "signal", "signal_wait", "signal_registered", "signal_received",
        "add_file_monitor", "add_timer", "add_rb_timer", "add_cron"),
    "uWSGI locks": ("lock", "is_locked", "unlock"),
    "the sharedarea": (
        "sharedarea_read", "sharedarea_write", "sharedarea_readbyte", "sharedarea_writebyte",
        "sharedarea_read8", "sharedarea_write8", "sharedarea_readlong", "sharedarea_writelong",
        "sharedarea_read64", "sharedarea_write64", "sharedarea_read32", "sharedarea_write32",
        "sharedarea_read16", "sharedarea_write16", "sharedarea_inclong", "sharedarea_inc64",
        "sharedarea_inc32", "sharedarea_dec64", "sharedarea_dec32", "sharedarea_rlock",
        "sharedarea_wlock", "sharedarea_unlock", "sharedarea_memoryview",
        "sharedarea_object"),
    "websockets": (
        "websocket_recv", "websocket_recv_nb", "websocket_send", "websocket_send_binary",
        "websocket_handshake"),
    "RPC": ("register_rpc", "rpc", "rpc_list", "call"),
    "the Legion subsystem": ("i_am_the_lord", "lord_scroll", "scrolls"),
    "uWSGI's async/green-thread API": (
        "async_sleep", "async_connect", "green_schedule", "suspend", "wait_fd_read",
        "wait_fd_write", "ready_fd"),
    "uWSGI's socket helpers": (
        "connect", "connection_fd", "is_connected", "send", "recv", "close", "disconnect"),
    "uWSGI's internal routing": ("route", "add_var"),
    "offloading": ("offload", "sendfile"),
    "uWSGI alarms": ("alarm", "set_warning_message"),
    "chunked input (uwsgi.chunked_read)": ("chunked_read", "chunked_read_nb"),
    "per-request harakiri (set_user_harakiri)": ("set_user_harakiri",),
    "the embedded data helpers": ("embedded_data", "extract", "parsefile"),
    "uwsgi.workers() (use `sluicegate ctl status` or the --stats document)": ("workers",),
    "uwsgi.accepting()": ("accepting",),
    "uwsgi.listen_queue()": ("listen_queue",),
    "uwsgi.setprocname() (--proc-name)": ("setprocname",),
    "uwsgi.logsize()": ("logsize",),
    "uwsgi.log_this_request() (--access-log-when)": ("log_this_request",),
    "uwsgi.cl()": ("cl",),
    "uwsgi.ready()": ("ready",),
}

_FEATURE_OF: Dict[str, str] = {name: feature for feature, names in UNSUPPORTED.items()
                               for name in names}


class _State:
    """What this process knows of its place in the server."""

    def __init__(self) -> None:
        self.worker_id = 0
        self.numproc = 1
        self.masterpid = 0
        # `_core.app_calls()` when this worker started: its own requests are the calls since.
        self.calls_before = 0


_state = _State()


# -- what the server calls -----------------------------------------------------------------


def options_dict(pairs: Iterable[Tuple[str, Optional[str]]]) -> Dict[str, OptValue]:
    """uWSGI's `uwsgi.opt` from resolved (name, value) pairs: bytes values (True for a value
    of None), a list for a key given more than once, in order."""
    opt: Dict[str, Any] = {}
    for name, value in pairs:
        v: Union[bytes, bool] = True if value is None else value.encode("utf-8",
                                                                        "surrogateescape")
        if name in opt:
            if isinstance(opt[name], list):
                opt[name].append(v)
            else:
                opt[name] = [opt[name], v]
        else:
            opt[name] = v
    return opt


def options_text(pairs: Sequence[Tuple[str, Optional[str]]]) -> str:
    """The pairs as `OPTIONS_ENV` holds them (JSON): written by the resolving process too
    (uwsgi_cli.py), so that a master given the text imports no json."""
    import json

    return json.dumps([[n, v] for n, v in pairs])


#: The last pairs `set_options` kept, with their text: the same pairs the text decodes to,
#: read without json while the environment still holds that text.
_published: List[Any] = []


def set_options(pairs: Sequence[Tuple[str, Optional[str]]], text: Optional[str] = None) -> None:
    """The entry point's resolved uWSGI options, for `uwsgi.opt`: kept in the environment
    (processes forked or executed later inherit it) and in the module if it is installed.
    `text`: `options_text(pairs)`, if the caller has it."""
    if text is None:
        text = options_text(pairs)
    os.environ[OPTIONS_ENV] = text
    _published[:] = [text, [(n, v) for n, v in pairs]]
    module = sys.modules.get("uwsgi")
    if isinstance(module, types.ModuleType) and getattr(module, "_sluicegate", False):
        module.opt = options_dict(pairs)


def _options_from_env() -> Dict[str, OptValue]:
    text = os.environ.get(OPTIONS_ENV, "[]")
    if _published and _published[0] == text:
        return options_dict(_published[1])
    import json  # a text this process did not write (a test's, an embedding program's)

    try:
        pairs = json.loads(text)
    except ValueError:
        pairs = []
    return options_dict((str(n), None if v is None else str(v)) for n, v in pairs)


def install(numproc: int, has_master: bool) -> None:
    """Make `uwsgi` and `uwsgidecorators` importable in this process (and in the workers it
    forks): called at the start of a server run with --uwsgi-module, before the app is
    imported. `numproc`: the workers; `has_master`: --workers was given."""
    from . import uwsgi_decorators

    _state.numproc = numproc
    _state.masterpid = os.getpid() if has_master else 0
    _state.worker_id = 0 if has_master else 1
    module = _build_module()
    sys.modules["uwsgi"] = module
    sys.modules["uwsgidecorators"] = uwsgi_decorators.build_module(module)


def in_worker(worker_id: int, masterpid: int) -> None:
    """In a worker just forked: its uWSGI id (from 1; a replacement keeps its predecessor's,
    children.Child.wid) and its master."""
    _state.worker_id = worker_id
    _state.masterpid = masterpid
    from . import _core

    _state.calls_before = _core.app_calls()


def after_worker_start() -> None:
    """The app is loaded in this worker and no request has been served: run the app's
    `uwsgi.post_fork_hook` (uwsgidecorators' @postfork functions), as uWSGI does."""
    module = sys.modules.get("uwsgi")
    hook = getattr(module, "post_fork_hook", None)
    if callable(hook):
        hook()


# -- the module's functions ------------------------------------------------------------------


def _worker_id() -> int:
    return _state.worker_id


def _masterpid() -> int:
    return _state.masterpid


def _reload() -> bool:
    """A graceful reload: HUP to the master (uWSGI's `uwsgi.reload()`)."""
    os.kill(_state.masterpid or os.getpid(), signal.SIGHUP)
    return True


def _stop() -> bool:
    """QUIT to the master (uWSGI's `uwsgi.stop()`): stop at once."""
    os.kill(_state.masterpid or os.getpid(), signal.SIGQUIT)
    return True


def _current_environ(what: str) -> Dict[str, Any]:
    from . import _core

    environ: Optional[Dict[str, Any]] = _core.current_environ()
    if environ is None:
        raise RuntimeError(f"uwsgi.{what}() is called outside a request")
    return environ


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if not isinstance(value, str):
        raise TypeError(f"a str or bytes is required, not {type(value).__name__}")
    return value


def _set_logvar(key: Any, value: Any) -> None:
    _current_environ("set_logvar")[LOGVAR_PREFIX + _text(key)] = _text(value)


def _get_logvar(key: Any) -> Optional[bytes]:
    value = _current_environ("get_logvar").get(LOGVAR_PREFIX + _text(key))
    return None if value is None else value.encode("latin-1")


def _log(message: Any) -> bool:
    """A line on the server's log (uWSGI's `uwsgi.log`)."""
    text = _text(message)
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
    sys.stderr.flush()
    return True


def _total_requests() -> int:
    # Counted by the core as each app call begins (src/wsgi/current.rs): no wrapper around
    # the app, whose Python frame cost every request about 1,000 instructions.
    from . import _core

    return _core.app_calls() - _state.calls_before


def _request_id() -> int:
    return _total_requests()


def _mem() -> Tuple[int, int]:
    """(rss, vsz) of this process in bytes."""
    try:
        with open("/proc/self/statm") as f:
            vsz_pages, rss_pages = (int(x) for x in f.read().split()[:2])
        page = os.sysconf("SC_PAGE_SIZE")  # (resource.getpagesize's: no module to import)
        return rss_pages * page, vsz_pages * page
    except OSError:
        return 0, 0


def _micros() -> int:
    return time.time_ns() // 1000


def _unsupported(name: str, feature: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise UwsgiUnsupported(
            f"uwsgi.{name}(): {feature} is not supported by sluicegate's uwsgi module "
            "(docs/operations.md, 'Coming from uWSGI')")

    refuse.__name__ = name
    return refuse


def _module_getattr(name: str) -> Any:
    feature = _FEATURE_OF.get(name)
    if feature is not None:
        return _unsupported(name, feature)
    raise AttributeError(f"module 'uwsgi' has no attribute {name!r} (uWSGI's module has none "
                         "by that name either, or sluicegate does not provide it)")


def _build_module() -> types.ModuleType:
    module = types.ModuleType("uwsgi", "uWSGI's module, as sluicegate provides it "
                              "(sluicegate.uwsgi_module)")
    major, minor, micro = (int(x) for x in UWSGI_VERSION.split("."))
    hostname = socket.gethostname().encode()
    fields: Dict[str, Any] = {
        "_sluicegate": True,
        "version": UWSGI_VERSION.encode(),
        "version_info": (major, minor, micro, 0, ""),
        "hostname": hostname,
        "numproc": _state.numproc,
        "cores": 1,
        "has_threads": 1,
        "buffer_size": 4096,
        "started_on": int(time.time()),
        "is_a_reload": False,
        "loop": None,
        "magic_table": {},
        "mode": b"",
        "pidfile": b"",
        "sockets": [],
        "applications": None,
        "unbit": None,
        "SPOOL_RETRY": -1,
        "SPOOL_OK": -2,
        "SPOOL_IGNORE": 0,
        "opt": _options_from_env(),
        "post_fork_hook": None,
        "worker_id": _worker_id,
        "masterpid": _masterpid,
        "reload": _reload,
        "stop": _stop,
        "set_logvar": _set_logvar,
        "get_logvar": _get_logvar,
        "log": _log,
        "total_requests": _total_requests,
        "request_id": _request_id,
        "mem": _mem,
        "micros": _micros,
        "UwsgiUnsupported": UwsgiUnsupported,
        "__getattr__": _module_getattr,
    }
    for key, value in fields.items():
        setattr(module, key, value)
    return module
