"""The `server` and `worker` objects gunicorn's hooks receive, built from sluicegate's state so
that a hook written for gunicorn reads what it expects.

gunicorn passes its Arbiter as `server` and its Worker as `worker`; hooks read their attributes
(`server.log.info(...)`, `server.cfg.workers`, `server.address`, `worker.pid`, `worker.age`,
`worker.tmp`...). `HookServer` and `HookWorker` carry the attributes hooks commonly read, with
gunicorn's names and value types; `GunicornCfg` answers `cfg.NAME` for gunicorn's setting names
(`cfg.bind` a list of strings, `cfg.accesslog`, `cfg.loglevel`...) and, failing that, for
sluicegate's option names. `GunicornLog` is gunicorn's logger interface over the `sluicegate`
logger. The master, the workers and the single server build them (`server()`, `worker()`) at
each hook call, so they show the state of that moment.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .logs import log as sluicegate_log

#: gunicorn's settings as `cfg` reads them (`_settings`), from gunicorn_settings.py when a hook
#: first reads one: a server without hooks never imports that table.
_SETTINGS: Dict[str, Any] = {}


def _settings() -> Dict[str, Any]:
    """"same": gunicorn settings whose value `cfg` gives as ours (the option a done setting maps
    to), but for those whose value sluicegate's option holds in another form than gunicorn's;
    "not ours": those sluicegate ignores or refuses (`cfg` gives None for them)."""
    if not _SETTINGS:
        from .gunicorn_settings import DONE, SETTINGS

        _SETTINGS["same"] = {s.name: str(s.option) for s in SETTINGS if s.answer == DONE and
                             s.name not in ("http_protocols", "http2_cleartext",
                                            "secure_scheme_headers", "paste", "access_log_format")}
        _SETTINGS["not ours"] = {s.name for s in SETTINGS if s.answer != DONE}
    return _SETTINGS

#: gunicorn settings with no sluicegate option whose value a hook may read: what gunicorn's
#: default is, which is what sluicegate does (or the nearest thing).
_GUNICORN_DEFAULTS: Dict[str, Any] = {
    "daemon": False, "worker_connections": 1000, "spew": False, "sendfile": None,
    "reuse_port": False, "worker_tmp_dir": None, "statsd_host": None, "statsd_prefix": "",
    "dogstatsd_tags": "", "syslog": False, "logger_class": "gunicorn.glogging.Logger",
    "limit_request_field_size": 8190, "initgroups": False, "paste": None,
}

if TYPE_CHECKING:
    Address = Union[Tuple[str, int], str]


class GunicornLog:
    """gunicorn's `Logger` interface (`server.log`, `worker.log`) over the `sluicegate` logger:
    its lines go to sluicegate's error log."""

    def __init__(self) -> None:
        self.error_log = sluicegate_log
        self.access_log = sluicegate_log.getChild("access")

    def __getattr__(self, name: str) -> Any:
        # debug, info, warning, error, critical, exception, log, isEnabledFor...
        return getattr(sluicegate_log, name)

    def access(self, resp: Any, req: Any, environ: Any, request_time: Any) -> None:
        """gunicorn writes an access line here; sluicegate's core writes its own."""

    def reopen_files(self) -> None:
        """USR1 reopens sluicegate's log files; nothing to do from a hook."""

    def close_on_exec(self) -> None:
        """sluicegate's log files are opened close-on-exec already."""


LOG = GunicornLog()


class GunicornCfg:
    """`server.cfg` / `worker.cfg`: gunicorn's setting names over the validated Config."""

    def __init__(self, cfg: Any) -> None:
        self._cfg = cfg

    def __getattr__(self, name: str) -> Any:
        cfg = self._cfg
        if name in _DERIVED:
            return _DERIVED[name](cfg)
        ours = _settings()["same"]
        if name in ours:
            return _gunicorn_value(name, getattr(cfg, ours[name], None))
        if hasattr(cfg, name):
            return getattr(cfg, name)
        if name in _GUNICORN_DEFAULTS:
            return _GUNICORN_DEFAULTS[name]
        if name in _settings()["not ours"]:
            return None
        raise AttributeError(f"cfg has no setting {name!r}")

    def __repr__(self) -> str:
        return f"<gunicorn-style cfg of {self._cfg!r}>"


def _gunicorn_value(name: str, value: Any) -> Any:
    """A value of ours in the type gunicorn gives the same setting."""
    if name == "bind":
        return [str(b) for b in value or ()]
    if name in ("raw_env", "reload_extra_files"):
        return list(value or ())
    if name == "workers" and value is None:
        return 1
    if name == "threads" and value is None:
        return 1
    return value


def _addresses(cfg: Any, sockets: Sequence[Any] = ()) -> List[Address]:
    """gunicorn's `cfg.address`: (host, port) tuples and unix paths, the real port once bound."""
    out: List[Address] = []
    if sockets:
        for s in sockets:
            a = s.address
            out.append(a.host if a.kind == "unix" else (a.host, s.port))
        return out
    for b in getattr(cfg, "bind", ()) or ():
        out.append(b.host if b.kind == "unix" else (b.host, b.port))
    return out


def _proc_name(cfg: Any) -> str:
    for name in ("proc_name", "name"):
        value = getattr(cfg, name, None)
        if isinstance(value, str) and value:
            return value
    app = getattr(cfg, "app", None)
    return app if isinstance(app, str) else "sluicegate"


