"""Shell commands run beside the server: the `--exec-pre-app` commands before the app is
loaded (`run_before_app`), and the side commands the master runs beside the workers: `--attach-daemon CMD` and
`--smart-attach-daemon "PIDFILE CMD"`, uWSGI's attach-daemon and smart-attach-daemon.

`SideCommands` is a part of the master (master.py), driven from its loop: `start()` once the
sockets are bound, `exited(pid, status)` for every child the master reaps that is not a worker,
`tick()` every pass of the loop, `stop()` at the end. Nothing here waits: the master's loop is
the only clock, so a command's death is seen as the master reaps it (SIGCHLD wakes the loop).

As uWSGI 2.0 runs them (its core/daemons.c):
  - each command runs through `/bin/sh -c`, in a session of its own (setsid: Ctrl-C in the
    terminal reaches the server, not the command, and the stop signals the command's whole
    process group, its shell's children too), with standard input from /dev/null and the
    server's standard output and error;
  - attach-daemon: a command that exits is started again; one that lived less than
    `THROTTLE_WINDOW_S` is started again only after `respawns - lived` seconds (at least
    one), uWSGI's throttle, so that a command failing at once does not spin;
  - smart-attach-daemon: the command daemonizes itself and writes PIDFILE; the master checks
    the file every second: at start a live pid there is adopted rather than started twice; a
    watched process that is gone (no file, or a pid no longer alive) is started again at once,
    and a command that never wrote a live pid is started again after `SMART_FREQ` checks (ten
    seconds, uWSGI's default `freq`);
  - at the server's stop each attach-daemon command's process group gets SIGTERM, then SIGKILL
    after `STOP_GRACE_S`; a master that dies without stopping them (kill -9) takes them along
    (the kernel sends SIGKILL: PR_SET_PDEATHSIG, as uWSGI sets it); smart-attach-daemon commands are left running, as uWSGI leaves them
    (they are not the master's children, and their own service may outlive the server);
  - a graceful reload (HUP) replaces the workers only: the commands run on untouched.
"""

from __future__ import annotations

import os
import signal
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Callable, List, Optional, Sequence

from . import records
from .errors import SluicegateError
from .logs import log

#: A command that ran less than this many seconds is throttled before it starts again.
THROTTLE_WINDOW_S = 3
#: The longest throttle (uWSGI's cap on `respawns - lived`).
MAX_THROTTLE_S = 60
#: Checks of a smart command's pid file (one a second) before a command that never wrote a
#: live pid is started again: uWSGI's default `freq`.
SMART_FREQ = 10
#: How long attach-daemon commands get after SIGTERM at the stop before SIGKILL.
STOP_GRACE_S = 5.0


def parse_smart(value: str) -> tuple:
    """`PIDFILE CMD` -> (pidfile, command); ValueError if either is missing."""
    pidfile, _, command = value.strip().partition(" ")
    if not pidfile or not command.strip():
        raise ValueError("expected 'PIDFILE COMMAND' (the pid file the command writes, a space, "
                         "the command)")
    return pidfile, command.strip()


@records.record
class SideCommand:
    """One command and what the master knows of it."""

    command: str
    pidfile: Optional[str] = None  # smart-attach-daemon: the file it writes its pid to
    pid: int = 0  # the running process (0: none)
    respawns: int = 0  # times started
    last_spawn: float = 0.0  # time.monotonic() of the last start
    due: float = 0.0  # dumb: when to start it again (0: not waiting)
    watched: bool = False  # smart: its pid file named a live process once
    checks: int = 0  # smart: checks without a live pid since the last start
    launcher: int = 0  # smart: the process started, which exits once it daemonized


def read_pidfile(path: str) -> int:
    """The live pid `path` names, or 0 (no file, no number, or no such process)."""
    try:
        with open(path, "rb") as f:
            pid = int(f.read(64).split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    if pid <= 0:
        return 0
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return 0
    except PermissionError:
        pass  # alive, another user's
    return pid


def _spawn(command: str, signums: Sequence[int], dies_with_master: bool) -> int:
    """Start `sh -c command` in a session of its own, stdin from /dev/null, the signals the
    master handles back to their defaults; its pid. `dies_with_master` (attach-daemon): the
    kernel kills it (SIGKILL) if the master dies without stopping it, as uWSGI has it
    (PR_SET_PDEATHSIG), so a master killed with -9 leaves no command behind."""
    if not dies_with_master:
        return os.posix_spawn(
            "/bin/sh", ["/bin/sh", "-c", command], dict(os.environ),
            file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)],
            setsid=True, setsigdef=list(signums), setsigmask=[])
    # The extension's prctl, loaded here in the master (with --attach-daemon only: a master
    # does not load the extension otherwise, master.py), on the thread that forks.
    from ._core import parent_death_signal

    master = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:  # in the child: only what exec needs, then exec
        os.setsid()
        parent_death_signal(int(signal.SIGKILL))  # (no libc lookup in a child just forked)
        if os.getppid() != master:  # the master died before the prctl
            os._exit(1)
        for signum in signums:
            signal.signal(signum, signal.SIG_DFL)
        fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(fd, 0)
        os.execv("/bin/sh", ["/bin/sh", "-c", command])
    finally:
        os._exit(127)


