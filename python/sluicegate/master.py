"""The master process of `--workers N`: it forks the workers, keeps their number, and turns
signals into the operations gunicorn users know. It holds the listening sockets (bound before
any fork, by the startup pipeline in supervisor.py) and no request, and runs no app code unless
`--preload`. Without `--preload` it keeps the user it was started as and each worker switches
to `--user`/`--group` once forked (privileges.py), so that a USR2 upgrade can start a new master.

Each worker is a child with its own Rust event loop and thread pool (worker.py), serving the
master's listening sockets (one shared socket per address: the kernel gives each new connection
to one of the workers waiting in accept; see docs/architecture.md, "Worker processes"). What
the two say to each other is in messages.py; what each signal means, in signals.py. The master
does not load the Rust extension (each worker does, after its fork: messages.py,
`stop_with_master`), unless TLS, --attach-daemon or a --preload app needs it there
(docs/architecture.md, "Worker processes").

The master's life is `State` and each worker's, as the master sees it, is `Life`; the legal
moves of each are in one table beside it (`STATE_MOVES`, `LIFE_MOVES`; children.py). A reload
and an upgrade are carried out by `Reloads` (master_reload.py), a part of `Master`.

- STOP (TERM, INT): workers get TERM and finish their in-flight requests (up to
  `--graceful-timeout`); a second INT stops them at once (QUIT). STOP_NOW (QUIT): at once.
  The master closes its copies of the listening sockets at once, so that new connections are
  refused as soon as the workers stop accepting.
- RELOAD (HUP, or a code change with `--reload`): the options are resolved again (and the TLS
  certificate and key read again, tls.py: rotation without a restart; both read on a thread
  with a timeout, reading.py, so that a file that blocks never stops the loop), new workers
  are started (a fresh import of the app, unless `--preload`); once every one is ready the old
  ones get TERM and drain. A new worker that fails at boot abandons the reload: the old ones
  keep serving. Before the first workers are up there is nothing to keep: a reload then
  restarts the boot with the new configuration. One generation boots at a time: a reload asked
  while one boots supersedes it (its workers are stopped; the newest configuration wins, and an
  abandoned reload goes back to the configuration that served before the first of them).
- MORE_WORKERS / FEWER_WORKERS (TTIN / TTOU): one worker more / one fewer (never fewer than one).
- REOPEN_LOGS (USR1): the master reopens the --error-log file, and passes it to the workers
  (each reopens its access log file and the error log).
- UPGRADE (USR2): a new master on the same sockets (upgrade.py); the pid file becomes
  `FILE.oldbin` (pidfile.py). Both serve until the operator sends TERM to the old one.

Beside the workers: the side commands of --attach-daemon and --smart-attach-daemon
(side_commands.py: started before the first workers, reaped here, stopped at the end, untouched
by a reload); --touch-reload's files, looked at on every pass of the loop (touch.py); workers
older than --max-worker-lifetime replaced as --max-rss replaces one (master_upkeep.py, `_check_memory`).

Workers that die or cannot boot (`_reap`): a worker that dies after it was ready is replaced
at once; one that fails to boot stops the server only among the first workers (status 3), and
is otherwise retried from `RETRY_FIRST_S` up to `RETRY_MAX_S` (docs/operations.md). Keeping the
number of workers, and retiring and killing them, is `Upkeep` (master_upkeep.py), a part of
`Master` too.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

    from .hook_objects import HookServer, HookWorker
    from .metrics_total import Aggregate
    from .side_commands import SideCommands
    from .uwsgi_stats import StatsServer

from . import control_master, log_touch, logs, messages, privileges, sd_notify, signals
from .config import metrics_address
from .control_protocol import path_for
from .core_server import probe_metrics_bind
from .errors import SluicegateError
from .hook_types import HookExit, exit_status
from .listeners import BoundSocket
from .logs import log
from .messages import Message
from .reading import Reading, wait_ended_threads
from .signals import Op
from .uwsgi_compat import requests_beyond
from .validated import Config
from .children import STATE_MOVES, Child, Life, State, alive as _alive, describe_exit
from .master_reload import Reloads
from .master_upkeep import KILL_GRACE_S, Upkeep
from .touch import TouchWatch

#: The exit status of a server whose workers could not boot (gunicorn's too).
BOOT_FAILED = 3

#: How often the master looks at its workers when no event comes (for the stop deadline).
TICK_S = 0.5

#: Entries of the shared connection-count table (src/io/balance.rs): the most workers at once.
SLOTS = 1024

#: An entry no live worker owns (u32::MAX in the core).
VACANT = b"\xff\xff\xff\xff"

if TYPE_CHECKING:
    #: `boot_worker(cfg, events_fd, max_requests, balance, workers, metrics_fd, worker_id)`: run
    #: in each forked child, returns its exit status (supervisor.py builds it: load the app, run a
    #: WorkerServer). `metrics_fd`: where it leaves its last metrics reading, or -1. `worker_id`:
    #: uWSGI's worker id, from 1 (`Child.wid` + 1: a replacement keeps its predecessor's).
    BootWorker = Callable[[Config, int, int, Tuple[int, int, int], int, int, int], int]


class Master(Reloads, Upkeep):
    """Forks and supervises the workers of one server; `run()` returns the exit status."""

    def __init__(
        self, cfg: Config, sockets: List[BoundSocket], workers: int, boot_worker: BootWorker, *,
        upgraded: bool = False,
        restart: Optional[Tuple[List[str], str]] = None,
        reread: Optional[Callable[[], Config]] = None,
    ) -> None:
        """`upgraded`: this master was started by USR2 (the unix socket files become its own
        once it serves). `restart`: the command line and directory to exec on USR2 (None: no
        upgrade). `reread()` resolves the options again for a reload; a SluicegateError from it
        abandons the reload."""
        self.cfg = cfg
        self.sockets = sockets
        self.target = workers
        self.boot_worker = boot_worker
        self.upgraded = upgraded
        self.restart = restart
        self.reread = reread
        self.state = State.STARTING
        self.workers: Dict[int, Child] = {}
        self.generation = 0  # the newest; while RELOADING, the one booting
        self.worker_age = 0  # workers started so far: gunicorn's worker age
        self.deadline = 0.0  # while STOPPING: when what is left gets SIGKILL
        self.exit_status = 0
        self.new_master: Optional[int] = None  # the pid a USR2 started, while it lives
        self.before_reload: Optional[Tuple[Config, int]] = None  # while RELOADING: cfg, target
        self.retry_delay = 0.0  # after a replacement failed to boot: the next wait
        self.retry_at = 0.0  # no replacement is started before this (time.monotonic())
        self.failed_boots = 0  # replacements that failed to boot, ever (in systemd's STATUS=)
        self.signals: List[int] = []
        self.pipe = signals.SignalPipe(signals.MASTER_SIGNALS)
        self.reloader: Optional[Any] = None
        self.reading: Optional[Tuple[str, Reading]] = None  # a reload's files, being read
        self.code_changed: List[List[str]] = []  # batches from the reloader thread
        # Shared with every worker (inherited over fork): how many connections each holds.
        self.table = os.memfd_create("sluicegate-balance", os.MFD_CLOEXEC)
        os.ftruncate(self.table, (SLOTS + 1) * 4)  # and the high-water mark (balance.rs)
        os.pwrite(self.table, VACANT * SLOTS, 0)
        # --metrics-bind is the master's: the sum over the workers (metrics_total.py).
        self.metrics: Optional[Aggregate] = None
        self.control: Optional[control_master.MasterControl] = None  # `sluicegate ctl` (control_master.py)
        self.stats: Optional[StatsServer] = None  # --stats (uwsgi_stats.py)
        self.spawns: Dict[int, int] = {}  # uWSGI's worker id -> starts of that id (--stats)
        self.touched = log_touch.Touched(cfg.touch_logreopen)  # --touch-logreopen
        # --attach-daemon, --smart-attach-daemon (side_commands.py, imported with them only).
        self.side: Optional[SideCommands] = None
        if cfg.attach_daemon or cfg.smart_attach_daemon:
            from .side_commands import SideCommands

            self.side = SideCommands(cfg.attach_daemon, cfg.smart_attach_daemon,
                                     signals.MASTER_SIGNALS)
        self.touch_reload = TouchWatch(cfg.touch_reload)  # --touch-reload

    def _become(self, state: State) -> None:
        if state not in STATE_MOVES[self.state]:
            raise RuntimeError(f"master: {self.state.value} -> {state.value}")
        self.state = state

    # -- the loop --------------------------------------------------------------------------

    def run(self) -> int:
        self.pipe.install(self._on_signal)
        if self.cfg.reload:
            from .reloader import Reloader
            self.reloader = Reloader(os.getcwd(), self.cfg.reload_extra, self._on_code_change)
            self.reloader.start()
        try:
            if self.cfg.metrics_bind:  # StartError (one line) if it cannot be listened on
                from . import metrics_total  # here: the master's sum, with --metrics-bind only

                self.metrics = metrics_total.master_listener(
                    self.cfg.metrics_bind, probe_metrics_bind, upgraded=self.upgraded)
            self.control = control_master.start_master(
                path_for(self.cfg.control_socket, self.cfg.no_control_socket),
                self._control_view())
            if self.cfg.stats:
                self._start_stats()
            log.info("Master %d starting %d worker(s)", os.getpid(), self.target)
            if self.side:
                self.side.start()
            self._hook("nworkers_changed", self.target, None)  # as gunicorn's start does
            for _ in range(self.target):
                self._spawn()
            while self.workers or self.state is not State.STOPPING:
                self._wait_for_events()
                self._reap()
                for signum in self._take(self.signals):
                    self._handle(signum)
                for paths in self._take(self.code_changed):
                    if self.state is not State.STOPPING:
                        shown = ", ".join(os.path.relpath(p) for p in paths[:3])
                        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
                        self._reload(f"Code changed ({shown}{more})")
                self._check_reading()
                for path in self.touched.changed():  # --touch-logreopen
                    self._reopen_logs(f"a touch of {path} (--touch-logreopen)")
                self._check_touched()
                if self.side:
                    self.side.tick()
                self._maintain()
                self._kill_overdue()
                if self.cfg.statsd_host:  # statsd.py: imported with the option only
                    from . import statsd

                    statsd.workers(len(self.workers))
                if self.state is State.STOPPING and time.monotonic() > self.deadline:
                    for w in self.workers.values():
                        self._kill(w, signal.SIGKILL)
                    self.deadline = time.monotonic() + KILL_GRACE_S
            if self.side:
                self.side.stop(self._reap)
            log.info("Shutdown complete")
            return self.exit_status
        finally:
            if self.side:
                self.side.stop(self._reap)  # (nothing left to stop after a clean end)
            if self.reloader is not None:
                self.reloader.stop()
            self.pipe.uninstall("master")
            for s in self.sockets:
                s.close()
            os.close(self.table)
            if self.metrics is not None:
                self.metrics.close()
            if self.control is not None:
                self.control.close()
            if self.stats is not None:
                self.stats.close()

    def _control_view(self) -> control_master.MasterView:
        """What the control socket reads (on its own thread) and how it asks for an
        operation: the signal queued as if received, and the loop woken."""

        def queue(signum: int) -> None:
            self.signals.append(signum)
            self.pipe.wake()

        return control_master.MasterView(
            state=lambda: self.state.value, target=lambda: self.target,
            workers=lambda: [(w.pid, w.slot + 1, w.life.value)
                             for w in list(self.workers.values())],
            signal=queue)

    def _start_stats(self) -> None:
        """uWSGI's stats server, made from the control socket's status answer (asked of the
        workers without a control socket too)."""
        if self.control is None:
            self.control = control_master.MasterControl(None, self._control_view())
        ctl = self.control
        from . import uwsgi_stats  # here: without --stats no process of the server needs it

        self.stats = uwsgi_stats.start(
            self.cfg.stats, self.cfg.stats_http, lambda: ctl.handle({"command": "status"}),
            uwsgi_stats.socket_infos(self.sockets, self.cfg.backlog), lambda: dict(self.spawns),
            lambda: {pid: w.wid + 1 for pid, w in list(self.workers.items())})

    def _wait_for_events(self) -> None:
        fds = [self.pipe.read_fd] + [w.pipe for w in self.workers.values()]
        try:
            readable, _, _ = select.select(fds, [], [], TICK_S)
        except InterruptedError:
            return
        if self.pipe.read_fd in readable:
            self.pipe.drain()
        for w in list(self.workers.values()):
            if w.pipe in readable:
                self._read_messages(w)

    def _read_messages(self, w: Child) -> None:
        for message in messages.receive(w.pipe):
            if message is Message.READY and w.life in (Life.BOOTING, Life.CANCELLED):
                w.become(Life.SERVING if w.life is Life.BOOTING else Life.STOPPING)
                w.serving_since = time.monotonic()
                log.info("Worker %d ready", w.pid)
                if self.metrics is not None:
                    self.metrics.totals.started(
                        w.pid, str(w.slot + 1), metrics_address(self.cfg.metrics_bind, w.slot))
                serving = sum(1 for x in self.workers.values() if x.life is Life.SERVING)
                if self.state is State.SERVING:  # at once: the count in any line stays true
                    self._retire_outgoing(serving)
                if serving >= self.target:  # whole: the back-off ends
                    if self.retry_delay and self.state is State.SERVING:
                        sd_notify.notify(f"STATUS={self._status()}")
                    self.retry_delay = 0.0
            elif message in (Message.MAX_REQUESTS, Message.STUCK) and w.life is Life.SERVING:
                w.become(Life.OUTGOING)  # _maintain starts its replacement, then stops it
                why = "reached --max-requests" if message is Message.MAX_REQUESTS \
                    else "has --max-stuck stuck calls"
                log.info("Worker %d %s: starting its replacement", w.pid, why)

    def _on_code_change(self, paths: List[str]) -> None:
        """From the reloader's thread: queue the batch and wake the loop."""
        self.code_changed.append(paths)
        self.pipe.wake()

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.signals.append(signum)

    @staticmethod
    def _take(queue: List[Any]) -> List[Any]:
        taken = queue[:]
        del queue[:len(taken)]
        return taken

    # -- signals ---------------------------------------------------------------------------

    def _handle(self, signum: int) -> None:
        op = signals.op(signum)
        if op is None:
            return  # SIGCHLD: reaped above
        name = signal.Signals(signum).name
        stopping = self.state is State.STOPPING
        if signum == signal.SIGTERM and self.cfg.on_term == "reload":
            op = Op.RELOAD  # uWSGI 2.0's TERM (docs/operations.md, "Signals")
        if op is Op.STOP:
            if stopping and signum == signal.SIGINT:
                log.info("Received %s again: stopping now", name)
                self._stop(graceful=False)
            elif not stopping:
                log.info("Received %s: stopping %d worker(s), in-flight requests get up to %gs",
                         name, len(self.workers), self.cfg.graceful_timeout)
                self._stop(graceful=True)
        elif op is Op.STOP_NOW:
            log.info("Received %s: stopping now", name)
            self._stop(graceful=False)
        elif stopping:
            return
        elif op is Op.RELOAD:
            self._reload(f"Received {name}" + (" (--on-term reload)" if signum ==
                                               signal.SIGTERM else ""))
            if self.cfg.log_reopen:  # uWSGI's log-reopen
                self._reopen_logs(f"{name} with --log-reopen")
        elif op is Op.MORE_WORKERS:
            log.info("Received %s: %d worker(s)", name, self.target + 1)
            self._set_target(self.target + 1)
        elif op is Op.FEWER_WORKERS:
            log.info("Received %s: %d worker(s)", name, max(1, self.target - 1))
            self._set_target(max(1, self.target - 1))
        elif op is Op.UPGRADE:
            self._upgrade()
        elif op is Op.REOPEN_LOGS:
            self._reopen_logs(name)
        else:
            log.info("Received %s: ignored", name)

    def _reopen_logs(self, why: str) -> None:
        logs.reopen_error_log(why)
        log.info("Received %s: workers reopen their log files", why)
        for w in self.workers.values():
            self._kill(w, messages.REOPEN_LOGS)

    def _stop(self, graceful: bool) -> None:
        if self.new_master is not None and _alive(self.new_master):
            # The service goes on under the new master of an upgrade (which named itself with
            # MAINPID= once it served): this master's stop is not the service's.
            log.info("New master %d goes on serving", self.new_master)
        else:
            sd_notify.notify("STOPPING=1", "STATUS=stopping")
        if self.state is not State.STOPPING:
            self._become(State.STOPPING)
        wait = self.cfg.drain_delay + self.cfg.graceful_timeout + KILL_GRACE_S if graceful \
            else KILL_GRACE_S
        self.deadline = time.monotonic() + wait
        for w in self.workers.values():
            if not w.ready:  # still importing the app: nothing in flight to finish
                self._retire(w, messages.CANCEL)
            else:
                self._retire(w, messages.STOP if graceful else messages.STOP_NOW)
        for s in self.sockets:  # refused once the workers stop accepting (listeners.py)
            s.stop_listening()

    def _announce(self) -> None:
        """The first workers all serve: the readiness lines and READY=1, once. The metrics
        line first: whoever waits for `Listening at:` finds it already written."""
        if self.metrics is not None:
            ports = ", ".join(metrics_address(self.cfg.metrics_bind, w.slot)
                              for w in sorted(self.workers.values(), key=lambda w: w.slot))
            log.info("Metrics at: %s (the sum over the workers); each worker's own at %s "
                     "(the next slots take the next ones)", self.metrics.url, ports)
        for s in self.sockets:
            if self.upgraded:  # serving now: the socket files are this master's to remove
                s.reclaim_unix_file()
            log.info("Listening at: %s", s.url)
        ready = ["READY=1", f"STATUS=serving with {self.target} worker(s)"]
        if self.upgraded:
            # sd_notify(3): a main process the service manager did not start names itself, so
            # that systemd follows it when the old master exits (under `Type=notify` it would
            # otherwise count the service as stopped then). It comes from a process that is
            # not the main one yet: the unit needs `NotifyAccess=all` (docs/operations.md).
            ready.insert(0, f"MAINPID={os.getpid()}")
        sd_notify.notify(*ready)
        self._hook("when_ready")

    def _hook(self, name: str, *args: Any) -> bool:
        """Run the master's hook `name` with the `server` of this moment (hook_objects.py);
        False if it called sys.exit() (hooks.EXITS): then the server stops, and its exit
        status is the one the hook gave."""
        if self.cfg.hooks is None:
            return True
        from . import hooks  # only where hooks are set

        try:
            hooks.call(self.cfg.hooks, name, self._hook_server(), *args)
            return True
        except HookExit as e:
            if self.state is not State.STOPPING:
                self._stop(graceful=True)
            self.exit_status = e.exit_code
            return False

    def _hook_server(self) -> HookServer:
        from . import hook_objects  # only where hooks are set

        me = os.getpid()
        workers = {pid: hook_objects.worker(self.cfg, w.age, pid, me)
                   for pid, w in self.workers.items()}
        return hook_objects.server(self.cfg, self.target, me, self.sockets, workers)

    def _hook_worker(self, age: int, pid: Any = "[booting]") -> Optional[HookWorker]:
        """The `worker` a master's hook receives, built only where hooks are set."""
        if self.cfg.hooks is None:
            return None
        from . import hook_objects

        return hook_objects.worker(self.cfg, age, pid, os.getpid())

    # -- workers ---------------------------------------------------------------------------

    def _set_target(self, n: int) -> None:
        """The number of workers to keep; nworkers_changed(server, new, old) if it changed."""
        old, self.target = self.target, n
        if n != old:
            self._hook("nworkers_changed", n, old)

    def _spawn(self) -> None:
        used = {w.slot for w in self.workers.values()}
        slot = next((i for i in range(SLOTS) if i not in used), None)
        if slot is None:
            log.error("Cannot start more than %d workers", SLOTS)
            return
        self.worker_age += 1
        age = self.worker_age
        if self.state is State.STOPPING or not self._hook("pre_fork", self._hook_worker(age)):
            return
        os.pwrite(self.table, b"\0\0\0\0", slot * 4)
        r, w = os.pipe()
        metrics_fd = os.memfd_create("sluicegate-last-metrics", os.MFD_CLOEXEC) \
            if self.metrics is not None else -1
        wid = Child.free_wid(self.workers.values(), self.generation)
        self.spawns[wid + 1] = self.spawns.get(wid + 1, 0) + 1
        jitter = requests_beyond(self.cfg, wid)  # --max-requests-jitter, or delta
        master = os.getpid()
        pair = self.control.pair() if self.control is not None else None
        wait_ended_threads()  # no TLS library lock held by a thread on its way out (reading.py)
        pid = os.fork()
        if pid == 0:
            if self.cfg.hooks is not None:
                from . import hook_objects

                hook_objects.note_own_age(age)
            if self.control is not None and pair is not None:
                self.control.in_child(pair)
            self._become_worker(r, w, self.cfg.max_requests + jitter, slot, master,
                                metrics_fd, wid + 1)  # no return
        os.close(w)
        os.set_inheritable(r, False)
        self.workers[pid] = Child(pid, r, self.generation, slot, metrics_fd, age, wid=wid)
        if self.control is not None and pair is not None:
            self.control.add(pid, pair)
        log.info("Booting worker with pid %d", pid)

    def _become_worker(
        self, r: int, w: int, max_requests: int, slot: int, master: int, metrics_fd: int,
        worker_id: int,
    ) -> None:
        """In the child just forked: leave the master's part behind, run the worker, exit."""
        status = 1
        try:
            # The user switch first (--user; nothing if the master switched already): a change
            # of credentials clears the parent-death signal, which is set after it.
            privileges.drop(self.cfg.user, self.cfg.group)
            messages.stop_with_master(master)
            os.close(r)
            self.pipe.close()
            for other in self.workers.values():
                os.close(other.pipe)
                if other.metrics_fd >= 0:
                    os.close(other.metrics_fd)
            if self.metrics is not None:
                self.metrics.forget_in_child()
            if self.stats is not None:
                self.stats.forget_in_child()
            signals.reset_in_child()
            os.environ.pop("NOTIFY_SOCKET", None)  # only the master speaks to systemd
            for s in self.sockets:
                s.forget_unix_file()  # the master removes it, once, at the end
            status = self.boot_worker(self.cfg, w, max_requests, (self.table, SLOTS, slot),
                                      self.target, metrics_fd, worker_id)
        except SluicegateError as e:
            # One write: print() writes the line and its newline apart, and another worker's
            # log line could land between them on the shared standard error.
            sys.stderr.write(f"sluicegate: error: {e}\n")
            sys.stderr.flush()
            status = BOOT_FAILED
        except SystemExit as e:  # a hook's sys.exit() (logged by hooks.py): its status
            status = exit_status(e.code)
        except BaseException:  # never return into the master's code in a child
            import traceback
            traceback.print_exc()
            status = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.new_master:
                self._upgrade_failed(status)
                continue
            w = self.workers.pop(pid, None)
            if w is None:
                if self.side:
                    self.side.exited(pid, describe_exit(status))
                continue
            self._hook("child_exit", self._hook_worker(w.age, pid))
            self._read_messages(w)
            os.close(w.pipe)
            if self.control is not None:
                self.control.forget(pid)
            if w.metrics_fd >= 0:
                if self.metrics is not None:
                    from .metrics_total import FINAL_MAX  # imported with self.metrics

                    last = os.pread(w.metrics_fd, FINAL_MAX, 0)
                    self.metrics.totals.ended(pid, last.decode("utf-8", "replace"))
                os.close(w.metrics_fd)
            os.pwrite(self.table, VACANT, w.slot * 4)
            how = describe_exit(status)
            if self.state is State.STOPPING or w.leaving:
                log.info("Worker %d stopped (%s)", pid, how)
                # A worker cancelled while importing had nothing in flight to cut.
                if os.waitstatus_to_exitcode(status) != 0 and self.state is State.STOPPING \
                        and w.ready:
                    self.exit_status = self.exit_status or 1
            elif not w.ready:
                log.error("Worker %d failed to boot (%s)%s", pid, how,
                          ": stopping" if self.state is State.STARTING else "")
                if self.state is State.STARTING:
                    self.exit_status = BOOT_FAILED
                    self._stop(graceful=False)
                elif self.state is State.RELOADING and w.generation == self.generation:
                    # A reload whose new code does not import: keep the old workers serving.
                    self._abandon_reload()
                elif self.state is State.RELOADING:
                    pass  # an earlier reload's worker: the newest generation replaces it
                else:
                    self._retry_later()
            else:
                log.error("Worker %d died (%s): starting a replacement", pid, how)
