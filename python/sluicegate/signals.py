"""The one signal table: what each signal an operator sends means, and the pipe that carries
signals into a process whose main thread waits outside Python.

| signal | operation | single server | master (`--workers`) |
| --- | --- | --- | --- |
| TERM, INT | `STOP` | finish in-flight requests, exit 0 | the same, through its workers |
| a second INT, QUIT | `STOP_NOW` | stop at once | the same, through its workers |
| HUP | `RELOAD` | the TLS certificate read again, else logged, ignored | new workers, then the old ones drain |
| USR1 | `REOPEN_LOGS` | reopen the access log | passed to every worker |
| USR2 | `UPGRADE` | logged, ignored | a new master on the same sockets |
| TTIN / TTOU | `MORE_WORKERS` / `FEWER_WORKERS` | logged, ignored | one worker more / fewer |
| WINCH | `IGNORE` | logged, ignored | logged, ignored |

`--on-term reload` makes TERM a master's RELOAD (uWSGI 2.0's TERM; master.py reads it, and
implies a master). A worker process handles the table like a single server, except that it leaves the master's
operations (HUP, USR2, TTIN, TTOU, WINCH) to the master without a word. None of these signals
is ever fatal (docs/operations.md is the operator's version of this table).

Why a pipe: the Rust core's event loop (and the master's `select`) wait outside Python, where
Python signal handlers cannot run. `SignalPipe` makes its write end Python's wakeup fd
(`signal.set_wakeup_fd`: the C-level handler writes the signal number there); the core is
handed the read end (`signal_fd`) and, when it becomes readable, runs the Python handlers.
"""

from __future__ import annotations

import enum
import os
import signal

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional, Sequence


class Op(enum.Enum):
    """What an operator asks for with a signal."""

    STOP = "finish in-flight requests, then exit"
    STOP_NOW = "stop at once"
    RELOAD = "start new workers, then drain the old ones"
    REOPEN_LOGS = "reopen the access log"
    UPGRADE = "start a new master on the same sockets"
    MORE_WORKERS = "one worker more"
    FEWER_WORKERS = "one worker fewer"
    IGNORE = "nothing"


TABLE: Dict[signal.Signals, Op] = {
    signal.SIGTERM: Op.STOP,
    signal.SIGINT: Op.STOP,  # a second one: STOP_NOW (Ctrl-C twice)
    signal.SIGQUIT: Op.STOP_NOW,
    signal.SIGHUP: Op.RELOAD,
    signal.SIGUSR1: Op.REOPEN_LOGS,
    signal.SIGUSR2: Op.UPGRADE,
    signal.SIGTTIN: Op.MORE_WORKERS,
    signal.SIGTTOU: Op.FEWER_WORKERS,
    signal.SIGWINCH: Op.IGNORE,
}

#: The operations only a master can carry out.
MASTER_ONLY = (Op.RELOAD, Op.UPGRADE, Op.MORE_WORKERS, Op.FEWER_WORKERS, Op.IGNORE)

#: Signals a server process (single or worker) handles.
SERVER_SIGNALS = tuple(TABLE)

#: Signals a master handles: the table, and SIGCHLD to wake it when a child exits.
MASTER_SIGNALS = (*TABLE, signal.SIGCHLD)

if TYPE_CHECKING:
    Handler = Callable[[int, Any], None]


def op(signum: int) -> Optional[Op]:
    """The operation `signum` asks for (None for a signal outside the table, e.g. SIGCHLD)."""
    try:
        return TABLE.get(signal.Signals(signum))
    except ValueError:
        return None


class SignalPipe:
    """Route `signums` to `handler` through a non-blocking pipe (see the module doc).

    `install()` and `uninstall()` exist only on the main thread; `uninstall(then)` puts back
    what was there before (`then="previous"`), or ignores the signals (`"ignore"`, for a process
    on its way out: a late Ctrl-C must not turn a clean exit into a KeyboardInterrupt), or the
    master's choice (`"master"`: SIGCHLD back to its default, the rest ignored)."""

    def __init__(self, signums: Sequence[int]) -> None:
        self.signums = tuple(signums)
        self.read_fd, self.write_fd = os.pipe()  # not inherited by children (PEP 446)
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        self._old_wakeup: Optional[int] = None
        self._old_handlers: Dict[int, Any] = {}

    def install(self, handler: Handler) -> None:
        self._old_wakeup = signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)
        for signum in self.signums:
            self._old_handlers[signum] = signal.signal(signum, handler)

    def drain(self) -> None:
        """Empty the pipe (its bytes only say that a signal came; the handlers say which)."""
        try:
            while os.read(self.read_fd, 4096):
                pass
        except BlockingIOError:
            pass

    def wake(self) -> None:
        """Make the pipe readable from another thread (the reloader's), as a signal would."""
        try:
            os.write(self.write_fd, b"c")
        except OSError:
            pass

    def uninstall(self, then: str = "previous") -> None:
        for signum, previous in self._old_handlers.items():
            if then == "previous":
                signal.signal(signum, previous)
            elif then == "master" and signum == signal.SIGCHLD:
                signal.signal(signum, signal.SIG_DFL)
            else:
                signal.signal(signum, signal.SIG_IGN)
        self._old_handlers = {}
        if self._old_wakeup is not None:
            signal.set_wakeup_fd(self._old_wakeup)
            self._old_wakeup = None

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def reset_in_child() -> None:
    """In a worker right after fork: no wakeup fd, every signal the master handles back to its
    default, and SIGINT ignored: Ctrl-C reaches the whole process group, and the master turns it
    into TERM for its workers (the worker's own handlers come with its server)."""
    signal.set_wakeup_fd(-1)
    for signum in MASTER_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