class SideCommands:
    """The master's side commands (see the module doc)."""

    def __init__(self, attach: Sequence[str], smart: Sequence[str],
                 signums: Sequence[int] = (),
                 now: Callable[[], float] = time.monotonic) -> None:
        self.commands: List[SideCommand] = [SideCommand(c) for c in attach]
        for value in smart:
            pidfile, command = parse_smart(value)
            self.commands.append(SideCommand(command, pidfile))
        self.signums = tuple(signums)
        self.now = now
        self.last_check = 0.0
        self.stopping = False  # stop() began: a command that ends is not started again

    def __bool__(self) -> bool:
        return bool(self.commands)

    def start(self) -> None:
        for c in self.commands:
            if c.pidfile is not None:
                c.pid = read_pidfile(c.pidfile)
                if c.pid:
                    c.watched = True
                    log.info("Side command %r: found pid %d in %s", c.command, c.pid,
                             c.pidfile)
                    continue
            self._start(c)
        self.last_check = self.now()

    def _start(self, c: SideCommand) -> None:
        try:
            pid = _spawn(c.command, self.signums, dies_with_master=c.pidfile is None)
        except OSError as e:
            log.error("Side command %r could not start: %s", c.command, e)
            c.due = self.now() + 1.0
            return
        c.respawns += 1
        c.last_spawn = self.now()
        c.due = 0.0
        c.checks = 0
        if c.pidfile is None:
            c.pid = pid
        else:
            c.launcher = pid
        log.info("Side command %r %sstarted (pid %d)", c.command,
                 "re" if c.respawns > 1 else "", pid)

    def exited(self, pid: int, how: str) -> bool:
        """A child the master reaped: True if it was one of these (then noted)."""
        for c in self.commands:
            if c.pidfile is None and c.pid == pid:
                c.pid = 0
                if self.stopping:
                    log.info("Side command %r (pid %d) stopped (%s)", c.command, pid, how)
                    return True
                lived = self.now() - c.last_spawn
                wait = 0
                if lived <= THROTTLE_WINDOW_S:  # whole seconds, as uWSGI counts them
                    wait = min(max(1, c.respawns - int(lived)), MAX_THROTTLE_S)
                c.due = self.now() + wait
                log.warning("Side command %r (pid %d) exited (%s)%s", c.command, pid, how,
                            f": starting it again in {wait}s" if wait else
                            ": starting it again")
                return True
            if c.pidfile is not None and c.launcher == pid:
                return True  # the smart command's first process, gone once it daemonized
        return False

    def tick(self) -> None:
        """Start what is due: dumb commands past their throttle; smart commands whose pid file
        says their process is gone (checked once a second)."""
        now = self.now()
        for c in self.commands:
            if c.pidfile is None and not c.pid and c.due and now >= c.due:
                self._start(c)
        if now - self.last_check < 1.0:
            return
        self.last_check = now
        for c in self.commands:
            if c.pidfile is None:
                continue
            pid = read_pidfile(c.pidfile)
            if pid:
                if pid != c.pid:
                    log.info("Side command %r: pid %d (%s)", c.command, pid, c.pidfile)
                c.pid, c.watched, c.checks = pid, True, 0
                continue
            c.checks += 1
            if c.watched:
                log.warning("Side command %r: no live process in %s: starting it again",
                            c.command, c.pidfile)
                c.watched = False
                self._start(c)
            elif c.checks >= SMART_FREQ:
                log.warning("Side command %r wrote no live pid to %s in %d s: starting it "
                            "again", c.command, c.pidfile, SMART_FREQ)
                self._start(c)

    def stop(self, reap: Callable[[], None]) -> None:
        """At the server's stop: SIGTERM to each attach-daemon command's process group, SIGKILL
        to what is left after STOP_GRACE_S. `reap()` reaps the master's exited children (and
        calls `exited`), so that a command that ended is seen as ended."""
        dumb = [c for c in self.commands if c.pidfile is None and c.pid]
        self.stopping = True
        for c in self.commands:
            c.due = 0.0  # nothing starts again from here
        if not dumb:
            return
        for c in dumb:
            _kill_group(c.pid, signal.SIGTERM)
        deadline = self.now() + STOP_GRACE_S
        while any(_alive(c) for c in dumb) and self.now() < deadline:
            time.sleep(0.05)
            reap()
        for c in dumb:
            if _alive(c):
                log.warning("Side command %r (pid %d) still running %gs after SIGTERM: "
                            "killed (SIGKILL)", c.command, c.pid, STOP_GRACE_S)
                _kill_group(c.pid, signal.SIGKILL)
        for c in dumb:
            if c.pid:
                try:
                    os.waitpid(c.pid, 0)
                except ChildProcessError:
                    pass
                c.pid = 0
        for c in self.commands:
            c.due = 0.0


def _alive(c: SideCommand) -> bool:
    return c.pid != 0


def _kill_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def run_before_app(commands: Sequence[str]) -> None:
    """`--exec-pre-app`: each command through `sh -c`, in order, waited for, before the app is
    imported; one that fails raises SluicegateError (the start stops, as uWSGI's fatal
    pre-app hooks stop it)."""
    for command in commands:
        log.info("Running %r before the app is loaded (--exec-pre-app)", command)
        import subprocess  # only --exec-pre-app's commands run through it

        status = subprocess.run(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL).returncode
        if status != 0:
            how = f"exit status {status}" if status > 0 else \
                f"killed by {signal.Signals(-status).name}"
            raise SluicegateError(f"--exec-pre-app command {command!r} failed ({how})")
