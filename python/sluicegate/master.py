"""The master process of `--workers N`: it forks the workers, keeps their number, and turns
signals into the operations gunicorn users know. It holds the listening sockets (bound before
any fork, in listeners.py) and no request, and runs no app code unless `--preload`.

Each worker is a child with its own Rust event loop and thread pool, serving the master's
listening sockets (one shared socket per address: the kernel gives each new connection to one
of the workers waiting in accept; see docs/architecture.md, "Worker processes"). A worker talks
back on its own pipe, one byte per event: `R` when it is ready to serve (its server is built
and listening), `M` when it has served `--max-requests` and wants to be replaced.

Signals (docs/operations.md has the table):
- TERM, INT: graceful stop. Workers get TERM and finish their in-flight requests (up to
  `--graceful-timeout`); a second INT stops them at once (QUIT).
- QUIT: immediate stop.
- HUP: graceful reload. New workers are started (a fresh import of the app, unless
  `--preload`); once every one is ready, the old ones get TERM and drain. A new worker that
  fails at boot leaves the old ones serving.
- TTIN / TTOU: one worker more / one fewer (never fewer than one).
- USR1: passed to the workers (each reopens its access log file).
- USR2: upgrade. A new master is started from the same command line (a fresh interpreter, so
  a new sluicegate and a new app), given the listening sockets as systemd would give them
  (`LISTEN_FDS`); the pid file becomes `FILE.oldbin`. Both serve until the operator sends TERM
  to the old one, which then drains: no connection is refused at any point.
- WINCH: logged and ignored (no abrupt exit for a signal an operator sends by habit).

A worker that dies after it was ready is logged with its exit status or signal and replaced at
once. A worker that exits before it was ready failed at boot (its app does not import): the
master stops every worker and exits with status 3, after the worker printed the app's one-line
error, instead of forking again and again.
"""

from __future__ import annotations

import dataclasses
import os
import random
import select
import signal
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import sd_notify
from .errors import SluicegateError
from .listeners import BoundSocket
from .options import Config

#: The exit status of a server whose workers could not boot (gunicorn's too).
BOOT_FAILED = 3

#: How often the master looks at its workers when no event comes (for the stop deadline).
TICK_S = 0.5

#: Entries of the shared connection-count table (src/io/balance.rs): the most workers at once.
SLOTS = 1024

#: An entry no live worker owns (u32::MAX in the core).
VACANT = b"\xff\xff\xff\xff"

#: Set in the environment of a master started by USR2: the old master's pid.
UPGRADE_ENV = "SLUICEGATE_UPGRADED_FROM"

#: Options a reload cannot change: the sockets are the master's, bound once, and the master's
#: own process settings are set once (a USR2 upgrade applies them).
RESTART_ONLY = ("bind", "backlog", "user", "group", "umask", "pid", "preload", "config")

#: Signals the master handles; everything else keeps its default.
HANDLED = (
    signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTTIN,
    signal.SIGTTOU, signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH, signal.SIGCHLD,
)


@dataclasses.dataclass
class Worker:
    pid: int
    pipe: int  # read end of the worker's event pipe
    generation: int
    slot: int  # its entry in the connection-count table
    ready: bool = False
    retiring: bool = False  # asked to stop (TERM sent), or replaced
    wants_out: bool = False  # reached --max-requests; replaced once its successor is ready


