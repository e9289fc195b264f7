"""Starting a server: the one pipeline from a validated Config to a running role.

`serve_config(cfg)` runs the steps in this order, each one call into the module that owns it:

1. the process (`_settle`): the error log (logs.py), `--umask`, `--chdir`; then the TLS
   certificate and key, read and checked (tls.py) as the starting user;
2. the app, if it may be imported now (`_early_app`, loader.py): before any socket exists, so
   that its import error is the one reported; not when a user switch follows (the app never
   runs as root) nor in a master without `--preload` (each worker imports it);
3. the sockets (`_sockets`, listeners.py): passed by systemd or by the previous master of a USR2
   upgrade (upgrade.py), else bound;
4. the pid file (pidfile.py): still as the starting user, who may write in /run;
5. the user switch (privileges.py), if this process imports the app (a single server, a
   `--preload` master); else each worker switches once forked (master.py), and the master keeps
   the starting user, as gunicorn's does, so that a USR2 upgrade can start a new master;
6. the app, if step 2 left it (loader.py);
7. the role: a `SingleServer` (single.py), or a `Master` (master.py) whose forked children each
   run `_boot_worker`: load the app unless preloaded, then a `WorkerServer` (worker.py).

gunicorn's hooks (hooks.py, with the objects of hook_objects.py) run at these steps:
on_starting after step 1 (and after sys.path is set as gunicorn sets it, syspath.py), on_exit
at the end; in each worker post_fork, then the app, then post_worker_init, and worker_exit at
its end (in a single server post_worker_init and worker_exit around its serving). pre_request
and post_request wrap the app where they are defined.

The pid file and the sockets are cleaned up here whatever the role returned or raised. Nothing
below this module imports it: the master gets the worker's start as a value (`boot_worker`).
"""

from __future__ import annotations

import functools
import os
import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

    from .hook_objects import HookServer, HookWorker

from . import records
from . import gunicorn_logging, logs, pidfile, privileges, proctitle, syspath, tls, uwsgi_module
from .hook_types import HookExit
from .listeners import BoundSocket, bind_all, inherited_sockets, with_socket_defaults
from .loader import load_app
from .errors import SluicegateError
from .logs import log
from .master import Master
from .upgrade import UPGRADE_ENV
from .validated import Config
from .worker import WorkerServer

__all__ = ["start", "serve_config", "set_env", "log"]

if TYPE_CHECKING:
    App = Callable[..., Any]


def start(read_config: Callable[[], Config], version: str, restart: List[str],
          one_shot: Optional[Callable[[Config], Optional[int]]] = None) -> int:
    """The start shared by the `sluicegate` and `sluicegate-uwsgi` commands (cli.py,
    uwsgi_cli.py): `read_config()` gives the validated Config, at the start and again on HUP;
    `one_shot(cfg)` an exit status instead of serving (--print-config, --check-config), or
    None; then serve. `restart` is the command line a master re-executes on USR2. Every user
    error ends as one line on standard error (cli.py's doc)."""
    debug = False
    try:
        cfg = read_config()
        debug = cfg.log_level == "debug"
        set_env(cfg.env)  # -e KEY=VALUE: before the app is imported, here or in a worker
        status = one_shot(cfg) if one_shot is not None else None
        if status is not None:
            return status
        started_in = os.getcwd()

        def reread() -> Config:
            """HUP: the options read again, over the environment and config files as they are
            now (a relative --chdir is from where sluicegate started, not from where it went)."""
            here = os.getcwd()
            os.chdir(started_in)  # relative paths are read from there, as at the start
            try:
                again = read_config()
            finally:
                os.chdir(here)
            set_env(again.env)  # raw_env as it is now, for the new workers (as gunicorn)
            if again.chdir:
                again = records.replace(
                    again, chdir=os.path.abspath(os.path.join(started_in, again.chdir)))
            return again

        if cfg.error_log:
            logs.redirect_stderr(cfg.error_log, capture_output=cfg.capture_output)
        return serve_config(cfg, version, owns_process=True, restart=(restart, os.getcwd()),
                            reread=reread)
    except HookExit as e:  # logged by the hook's runner already
        return e.exit_code
    except SluicegateError as e:
        if debug and e.__cause__ is not None:
            log.debug("Traceback of the error below:", exc_info=e.__cause__)
        print(f"sluicegate: error: {e}", file=sys.stderr, flush=True)
        return e.exit_code
    except KeyboardInterrupt:
        # Ctrl-C while the app was still loading, before the server's own handler was installed.
        return 130


#: The variables set_env set, with the value each had before (None: it was not set).
_env_before: Dict[str, Optional[str]] = {}


def set_env(items: Sequence[str]) -> None:
    """-e / raw_env: set each KEY=VALUE in os.environ (the master's, so every worker's); a
    variable an earlier call set that `items` no longer has gets its first value back, as
    gunicorn's reload does."""
    wanted = dict(item.partition("=")[::2] for item in items)
    for key in [k for k in _env_before if k not in wanted]:
        before = _env_before.pop(key)
        if before is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = before
    for key, value in wanted.items():
        _env_before.setdefault(key, os.environ.get(key))
        os.environ[key] = value


