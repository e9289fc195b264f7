"""One Rust server (`_core.Server`) in this process, on sockets already bound: what a single
server and a worker process share.

`ServerProcess.run()`: open the access log and the signal pipe (signals.py) -> build the core
server (config.py) -> install the signal handlers -> `announce()` (the role's readiness: a log
line and sd_notify, or a message to the master) -> `Server.run()` until a stop -> close what
it opened. Its lifecycle is `Phase`, with the legal moves in `MOVES`. The roles (single.py,
worker.py) fill in what differs: how readiness is told, what an operation signal the role
cannot carry out does, and what to watch while serving.
"""

from __future__ import annotations

import enum
import logging
import os
import signal
import socket
import stat
import sys
import threading
import time
from types import FrameType

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple

from . import gunicorn_logging, logs, signals, thread_bounds, thread_names
from .config import core_config, metrics_address
from .errors import StartError
from .listeners import BoundSocket
from .logs import log
from .signals import Op
from .validated import Config

#: How often a server with --max-requests or --max-stuck looks at its counts: at 14,000
#: requests/s a worker served up to 1,400 past its limit before it noticed with 0.1 s; a look
#: (one stats() dict) costs microseconds.
RECYCLING_POLL_S = 0.02


class Phase(enum.Enum):
    """Where a server process is in its life."""

    STARTING = "starting"  # building the core server; a stop asked now applies once it exists
    SERVING = "serving"
    DRAINING = "draining"  # a graceful stop: in-flight requests finish
    STOPPING_NOW = "stopping now"  # every connection closes
    STOPPED = "stopped"


#: The legal moves. A graceful stop may be asked again (every TERM is passed on); a stop at once
#: is never turned back into a graceful one.
MOVES: Dict[Phase, FrozenSet[Phase]] = {
    Phase.STARTING: frozenset({Phase.SERVING, Phase.DRAINING, Phase.STOPPING_NOW, Phase.STOPPED}),
    Phase.SERVING: frozenset({Phase.DRAINING, Phase.STOPPING_NOW, Phase.STOPPED}),
    Phase.DRAINING: frozenset({Phase.DRAINING, Phase.STOPPING_NOW, Phase.STOPPED}),
    Phase.STOPPING_NOW: frozenset({Phase.STOPPED}),
    Phase.STOPPED: frozenset(),
}


