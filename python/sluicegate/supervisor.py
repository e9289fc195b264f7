"""Running one server in this process: logging, startup order, signals, shutdown; and the
start of a master (`--workers`, master.py) whose workers each run a `Supervisor`.

Startup order (`serve_config`): configure the error log -> umask -> chdir -> load the app
(unless a user switch or workers say later) -> the sockets (passed by systemd or a previous
master, else bound, in listeners.py) -> the pid file -> the user switch -> the app if not
loaded yet -> `Supervisor.run()` or the master. `Supervisor.run()`: open the access log and the
signal pipe -> build `_core.Server` -> log one `Listening at:` line per socket (a worker tells
its master instead) -> `Server.run()`.

Signals: the core's event loop releases the GIL and waits in Rust, where Python signal handlers
cannot run. So we create a pipe, make its write end Python's wakeup fd (`signal.set_wakeup_fd`:
the C-level handler writes the signal number there) and hand the read end to the core as
`signal_fd`; when it becomes readable the core runs the Python handlers below. SIGTERM and the
first SIGINT shut down gracefully (in-flight requests get --graceful-timeout seconds); a second
SIGINT and SIGQUIT stop at once; SIGUSR1 reopens the access log; the other operations signals
(HUP, USR2, TTIN, TTOU, WINCH) are logged and ignored in a single process, never fatal (a
master handles them: docs/operations.md).

Tests find the port of a `-b 127.0.0.1:0` server by parsing the `Listening at: http://HOST:PORT`
line: its wording is a contract.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import privileges, sd_notify, thread_bounds
from .config import core_config
from .errors import StartError
from .listeners import BoundSocket, bind_all, inherited_sockets
from .loader import load_app
from .master import UPGRADE_ENV, Master, remove_pid_file, write_pid_file
from .options import Config

LOGGER_NAME = "sluicegate"
LOG_FORMAT = "[%(asctime)s] [%(process)d] [%(levelname)s] %(message)s"
LOG_DATE_FORMAT = "%Y-%m-%d %H:%M:%S %z"

log = logging.getLogger(LOGGER_NAME)


def configure_logging(level: str) -> None:
    """The error log: the `sluicegate` logger, to standard error. Idempotent (serve() may be
    called more than once in a process)."""
    handler = next((h for h in log.handlers if getattr(h, "_sluicegate", False)), None)
    if handler is None:
        handler = logging.StreamHandler(sys.stderr)
        handler._sluicegate = True  # type: ignore[attr-defined]
        handler.setFormatter(logging.Formatter(LOG_FORMAT, LOG_DATE_FORMAT))
        log.addHandler(handler)
    log.setLevel(level.upper())
    log.propagate = False


def reclaim_logging() -> None:
    """Undo what an app's `logging.config.dictConfig` did to the server's own loggers without
    naming them: with `disable_existing_loggers` (True unless said otherwise, and Django's
    `LOGGING` often leaves it so) every logger that existed is disabled, and the server's
    start, signal, worker and shutdown lines would vanish. A config that names `sluicegate`
    is the operator's choice and is left alone (dictConfig does not disable what it names)."""
    for name in (LOGGER_NAME, f"{LOGGER_NAME}.error"):
        logging.getLogger(name).disabled = False