def serve_config(
    cfg: Config, version: str = "", *, owns_process: bool = False,
    restart: Optional[Tuple[List[str], str]] = None,
    reread: Optional[Callable[[], Config]] = None,
) -> int:
    """Start-to-finish for one validated Config: returns the exit status (0) after shutdown;
    raises a SluicegateError subclass on any user error. `owns_process`: see
    core_server.ServerProcess. `restart`: the command line and directory a master re-executes
    on USR2 (the CLI's; None from serve()). `reread`: the options resolved again (environment
    and config file as they are now), for a master's reload on HUP."""
    cfg = _settle(cfg)
    tls.load(cfg)  # the key is read as the starting user, before any socket exists
    if cfg.hooks is not None:
        _hooks().resolve(cfg.hooks)  # a --hooks module that does not import stops the start here
        _hooks().call(cfg.hooks, "on_starting", _hook_objects().server(cfg))
    try:
        return _serve(cfg, version, owns_process, restart, reread)
    finally:
        if cfg.hooks is not None:
            _hooks().call(cfg.hooks, "on_exit", _hook_objects().server(cfg))


def _serve(
    cfg: Config, version: str, owns_process: bool,
    restart: Optional[Tuple[List[str], str]], reread: Optional[Callable[[], Config]],
) -> int:
    if cfg.uwsgi_module:  # before any import of the app: `import uwsgi` works from here on
        uwsgi_module.install(cfg.workers or 1, cfg.workers is not None)
    app, app_name = _early_app(cfg)
    upgraded_from = os.environ.pop(UPGRADE_ENV, None)
    sockets = _sockets(cfg, upgraded_from)
    tls.settle_sockets(cfg, sockets)
    try:
        if cfg.pid:
            old_master = int(upgraded_from) if (upgraded_from or "").isdigit() else None
            pidfile.write(cfg.pid, replaces=old_master)
        if cfg.workers is None or cfg.preload:  # the app is imported in this process
            privileges.drop(cfg.user, cfg.group)
        elif cfg.user or cfg.group:
            log.info("Workers run as user %s group %s; the master keeps its own (for USR2)",
                     cfg.user or "-", cfg.group or "-")
        if app is None and (cfg.workers is None or cfg.preload):
            app = _load_app(cfg)
        if cfg.workers is None:
            assert app is not None
            if cfg.statsd_host:
                from . import statsd

                statsd.workers(1)  # gunicorn's gauge: its arbiter always has workers
            _preflight(app, cfg)
            hooks = _hooks()  # a single server imports them (single.py too)
            me = _hook_objects().worker(cfg, sockets=sockets, app=app)
            proctitle.set_title("server", cfg.proc_name)
            hooks.call(cfg.hooks, "post_worker_init", me)
            if cfg.uwsgi_module:
                uwsgi_module.after_worker_start()
            # Here: a master's processes have no use for the single server's role.
            from .single import SingleServer

            try:
                single = SingleServer(hooks.wrap_app(cfg.hooks, app, me), cfg, sockets,
                                      app_name=app_name, version=version,
                                      owns_process=owns_process)
                single.on_interrupt = functools.partial(hooks.call, cfg.hooks, "worker_int", me)
                return single.run()
            finally:
                me.alive = False
                hooks.call(cfg.hooks, "worker_exit",
                           _hook_objects().server(cfg, 1, sockets=sockets, app=app), me)
        workers = cfg.workers or 1
        logs.reclaim()
        log.info("Starting sluicegate %s: app %s, %d worker(s)%s", version, app_name, workers,
                 " (app preloaded)" if app is not None else "")
        boot = functools.partial(_boot_worker, sockets=sockets, app=app, app_name=app_name,
                                 version=version)
        proctitle.set_title("master", cfg.proc_name)
        return Master(cfg, sockets, workers, boot, upgraded=upgraded_from is not None,
                      restart=restart, reread=reread).run()
    finally:
        for s in sockets:
            s.close()  # what the server did not close already (a failed start)
        if cfg.pid:
            pidfile.remove(cfg.pid)


def _settle(cfg: Config) -> Config:
    """The process settings that come first: the error log, the umask, the directory."""
    logs.configure(cfg.log_level, gunicorn_logging.setup_of(cfg), cfg.log_date)
    if cfg.statsd_host:  # statsd.py: imported with the option only
        from . import statsd

        statsd.install(cfg, log)
    if cfg.umask is not None:
        os.umask(cfg.umask)
    if cfg.chdir:
        # Absolute: each worker goes there again once forked, from the directory it is in.
        cfg = records.replace(cfg, chdir=os.path.abspath(cfg.chdir))
        os.chdir(cfg.chdir)
    syspath.settle(cfg.chdir, cfg.pythonpath)  # before on_starting, as gunicorn does
    if cfg.workers is None and (cfg.reload or cfg.touch_reload or cfg.on_term == "reload"
                                or cfg.attach_daemon or cfg.smart_attach_daemon):
        # Reloading replaces workers, and side commands are a master's: they need a master.
        cfg = records.replace(cfg, workers=1)
    return cfg