class ServerProcess:
    """One server in this process; subclasses are the roles (single.py, worker.py).

    `owns_process`: after shutdown, the handled signals stay ignored while the process exits
    (a second Ctrl-C just after a quick shutdown cannot turn a clean exit into a
    KeyboardInterrupt), and a shutdown that leaves app threads behind ends the process without
    finalizing the interpreter. Otherwise (serve() inside someone's program) the previous
    handlers are restored and run() returns 1.
    """

    def __init__(
        self, app: Callable[..., Any], cfg: Config, sockets: List[BoundSocket], *,
        app_name: str = "", version: str = "", owns_process: bool = False, workers: int = 1,
        balance: Tuple[int, int, int] = (-1, 0, 0),
    ) -> None:
        """`workers`: how many processes share the machine (the thread bounds' budget);
        `balance`: (fd, slots, slot) of the master's connection-count table, fd -1 alone."""
        self.app = app
        self.cfg = cfg
        self.sockets = sockets
        self.app_name = app_name
        self.version = version
        self.owns_process = owns_process
        self.workers = workers
        self.balance = balance
        self.phase = Phase.STARTING
        self._lock = threading.RLock()  # shutdown() may come from any thread, or a handler
        self._server: Any = None
        self._signals_seen: Dict[int, int] = {}
        self._access_fd = -1
        #: Run on INT or QUIT, before the stop they ask for (gunicorn's worker_int hook).
        self.on_interrupt: Optional[Callable[[], None]] = None

    # -- what the roles fill in ------------------------------------------------------------

    def announce(self, threads: Tuple[int, int], why: str) -> None:
        """The server is built and its handlers are in place: say so."""
        raise NotImplementedError

    def on_stopping(self) -> None:
        """A graceful stop began (after its log line)."""

    def on_master_op(self, name: str, op: Op) -> None:
        """A signal only a master can carry out (signals.MASTER_ONLY) reached this process."""

    def watches(self) -> bool:
        """Whether `watch(stats)` should look at the counts while serving."""
        return False

    def watch(self, stats: Dict[str, Any]) -> bool:
        """Look at the core's counts; True when done watching."""
        return True

    def after_run(self) -> None:
        """`Server.run()` returned (the server stopped)."""

    def start_control(self, server: Any) -> None:
        """The core `server` is built: answer `sluicegate ctl` (control_agent.py) from it."""

    def stop_control(self) -> None:
        """The server is ending: stop answering `sluicegate ctl`."""

    # -- the life --------------------------------------------------------------------------

    def _move(self, to: Phase) -> bool:
        """Move to `to` if that is a legal move from here (with the lock held); say if it was."""
        if to not in MOVES[self.phase]:
            return False
        self.phase = to
        return True

    def run(self) -> int:
        logs.reclaim()  # the app, imported by now, may have reconfigured logging
        pipe: Optional[signals.SignalPipe] = None
        access_fd = -1
        # set_wakeup_fd and signal handlers exist only in the main thread; serve() run in
        # another thread is stopped by calling shutdown() instead.
        on_main_thread = threading.current_thread() is threading.main_thread()
        cut = 0
        try:
            core = import_core()
            probe_metrics_bind(metrics_address(self.cfg.metrics_bind, self.balance[2]
                                               if self.balance[0] >= 0 else None))
            sink = gunicorn_logging.access_sink() if gunicorn_logging.routes_access() else None
            access_fd = self._access_fd = -1 if sink else open_access_log(self.cfg.access_log)
            if on_main_thread:
                pipe = signals.SignalPipe(signals.SERVER_SIGNALS)
            threads, threads_why = thread_bounds.choose(self.cfg.threads, self.workers)
            config = core_config(
                self.cfg, threads=threads, access_log_fd=access_fd, errors=sys.stderr,
                signal_fd=pipe.read_fd if pipe else -1, app_name=self.app_name,
                balance=self.balance, access_log_sink=sink,
            )
            listeners = [s.to_listener() for s in self.sockets]
            if self.cfg.proxy_protocol:  # every HTTP listener expects a PROXY header
                listeners = [(*rest, "proxy" if wire == "http" else wire, tls)
                             for *rest, wire, tls in listeners]
            try:
                server = core.Server(self.app, listeners, config)
            except OSError as e:
                # The core binds --metrics-bind while it is built (before announce()): lost
                # to another process since the probe, it fails the boot with one line too.
                if str(e).startswith("--metrics-bind"):
                    raise StartError(str(e)) from None
                raise
            if pipe is not None:
                pipe.install(self._on_signal)
            with self._lock:
                self._server = server
                if self.phase is not Phase.STARTING:  # a stop came while it was built
                    server.shutdown(graceful=self.phase is Phase.DRAINING)
                self._move(Phase.SERVING)
            self.start_control(server)
            self.announce(threads, threads_why)
            if self.watches():
                thread_names.start(self._watch_loop, "sg-recycling")
            cut = server.run() or 0
            self.after_run()
        finally:
            self.stop_control()
            if pipe is not None:
                pipe.uninstall("ignore" if self.owns_process else "previous")
                pipe.close()
            if access_fd > 2:
                os.close(access_fd)
            for s in self.sockets:
                s.close()  # closes what was not handed over; removes our unix socket files
            with self._lock:
                self._move(Phase.STOPPED)
        return self._finish(cut)

    def _finish(self, cut: int) -> int:
        stuck = self._server.stats["stuck_calls"] if self._server is not None else 0
        if stuck:
            log.warning("%d app call(s) stuck past --timeout still hold their threads", stuck)
        if cut:
            log.warning("Shutdown cut %d request(s) still in progress", cut)
        if not (cut or stuck):
            log.info("Shutdown complete")
            return 0
        if self.owns_process:
            # App threads may still be inside the app. Finalizing the interpreter under them
            # makes CPython end each with pthread_exit when it next wants the GIL, which
            # aborts a Rust thread (SIGABRT, exit status -6): leave without finalizing.
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)
        return 1

    def shutdown(self, graceful: bool = True) -> None:
        """Stop the server (from any thread); before it exists, stop it as soon as it does."""
        with self._lock:
            if not self._move(Phase.DRAINING if graceful else Phase.STOPPING_NOW):
                return
            if self._server is not None:
                self._server.shutdown(graceful=graceful)

    # -- signals ---------------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        seen = self._signals_seen.get(signum, 0) + 1
        self._signals_seen[signum] = seen
        name = signal.Signals(signum).name
        op = signals.op(signum)
        if signum in (signal.SIGINT, signal.SIGQUIT) and self.on_interrupt is not None:
            self.on_interrupt()
        if op is Op.STOP_NOW or (op is Op.STOP and signum == signal.SIGINT and seen > 1):
            log.info("Received %s%s: stopping now", name, " again" if seen > 1 else "")
            self.shutdown(graceful=False)
        elif op is Op.STOP:
            # The stop first, then the line: whoever reads the line (a test, an operator) finds
            # the stop already under way (the health path failing, the drain begun).
            self.shutdown(graceful=True)
            drain = f"; serving {self.cfg.drain_delay:g}s more with the health path failing" \
                if self.cfg.drain_delay else ""
            log.info("Received %s: finishing in-flight requests (up to %gs)%s",
                     name, self.cfg.graceful_timeout, drain)
            self.on_stopping()
        elif op is Op.REOPEN_LOGS:
            logs.reopen_error_log(name)
            self._reopen_access_log()
        elif op is not None:
            self.on_master_op(name, op)

    def _reopen_access_log(self) -> None:
        """USR1 (logrotate): open the access log's path again and put the new file under the
        descriptor the core writes to (`dup2`), so no line is lost or written to the old file
        after this returns."""
        path = self.cfg.access_log
        if gunicorn_logging.routes_access():
            gunicorn_logging.reopen_files()
            log.info("Received SIGUSR1: the logging configuration's files reopened")
            return
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

    def _watch_loop(self) -> None:
        while self._server is not None:
            try:
                stats = self._server.stats
            except Exception:
                return
            if self.watch(stats):
                return
            time.sleep(RECYCLING_POLL_S)