class Master:
    """Forks and supervises the workers of one server; `run()` returns the exit status."""

    def __init__(
        self,
        cfg: Config,
        sockets: List[BoundSocket],
        workers: int,
        boot_worker: Callable[[Config, int, int, Tuple[int, int, int], int], int],
        log: Any,
        *,
        on_ready: Callable[[], None] = lambda: None,
        restart: Optional[Tuple[List[str], str]] = None,
        reread: Optional[Callable[[], Config]] = None,
    ) -> None:
        """`boot_worker(cfg, event_fd, max_requests, balance, workers)` runs in each forked child
        and returns its exit status; it writes `R` and `M` to `event_fd`; `balance` is (fd,
        slots, slot) of the connection-count table. `reread()` resolves the options again for
        a reload (HUP); a SluicegateError from it abandons the reload. `on_ready()` runs once, when the first
        workers are all ready."""
        self.cfg = cfg
        self.sockets = sockets
        self.target = workers
        self.boot_worker = boot_worker
        self.log = log
        self.workers: Dict[int, Worker] = {}
        self.generation = 0
        self.signals: List[int] = []
        self.stopping: Optional[float] = None  # deadline once a stop began
        self.exit_status = 0
        self.reload_pending: Optional[int] = None  # the generation being started by HUP
        self.on_ready = on_ready
        self.announced = False
        self.restart = restart
        self.reread = reread
        self.upgraded_to: Optional[int] = None
        self._wake_r, self._wake_w = os.pipe()
        self.reloader: Optional[Any] = None
        self.code_changed: List[List[str]] = []  # batches from the reloader thread
        # Shared with every worker (inherited over fork): how many connections each holds.
        self.table = os.memfd_create("sluicegate-balance", os.MFD_CLOEXEC)
        os.ftruncate(self.table, SLOTS * 4)
        os.pwrite(self.table, VACANT * SLOTS, 0)

    # -- the loop --------------------------------------------------------------------------

    def run(self) -> int:
        for fd in (self._wake_r, self._wake_w):
            os.set_blocking(fd, False)
            os.set_inheritable(fd, False)
        old_wakeup = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        for signum in HANDLED:
            signal.signal(signum, self._on_signal)
        if self.cfg.reload:
            from .reloader import Reloader
            self.reloader = Reloader(os.getcwd(), self.cfg.reload_extra, self._on_code_change)
            self.reloader.start()
        try:
            self.log.info("Master %d starting %d worker(s)", os.getpid(), self.target)
            for _ in range(self.target):
                self._spawn()
            while self.workers or self.stopping is None:
                self._wait_for_events()
                self._reap()
                for signum in self._take_signals():
                    self._handle(signum)
                for paths in self._take_code_changes():
                    if self.stopping is None:
                        shown = ", ".join(os.path.relpath(p) for p in paths[:3])
                        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
                        self._reload(f"Code changed ({shown}{more})")
                self._maintain()
                if self.stopping is not None and time.monotonic() > self.stopping:
                    for w in self.workers.values():
                        self._kill(w, signal.SIGKILL)
                    self.stopping = time.monotonic() + 5
            self.log.info("Shutdown complete")
            return self.exit_status
        finally:
            if self.reloader is not None:
                self.reloader.stop()
            signal.set_wakeup_fd(old_wakeup)
            for signum in HANDLED:
                signal.signal(signum, signal.SIG_DFL if signum == signal.SIGCHLD else signal.SIG_IGN)
            for s in self.sockets:
                s.close()
            os.close(self.table)

    def _wait_for_events(self) -> None:
        fds = [self._wake_r] + [w.pipe for w in self.workers.values()]
        try:
            readable, _, _ = select.select(fds, [], [], TICK_S)
        except InterruptedError:
            return
        if self._wake_r in readable:
            try:
                while os.read(self._wake_r, 4096):
                    pass
            except BlockingIOError:
                pass
        for w in list(self.workers.values()):
            if w.pipe in readable:
                self._read_events(w)

    def _read_events(self, w: Worker) -> None:
        try:
            data = os.read(w.pipe, 64)
        except OSError:
            data = b""
        if b"R" in data and not w.ready:
            w.ready = True
            self.log.info("Worker %d ready", w.pid)
        if (b"M" in data or b"S" in data) and not w.wants_out and not w.retiring:
            w.wants_out = True  # _maintain starts its replacement, then retires it
            why = "reached --max-requests" if b"M" in data else "has --max-stuck stuck calls"
            self.log.info("Worker %d %s: starting its replacement", w.pid, why)

    def _on_code_change(self, paths: List[str]) -> None:
        """From the reloader's thread: queue the batch and wake the loop."""
        self.code_changed.append(paths)
        try:
            os.write(self._wake_w, b"c")
        except OSError:
            pass

    def _take_code_changes(self) -> List[List[str]]:
        taken, self.code_changed = self.code_changed, []
        return taken

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.signals.append(signum)

    def _take_signals(self) -> List[int]:
        taken, self.signals = self.signals, []
        return taken

    # -- signals ---------------------------------------------------------------------------

    def _handle(self, signum: int) -> None:
        if signum == signal.SIGCHLD:
            return  # reaped above
        name = signal.Signals(signum).name
        if signum in (signal.SIGTERM, signal.SIGINT):
            if self.stopping is not None and signum == signal.SIGINT:
                self.log.info("Received %s again: stopping now", name)
                self._stop(graceful=False)
            elif self.stopping is None:
                self.log.info(
                    "Received %s: stopping %d worker(s), in-flight requests get up to %gs",
                    name, len(self.workers), self.cfg.graceful_timeout,
                )
                self._stop(graceful=True)
        elif signum == signal.SIGQUIT:
            self.log.info("Received %s: stopping now", name)
            self._stop(graceful=False)
        elif self.stopping is not None:
            return
        elif signum == signal.SIGHUP:
            self._reload("Received SIGHUP")
        elif signum == signal.SIGTTIN:
            self.target += 1
            self.log.info("Received %s: %d worker(s)", name, self.target)
        elif signum == signal.SIGTTOU:
            if self.target > 1:
                self.target -= 1
            self.log.info("Received %s: %d worker(s)", name, self.target)
        elif signum == signal.SIGUSR2:
            self._upgrade()
        elif signum == signal.SIGUSR1:
            self.log.info("Received %s: workers reopen their log files", name)
            for w in self.workers.values():
                self._kill(w, signal.SIGUSR1)
        else:
            self.log.info("Received %s: ignored", name)

    def _stop(self, graceful: bool) -> None:
        sd_notify.notify("STOPPING=1", "STATUS=stopping")
        deadline = self.cfg.drain_delay + self.cfg.graceful_timeout + 5 if graceful else 5
        self.stopping = time.monotonic() + deadline
        for w in self.workers.values():
            w.retiring = True
            if not w.ready:  # still importing the app: nothing in flight to finish
                self._kill(w, signal.SIGKILL)
            else:
                self._kill(w, signal.SIGTERM if graceful else signal.SIGQUIT)

    def _reload(self, why: str) -> None:
        if self.reread is not None:
            try:
                cfg = self.reread()
            except SluicegateError as e:
                self.log.error("%s: the configuration is not valid (%s); the "
                               "workers keep serving with the previous one", why, e)
                return
            changed = [f.name for f in dataclasses.fields(cfg)
                       if getattr(cfg, f.name) != getattr(self.cfg, f.name)]
            kept = [n for n in changed if n in RESTART_ONLY]
            if kept:
                self.log.warning("%s: %s changed but only take effect on a restart", why,
                                 ", ".join(kept))
            self.cfg = cfg
            if cfg.workers:
                self.target = cfg.workers
            if changed:
                self.log.info("%s: configuration re-read (changed: %s)", why, ", ".join(changed))
        self.log.info("%s: starting %d new worker(s), then stopping the old ones", why,
                      self.target)
        sd_notify.notify("RELOADING=1", sd_notify.monotonic_usec(), "STATUS=reloading")
        self.generation += 1
        self.reload_pending = self.generation
        for _ in range(self.target):
            self._spawn()

    def _upgrade(self) -> None:
        """USR2: start a new master on the same sockets (see the module doc)."""
        if self.restart is None:
            self.log.info("Received SIGUSR2: ignored (an upgrade needs the sluicegate command)")
            return
        if self.upgraded_to is not None and _alive(self.upgraded_to):
            self.log.info("Received SIGUSR2: ignored (new master %d already started)",
                          self.upgraded_to)
            return
        argv, cwd = self.restart
        if self.cfg.pid and os.path.exists(self.cfg.pid):
            try:
                os.replace(self.cfg.pid, self.cfg.pid + ".oldbin")
            except OSError as e:
                self.log.error("Received SIGUSR2: cannot rename the pid file: %s", e.strerror)
        pid = os.fork()
        if pid == 0:  # the new master, once exec'd
            try:
                # Above every descriptor the sockets use, then down to 3, 4, ... in order.
                high = [os.dup(s.fileno()) for s in self.sockets]
                moved = [fcntl_dupfd(fd, 1000 + i) for i, fd in enumerate(high)]
                for i, fd in enumerate(moved):
                    os.dup2(fd, 3 + i, inheritable=True)
                env = dict(os.environ)
                env.update(LISTEN_FDS=str(len(self.sockets)), LISTEN_PID=str(os.getpid()))
                env[UPGRADE_ENV] = str(os.getppid())
                env.pop("LISTEN_FDNAMES", None)
                os.chdir(cwd)
                os.execve(argv[0], argv, env)
            except BaseException as e:  # noqa: BLE001 - nothing may return into the old master
                print(f"sluicegate: error: cannot start the new master: {e}", file=sys.stderr,
                      flush=True)
            finally:
                os._exit(1)
        self.upgraded_to = pid
        for s in self.sockets:
            s.forget_unix_file()  # the new master removes them when it ends
        self.log.info("Received SIGUSR2: started new master %d on the same sockets; send TERM to "
                      "this one (%d) once it serves", pid, os.getpid())

    def _upgrade_failed(self, status: int) -> None:
        """The new master of an upgrade ended while this one runs: this one stays in charge."""
        if self.cfg.pid and os.path.exists(self.cfg.pid + ".oldbin"):
            try:
                os.replace(self.cfg.pid + ".oldbin", self.cfg.pid)
            except OSError:
                pass
        for s in self.sockets:
            s.reclaim_unix_file()
        self.log.error("New master %d exited (%s): this master keeps serving",
                       self.upgraded_to, _describe(status))
        self.upgraded_to = None

    # -- workers ---------------------------------------------------------------------------

    def _spawn(self) -> None:
        used = {w.slot for w in self.workers.values()}
        slot = next((i for i in range(SLOTS) if i not in used), None)
        if slot is None:
            self.log.error("Cannot start more than %d workers", SLOTS)
            return
        os.pwrite(self.table, b"\0\0\0\0", slot * 4)
        r, w = os.pipe()
        jitter = 0
        if self.cfg.max_requests and self.cfg.max_requests_jitter:
            jitter = random.randint(0, self.cfg.max_requests_jitter)
        pid = os.fork()
        if pid == 0:  # the worker
            status = 1
            try:
                os.close(r)
                os.close(self._wake_r)
                os.close(self._wake_w)
                for other in self.workers.values():
                    os.close(other.pipe)
                signal.set_wakeup_fd(-1)
                for signum in HANDLED:
                    signal.signal(signum, signal.SIG_DFL)
                # Ctrl-C reaches the whole process group: the master turns it into TERM for
                # the workers; the worker's own handler (installed with its server) takes over.
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                os.environ.pop("NOTIFY_SOCKET", None)  # only the master speaks to systemd
                for s in self.sockets:
                    s.forget_unix_file()  # the master removes it, once, at the end
                status = self.boot_worker(self.cfg, w, self.cfg.max_requests + jitter,
                                          (self.table, SLOTS, slot), self.target)
            except SluicegateError as e:
                print(f"sluicegate: error: {e}", file=sys.stderr, flush=True)
                status = BOOT_FAILED
            except BaseException:  # never return into the master's code in a child
                import traceback
                traceback.print_exc()
                status = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        os.close(w)
        os.set_inheritable(r, False)
        self.workers[pid] = Worker(pid, r, self.generation, slot)
        self.log.info("Booting worker with pid %d", pid)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.upgraded_to:
                self._upgrade_failed(status)
                continue
            w = self.workers.pop(pid, None)
            if w is None:
                continue
            self._read_events(w)
            os.close(w.pipe)
            os.pwrite(self.table, VACANT, w.slot * 4)
            how = _describe(status)
            if self.stopping is not None or w.retiring:
                self.log.info("Worker %d stopped (%s)", pid, how)
                if os.waitstatus_to_exitcode(status) not in (0,) and self.stopping is not None:
                    self.exit_status = self.exit_status or 1
                continue
            if not w.ready:
                self.log.error("Worker %d failed to boot (%s): stopping", pid, how)
                if self.reload_pending == w.generation:
                    # A reload whose new code does not import: keep the old workers serving.
                    self._abandon_generation(w.generation)
                    continue
                self.exit_status = BOOT_FAILED
                self._stop(graceful=False)
                continue
            self.log.error("Worker %d died (%s): starting a replacement", pid, how)

    def _abandon_generation(self, generation: int) -> None:
        self.log.error("Reload abandoned: the old workers keep serving")
        sd_notify.notify("READY=1", "STATUS=reload failed; the old workers keep serving")
        self.reload_pending = None
        for w in self.workers.values():
            if w.generation == generation:
                w.retiring = True
                self._kill(w, signal.SIGQUIT)

    def _check_memory(self) -> None:
        """--max-rss: a ready worker over the limit is replaced like one at --max-requests."""
        if not self.cfg.max_rss:
            return
        for w in self.workers.values():
            if not w.ready or w.retiring or w.wants_out:
                continue
            rss = worker_rss(w.pid)
            if rss is not None and rss > self.cfg.max_rss:
                w.wants_out = True
                self.log.info("Worker %d uses %d MiB (over --max-rss): starting its replacement",
                              w.pid, rss // (1024 * 1024))

    def _maintain(self) -> None:
        """Keep `target` live workers; retire what a reload or max-requests replaced."""
        if self.stopping is not None:
            return
        self._check_memory()
        if not self.announced and sum(1 for w in self.workers.values() if w.ready) >= self.target:
            self.announced = True
            self.on_ready()
        if self.reload_pending is not None:
            new = [w for w in self.workers.values() if w.generation == self.reload_pending]
            if len(new) >= self.target and all(w.ready for w in new):
                for w in self.workers.values():
                    if w.generation < self.reload_pending and not w.retiring:
                        w.retiring = True
                        self._kill(w, signal.SIGTERM)
                self.log.info("Reload done: %d new worker(s) serving", len(new))
                sd_notify.notify("READY=1", f"STATUS=serving with {len(new)} worker(s)")
                self.reload_pending = None
            return
        live = [w for w in self.workers.values() if not w.retiring]
        # A worker that asked out leaves once as many others are ready as it takes.
        staying = [w for w in live if not w.wants_out]
        for w in live:
            if w.wants_out and sum(1 for s in staying if s.ready) >= self.target:
                w.retiring = True
                self._kill(w, signal.SIGTERM)
        live = [w for w in self.workers.values() if not w.retiring]
        staying = [w for w in live if not w.wants_out]
        for _ in range(self.target - len(staying)):
            self._spawn()
        extra = len(staying) - self.target
        for w in sorted(staying, key=lambda w: w.pid)[:max(0, extra)]:
            w.retiring = True
            self._kill(w, signal.SIGTERM)

    def _kill(self, w: Worker, signum: int) -> None:
        try:
            os.kill(w.pid, signum)
        except ProcessLookupError:
            pass


def fcntl_dupfd(fd: int, lowest: int) -> int:
    """A duplicate of `fd` numbered `lowest` or above (F_DUPFD)."""
    import fcntl
    return fcntl.fcntl(fd, fcntl.F_DUPFD, lowest)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def worker_rss(pid: int) -> Optional[int]:
    """A process's resident memory in bytes (VmRSS), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def write_pid_file(path: str) -> None:
    """This process's pid, written atomically (a temporary file renamed over the path)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write(f"{os.getpid()}\n")
        os.replace(tmp, path)
    except OSError as e:
        raise SluicegateError(f"cannot write the pid file {path!r}: {e.strerror}") from e


def remove_pid_file(path: str) -> None:
    """Remove the pid file if it still names this process."""
    try:
        with open(path) as f:
            if f.read().strip() != str(os.getpid()):
                return
        os.unlink(path)
    except OSError:
        pass  # gone already, or not ours to remove


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"killed by {name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