def serve_config(
    cfg: Config, version: str = "", *, owns_process: bool = False,
    restart: Optional[Tuple[List[str], str]] = None,
    reread: Optional[Callable[[], Config]] = None,
) -> int:
    """Start-to-finish for one validated Config: returns the exit status (0) after shutdown;
    raises a SluicegateError subclass on any user error. `owns_process`: see Supervisor.
    With `--workers`, this process becomes the master (master.py) and the workers run
    `Supervisor` on the sockets bound here. `restart`: the command line and directory a master
    re-executes on USR2 (the CLI's; None from serve()). `reread`: the options resolved again
    (environment and config file as they are now), for a master's reload on HUP.

    Order: umask, chdir, the app (here only when no user switch is asked: its import errors
    then come before any socket exists), the sockets (passed by systemd, else bound), the pid
    file, the user switch, the app if not loaded yet (never as root when --user is given)."""
    configure_logging(cfg.log_level)
    if cfg.umask is not None:
        os.umask(cfg.umask)
    if cfg.chdir:
        os.chdir(cfg.chdir)
    if cfg.reload and cfg.workers is None:
        cfg = dataclasses.replace(cfg, workers=1)  # reloading replaces workers: it needs a master
    needs_app_here = cfg.workers is None or cfg.preload
    switching_user = bool(cfg.user or cfg.group)
    app: Optional[Callable[..., Any]] = None
    if callable(cfg.app):
        app, app_name = cfg.app, getattr(cfg.app, "__qualname__", repr(cfg.app))
    else:
        app_name = cfg.app
        if needs_app_here and not switching_user:
            app = load_app(cfg.app)
    upgraded_from = os.environ.pop(UPGRADE_ENV, None)
    sockets = inherited_sockets()
    if sockets and upgraded_from:
        log.info("Using %d socket(s) passed by the previous master (%s, SIGUSR2); --bind is ignored",
                 len(sockets), upgraded_from)
    elif sockets:
        log.info("Using %d socket(s) passed by systemd (LISTEN_FDS); --bind is ignored",
                 len(sockets))
    else:
        sockets = bind_all(cfg.bind, cfg.backlog)
    try:
        if cfg.pid:
            write_pid_file(cfg.pid)
        privileges.drop(cfg.user, cfg.group)
        if app is None and needs_app_here:
            app = load_app(str(cfg.app))
        if cfg.workers is None:
            assert app is not None
            return Supervisor(
                app, cfg, sockets, app_name=app_name, version=version, owns_process=owns_process
            ).run()
        return _run_master(cfg, sockets, app, app_name, version, restart,
                           upgrade=upgraded_from is not None, reread=reread)
    finally:
        for s in sockets:
            s.close()  # what the server did not close already (a failed start)
        if cfg.pid:
            remove_pid_file(cfg.pid)
            remove_pid_file(cfg.pid + ".oldbin")  # after an upgrade (USR2), the old master's


def _run_master(
    cfg: Config, sockets: List[BoundSocket], app: Optional[Callable[..., Any]], app_name: str,
    version: str, restart: Optional[Tuple[List[str], str]], upgrade: bool = False,
    reread: Optional[Callable[[], Config]] = None,
) -> int:
    workers = cfg.workers or 1

    def boot_worker(
        wcfg: Config, events_fd: int, max_requests: int, balance: Tuple[int, int, int], count: int
    ) -> int:
        if wcfg.chdir:
            os.chdir(wcfg.chdir)
        worker_app = app if app is not None else load_app(str(wcfg.app))
        name = app_name if app is not None else str(wcfg.app)
        return Supervisor(
            worker_app, wcfg, sockets, app_name=name, version=version, owns_process=True,
            worker_events=events_fd, max_requests=max_requests, workers=count,
            balance=balance,
        ).run()

    def announce() -> None:
        for s in sockets:
            if upgrade:  # serving now: the socket files are this master's to remove at its end
                s.reclaim_unix_file()
            log.info("Listening at: %s", s.url)
        sd_notify.notify("READY=1", f"STATUS=serving with {workers} worker(s)")

    reclaim_logging()
    log.info("Starting sluicegate %s: app %s, %d worker(s)%s", version, app_name, workers,
             " (app preloaded)" if app is not None else "")
    return Master(cfg, sockets, workers, boot_worker, log, on_ready=announce,
                  restart=restart, reread=reread).run()