def _early_app(cfg: Config) -> Tuple[Optional[App], str]:
    """The app if it is to be imported before the sockets exist (None if later), and the name
    the log lines give it."""
    if callable(cfg.app):  # serve(app): loaded already, but the commands still run first
        _run_before_app(cfg)
        return cfg.app, getattr(cfg.app, "__qualname__", repr(cfg.app))
    here = cfg.workers is None or cfg.preload
    if here and not (cfg.user or cfg.group):
        return _load_app(cfg), cfg.app
    return None, cfg.app


def _load_app(cfg: Config) -> App:
    """The app imported, after the --exec-pre-app commands (a failing one stops the start)."""
    _run_before_app(cfg)
    return load_app(str(cfg.app))


def _run_before_app(cfg: Config) -> None:
    """The --exec-pre-app commands (side_commands.py, imported with them only)."""
    if cfg.exec_pre_app:
        from .side_commands import run_before_app

        run_before_app(cfg.exec_pre_app)


def _sockets(cfg: Config, upgraded_from: Optional[str]) -> List[BoundSocket]:
    """The listening sockets: the ones this process was given, else bound from --bind."""
    sockets = inherited_sockets()
    if sockets and upgraded_from:
        log.info("Using %d socket(s) passed by the previous master (%s, SIGUSR2); --bind is "
                 "ignored", len(sockets), upgraded_from)
    elif sockets:
        log.info("Using %d socket(s) passed by systemd (LISTEN_FDS); --bind is ignored",
                 len(sockets))
    else:
        addresses = [with_socket_defaults(a, cfg.socket_mode, cfg.socket_owner)
                     for a in cfg.bind]
        sockets = bind_all(addresses, cfg.backlog, cfg.reuse_port, cfg.umask)
    return sockets


def _boot_worker(
    cfg: Config, events_fd: int, max_requests: int, balance: Tuple[int, int, int], workers: int,
    metrics_fd: int, worker_id: int, *, sockets: List[BoundSocket], app: Optional[App], app_name: str, version: str,
) -> int:
    """In a worker just forked by the master: the app (the preloaded one, else imported now
    with the configuration of this worker's generation), then its server."""
    if cfg.chdir:
        os.chdir(cfg.chdir)
    proctitle.set_title("worker", cfg.proc_name)
    if cfg.uwsgi_module:
        uwsgi_module.in_worker(worker_id, os.getppid())
    # gunicorn's `server` and `worker`, built only where hooks are set
    master: Optional[HookServer] = None
    me: Optional[HookWorker] = None
    if cfg.hooks is not None:
        hooks = _hooks()
        master = _hook_objects().server(cfg, workers, os.getppid(), sockets, app=app)
        me = _hook_objects().worker(cfg, sockets=sockets)
        master.WORKERS[me.pid] = me
        hooks.call(cfg.hooks, "post_fork", master, me)  # raises HookFailed: the boot fails
    worker_app = app if app is not None else _load_app(cfg)
    _preflight(worker_app, cfg)  # LoadError: the boot fails
    name = app_name if app is not None else str(cfg.app)
    if me is not None:
        me.wsgi = me.app.callable = worker_app
        me.booted = True
        hooks.call(cfg.hooks, "post_worker_init", me)
    if cfg.uwsgi_module:  # uwsgidecorators' @postfork, before the first request
        uwsgi_module.after_worker_start()
    try:
        served = worker_app if me is None else hooks.wrap_app(cfg.hooks, worker_app, me)
        server = WorkerServer(served, cfg, sockets,
                              events_fd=events_fd, max_requests=max_requests, workers=workers,
                              balance=balance, metrics_fd=metrics_fd, app_name=name,
                              version=version)
        if me is not None:
            server.on_interrupt = functools.partial(hooks.call, cfg.hooks, "worker_int", me)
        return server.run()
    finally:
        if me is not None:
            me.alive = False
            hooks.call(cfg.hooks, "worker_exit", master, me)


def _hooks() -> ModuleType:
    """hooks.py, which runs gunicorn's hooks: imported where hooks are set, or in a single
    server (single.py imports it too); a worker without hooks never loads it."""
    from . import hooks

    return hooks


def _hook_objects() -> ModuleType:
    """hook_objects.py (gunicorn's `server` and `worker` for hooks), imported where hooks are
    set, or in a single server (single.py imports it too)."""
    from . import hook_objects

    return hook_objects


def _preflight(app: App, cfg: Config) -> None:
    """preflight.py's checks, imported only where one applies: `--warmup`, or Django set up in
    this process (its URLconf is checked then, with or without --django-checks)."""
    if cfg.warmup or "django.apps" in sys.modules:
        from . import preflight

        preflight.check(app, cfg.warmup, cfg.django_checks)