def import_core() -> Any:
    """The Rust extension, or StartError saying how to build it."""
    try:
        from . import _core
    except ImportError as e:
        raise StartError(
            f"the Rust core sluicegate._core cannot be imported ({e}); build it with ./dev build"
        ) from e
    return _core


def probe_metrics_bind(address: str) -> None:
    """StartError, one line, if this process's `--metrics-bind` cannot be listened on: before
    the server is built and says it is ready, with the reasons said in the front's words (the
    core binds it while the server is built, before `announce()`, and a bind it fails then is
    a StartError too). A worker whose metrics port is busy so fails its boot, and its master
    retries it with back-off, where it used to say ready, die, and be replaced at once, again
    and again. A unix path holding anything but a dead socket is refused, never replaced."""
    if not address:
        return
    if address.startswith("unix:"):
        path = address[len("unix:"):]
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        except OSError as e:
            raise StartError(f"--metrics-bind {address}: {e.strerror}") from None
        if not stat.S_ISSOCK(mode):
            raise StartError(f"--metrics-bind {address}: {path} exists and is not a socket")
        with socket.socket(socket.AF_UNIX) as s:
            try:
                s.connect(path)
            except OSError:
                return  # a socket nobody listens on: the core replaces it
        raise StartError(f"--metrics-bind {address}: another process listens on {path}")
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        family = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the core's bind
            s.bind((host, int(port)))
            s.listen(1)
    except (OSError, ValueError) as e:
        why = getattr(e, "strerror", None) or str(e)
        raise StartError(f"--metrics-bind {address}: cannot listen: {why}") from None


def open_access_log(path: Optional[str]) -> int:
    """The fd the core writes access log lines to: -1 = off, 1 = standard output ('-')."""
    if path is None:
        return -1
    if path == "-":
        return 1
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise StartError(f"cannot open access log {path!r}: {e.strerror}") from e