class Supervisor:
    """One server in this process, on sockets already bound.

    `owns_process` (the CLI): after shutdown, SIGTERM and SIGINT stay ignored while the process
    exits, so a second Ctrl-C that lands just after a quick shutdown cannot turn a clean exit
    into a KeyboardInterrupt. Otherwise (serve() inside someone's program) the previous
    handlers are restored.
    """

    def __init__(
        self,
        app: Callable[..., Any],
        cfg: Config,
        sockets: List[BoundSocket],
        *,
        app_name: str = "",
        version: str = "",
        owns_process: bool = False,
        worker_events: Optional[int] = None,
        max_requests: int = 0,
        workers: int = 1,
        balance: Tuple[int, int, int] = (-1, 0, 0),
    ) -> None:
        """`worker_events`: in a worker process, the pipe to the master (`R` once serving, `M`
        after `max_requests` requests, `S` with --max-stuck stuck calls); the master logs the
        listening addresses then."""
        self.app = app
        self.cfg = cfg
        self.sockets = sockets
        self.app_name = app_name
        self.version = version
        self.owns_process = owns_process
        self._server: Any = None
        self._shutdown_requested: Optional[bool] = None  # graceful flag, if before the server exists
        self._signals_seen: Dict[int, int] = {}
        self.worker_events = worker_events
        self.max_requests = max_requests
        self.workers = workers
        self.balance = balance
        self._access_fd = -1

    def run(self) -> int:
        reclaim_logging()  # the app, imported by now, may have reconfigured logging
        access_fd = -1
        wake_r = wake_w = -1
        old_wakeup: Optional[int] = None
        old_handlers: Dict[int, Any] = {}
        # set_wakeup_fd and signal handlers exist only in the main thread; serve() run in
        # another thread is stopped by calling shutdown() instead.
        on_main_thread = threading.current_thread() is threading.main_thread()
        cut = 0
        try:
            core = _import_core()
            access_fd = _open_access_log(self.cfg.access_log)
            if on_main_thread:
                wake_r, wake_w = os.pipe()
                os.set_blocking(wake_r, False)
                os.set_blocking(wake_w, False)
            self._access_fd = access_fd
            threads, threads_why = thread_bounds.choose(self.cfg.threads, self.workers)
            config = core_config(
                self.cfg, threads=threads, access_log_fd=access_fd, errors=sys.stderr, signal_fd=wake_r,
                app_name=self.app_name, balance=self.balance,
            )
            listeners = [s.to_listener() for s in self.sockets]
            if self.cfg.proxy_protocol:  # every HTTP listener expects a PROXY header
                listeners = [(*rest, "proxy" if wire == "http" else wire)
                             for *rest, wire in listeners]
            self._server = core.Server(self.app, listeners, config)
            if on_main_thread:
                old_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
                for signum in HANDLED_SIGNALS:
                    old_handlers[signum] = signal.signal(signum, self._on_signal)
            if self._shutdown_requested is not None:
                self._server.shutdown(graceful=self._shutdown_requested)
            if self.worker_events is None:
                log.info(
                    "Starting sluicegate %s: app %s, threads %d:%d (%s)",
                    self.version, self.app_name, threads[0], threads[1], threads_why,
                )
                for s in self.sockets:
                    log.info("Listening at: %s", s.url)
                sd_notify.notify("READY=1", "STATUS=serving")
            else:
                log.info("Worker %d: app %s, threads %d:%d (%s)", os.getpid(), self.app_name,
                         threads[0], threads[1], threads_why)
                _tell_master(self.worker_events, b"R")
            if self.max_requests or (self.cfg.timeout and self.cfg.max_stuck):
                threading.Thread(target=self._watch_for_recycling, daemon=True,
                                 name="sluicegate-recycling").start()
            cut = self._server.run() or 0
            if self.worker_events is not None:
                log.info("Worker %d served %d requests", os.getpid(),
                         self._server.stats["requests"])
        finally:
            for restored, handler in old_handlers.items():
                signal.signal(restored, signal.SIG_IGN if self.owns_process else handler)
            if old_wakeup is not None:
                signal.set_wakeup_fd(old_wakeup)
            for fd in (wake_r, wake_w):
                if fd != -1:
                    os.close(fd)
            if access_fd > 2:
                os.close(access_fd)
            for s in self.sockets:
                s.close()  # closes what was not handed over; removes our unix socket files
        stuck = self._server.stats["stuck_calls"] if self._server is not None else 0
        if stuck:
            log.warning("%d app call(s) stuck past --timeout still hold their threads", stuck)
        if cut:
            log.warning("Shutdown cut %d request(s) still in progress", cut)
        if cut or stuck:
            if self.owns_process:
                # App threads may still be inside the app. Finalizing the interpreter under them
                # makes CPython end each with pthread_exit when it next wants the GIL, which
                # aborts a Rust thread (SIGABRT, exit status -6): leave without finalizing.
                logging.shutdown()
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(1)
            return 1
        log.info("Shutdown complete")
        return 0

    def shutdown(self, graceful: bool = True) -> None:
        """Stop the server (from any thread); before it exists, stop it as soon as it does."""
        if self._server is None:
            self._shutdown_requested = graceful
        else:
            self._server.shutdown(graceful=graceful)

    def _on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        seen = self._signals_seen.get(signum, 0) + 1
        self._signals_seen[signum] = seen
        name = signal.Signals(signum).name
        if signum == signal.SIGQUIT or (signum == signal.SIGINT and seen > 1):
            log.info("Received %s%s: stopping now", name, " again" if seen > 1 else "")
            self.shutdown(graceful=False)
        elif signum in (signal.SIGTERM, signal.SIGINT):
            # The stop first, then the line: whoever reads the line (a test, an operator) finds
            # the stop already under way (the health path failing, the drain begun).
            self.shutdown(graceful=True)
            drain = f"; serving {self.cfg.drain_delay:g}s more with the health path failing" \
                if self.cfg.drain_delay else ""
            log.info(
                "Received %s: finishing in-flight requests (up to %gs)%s",
                name, self.cfg.graceful_timeout, drain,
            )
            if self.worker_events is None:
                sd_notify.notify("STOPPING=1", "STATUS=finishing in-flight requests")
        elif signum == signal.SIGUSR1:
            self._reopen_access_log()
        elif self.worker_events is None:
            what = "reloading and worker counts need a master (--workers N)"
            log.info("Received %s: ignored (%s)", name, what
                     if signum in (signal.SIGHUP, signal.SIGTTIN, signal.SIGTTOU) else
                     "see docs/operations.md")

    def _reopen_access_log(self) -> None:
        """USR1 (logrotate): open the access log's path again and put the new file under the
        descriptor the core writes to (`dup2`), so no line is lost or written to the old file
        after this returns."""
        path = self.cfg.access_log
        if self._access_fd <= 2 or not path:
            log.info("Received SIGUSR1: no access log file to reopen")
            return
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except OSError as e:
            log.error("Received SIGUSR1: cannot reopen access log %r: %s", path, e.strerror)
            return
        try:
            os.dup2(fd, self._access_fd, inheritable=False)
        finally:
            os.close(fd)
        log.info("Received SIGUSR1: access log %s reopened", path)

    def _watch_for_recycling(self) -> None:
        """Tell the master once this worker has served --max-requests requests (`M`) or has
        --max-stuck app calls past --timeout (`S`): the master starts a replacement, then stops
        this one gracefully. A single process has no master: it logs the stuck calls once."""
        max_stuck = self.cfg.max_stuck if self.cfg.timeout else 0
        while self._server is not None:
            try:
                stats = self._server.stats
            except Exception:
                return
            if self.max_requests and stats["requests"] >= self.max_requests:
                _tell_master(self.worker_events, b"M")
                return
            if max_stuck and stats["stuck_calls"] >= max_stuck:
                if self.worker_events is None:
                    log.error(
                        "%d app calls are stuck past --timeout and hold their threads; with "
                        "--workers this worker would be replaced (--max-stuck %d)",
                        stats["stuck_calls"], max_stuck,
                    )
                else:
                    log.error(
                        "Worker %d: %d app calls are stuck past --timeout (--max-stuck %d): "
                        "asking for a replacement", os.getpid(), stats["stuck_calls"], max_stuck,
                    )
                    _tell_master(self.worker_events, b"S")
                return
            time.sleep(RECYCLING_POLL_S)


#: Signals a server process handles (the master has its own set, master.py).
HANDLED_SIGNALS = (
    signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
    signal.SIGTTIN, signal.SIGTTOU, signal.SIGWINCH,
)

#: How often a worker with --max-requests or --timeout looks at its counts.
RECYCLING_POLL_S = 0.1


def _tell_master(fd: Optional[int], event: bytes) -> None:
    if fd is None:
        return
    try:
        os.write(fd, event)
    except OSError:
        pass  # the master is gone: its TERM follows, or we outlive it as nothing else can


def _import_core() -> Any:
    try:
        from . import _core
    except ImportError as e:
        raise StartError(
            f"the Rust core sluicegate._core cannot be imported ({e}); build it with ./dev build"
        ) from e
    return _core


def _open_access_log(path: Optional[str]) -> int:
    """The fd the core writes access log lines to: -1 = off, 1 = standard output ('-')."""
    if path is None:
        return -1
    if path == "-":
        return 1
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise StartError(f"cannot open access log {path!r}: {e.strerror}") from e