_DERIVED: Dict[str, Callable[[Any], Any]] = {
    "address": _addresses,
    "proc_name": _proc_name,
    "default_proc_name": _proc_name,
    "worker_class_str": lambda cfg: getattr(cfg, "worker_class", "gthread"),
    "is_ssl": lambda cfg: bool(getattr(cfg, "certfile", None)),
    "env": lambda cfg: dict(i.partition("=")[::2] for i in getattr(cfg, "env", ()) or ()),
    "uid": lambda cfg: os.geteuid(),
    "gid": lambda cfg: os.getegid(),
}


class HookApp:
    """gunicorn's `server.app` / `worker.app` (its WSGIApplication): the app path and, once
    imported in this process, the app."""

    def __init__(self, cfg: Any, wsgi: Optional[Callable[..., Any]] = None) -> None:
        self.cfg = GunicornCfg(cfg)
        spec = getattr(cfg, "app", None)
        self.app_uri = spec if isinstance(spec, str) else getattr(spec, "__qualname__", None)
        self.callable = wsgi

    def wsgi(self) -> Optional[Callable[..., Any]]:
        return self.callable


class WorkerTmp:
    """gunicorn's `worker.tmp`, the heartbeat file: a real unlinked file whose times
    `notify()` updates (sluicegate's master watches its workers over a pipe, not this file)."""

    def __init__(self) -> None:
        self._file: Optional[Any] = None

    def _f(self) -> Any:
        if self._file is None:
            import tempfile  # only when a hook uses worker.tmp: not in every process
            self._file = tempfile.TemporaryFile(prefix="sluicegate-wtmp-")
        return self._file

    def notify(self) -> None:
        os.utime(self._f().fileno(), None)

    def last_update(self) -> float:
        return os.fstat(self._f().fileno()).st_mtime

    def fileno(self) -> int:
        return int(self._f().fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class HookWorker:
    """gunicorn's `worker`. `age` is gunicorn's: the master counts the workers it starts,
    and each gets the next number (a replacement too: 1 and 2, then 3 for the first
    replacement). The metrics' `worker` label is the worker's slot instead (1 to N)."""

    def __init__(self, cfg: Any, pid: int, ppid: int, age: int,
                 sockets: Sequence[Any] = (), app: Optional[Callable[..., Any]] = None) -> None:
        self.pid = pid
        self.ppid = ppid
        self.age = age
        self.cfg = GunicornCfg(cfg)
        self.log = LOG
        self.alive = True
        self.booted = app is not None
        self.aborted = False
        self.nr = 0
        self.timeout = getattr(cfg, "timeout", 0)
        self.max_requests = getattr(cfg, "max_requests", 0) or sys.maxsize
        self.sockets = [getattr(s, "url", s) for s in sockets]
        self.app = HookApp(cfg, app)
        self.wsgi = app
        self.tmp = WorkerTmp()
        self.reloader = None

    def notify(self) -> None:
        self.tmp.notify()

    def __repr__(self) -> str:
        return f"<Worker {self.pid}>"


class HookServer:
    """gunicorn's `server`, its Arbiter, as far as hooks read it."""

    def __init__(self, cfg: Any, pid: int, num_workers: int, sockets: Sequence[Any] = (),
                 workers: Optional[Dict[int, HookWorker]] = None,
                 app: Optional[Callable[..., Any]] = None) -> None:
        self.cfg = GunicornCfg(cfg)
        self.pid = pid
        self.num_workers = num_workers
        self.log = LOG
        self.app = HookApp(cfg, app)
        self.address = _addresses(cfg, sockets)
        self.LISTENERS = [s.url for s in sockets]
        self.WORKERS: Dict[int, HookWorker] = dict(workers or {})
        self.timeout = getattr(cfg, "timeout", 0)
        self.proc_name = _proc_name(cfg)
        self.master_name = "Master"
        self.worker_class = self.cfg.worker_class_str
        self.worker_age = max((w.age for w in self.WORKERS.values()), default=0)
        self.pidfile = getattr(cfg, "pid", None)
        self.reexec_pid = 0
        self.master_pid = 0
        self.systemd = "LISTEN_FDS" in os.environ
        self.START_CTX = {"args": [sys.executable, *sys.argv], "cwd": os.getcwd(),
                          0: sys.executable}
        self.started = time.time()

    def __repr__(self) -> str:
        return f"<Arbiter {self.pid}>"


def server(cfg: Any, workers: Optional[int] = None, pid: Optional[int] = None,
           sockets: Sequence[Any] = (), children: Optional[Dict[int, HookWorker]] = None,
           app: Optional[Callable[..., Any]] = None) -> HookServer:
    """The `server` argument: the master (or the single server's process) unless `pid` says
    (a worker passes its master's)."""
    n = workers if workers is not None else (getattr(cfg, "workers", None) or 1)
    return HookServer(cfg, os.getpid() if pid is None else pid, n, sockets, children, app)


#: This process's own age, when a master forked it (`note_own_age`); 1 in a single server.
_own_age = 1


def note_own_age(age: int) -> None:
    """In a worker just forked: the age its master gave it, for the hooks' `worker.age`."""
    global _own_age
    _own_age = age


def worker(cfg: Any, age: Optional[int] = None, pid: Optional[int] = None,
           ppid: Optional[int] = None, sockets: Sequence[Any] = (),
           app: Optional[Callable[..., Any]] = None) -> HookWorker:
    """The `worker` argument: this process unless `pid` says (child_exit, in the master)."""
    return HookWorker(cfg, os.getpid() if pid is None else pid,
                      os.getppid() if ppid is None else ppid,
                      _own_age if age is None else age, sockets, app)


__all__ = ["GunicornCfg", "GunicornLog", "HookApp", "HookServer", "HookWorker", "WorkerTmp",
           "server", "worker"]
