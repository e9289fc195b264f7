"""What a worker process and its master say to each other, in both directions, in one place.

Worker -> master: one byte per message on the worker's own pipe (the master holds the read end,
one pipe per worker, so a byte says who sent it). A worker writes each message at most once:

- `READY` (`R`): its server is built and listening; the master counts it as serving.
- `MAX_REQUESTS` (`M`): it has served `--max-requests` requests and wants to be replaced.
- `STUCK` (`S`): `--max-stuck` of its app calls are stuck past `--timeout`; replace it.

For the last two the master starts a replacement first and stops this worker (with `STOP`)
once the replacement is ready, so no request finds fewer workers than asked for.

Master -> worker: signals, which a worker's server handles like a single server's
(signals.py):

- `STOP` (TERM): finish in-flight requests (up to `--graceful-timeout`), then exit.
- `STOP_NOW` (QUIT): close every connection and exit.
- `CANCEL` (KILL): a worker still importing its app has nothing in flight to finish.
- `REOPEN_LOGS` (USR1): reopen the access log file.
- `MASTER_GONE` (TERM, sent by the kernel): the master died without stopping its workers
  (`kill -9`); each finishes its in-flight requests and exits, so no orphan keeps serving on the
  master's sockets and a restart can bind them (`stop_with_master`, PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import enum
import os
import signal

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import List, Optional


class Message(bytes, enum.Enum):
    """A worker's message to its master: one byte on the worker's pipe."""

    READY = b"R"
    MAX_REQUESTS = b"M"
    STUCK = b"S"


STOP = signal.SIGTERM
STOP_NOW = signal.SIGQUIT
CANCEL = signal.SIGKILL
REOPEN_LOGS = signal.SIGUSR1
MASTER_GONE = signal.SIGTERM


def send(fd: Optional[int], message: Message) -> None:
    """Write `message` to the master's pipe `fd` (nothing when there is no master)."""
    if fd is None:
        return
    try:
        os.write(fd, message.value)
    except OSError:
        pass  # the master is gone: its TERM follows, or we outlive it as nothing else can


def receive(fd: int) -> List[Message]:
    """The messages waiting on a worker's pipe, in the order they were sent; bytes that are
    no message are dropped. [] at the end of the pipe (the worker exited) or on an error."""
    try:
        data = os.read(fd, 64)
    except OSError:
        return []
    known = {m.value: m for m in Message}
    return [known[data[i:i + 1]] for i in range(len(data)) if data[i:i + 1] in known]


def stop_with_master(master_pid: int) -> None:
    """In a worker right after fork: have the kernel send `MASTER_GONE` when the master dies.
    If it died already (between the fork and here), the worker leaves at once."""
    # The worker's first use of the extension: a master never loads it (master.py's doc), so
    # its dlopen happens here, in a process forked from a master that has threads. Only the
    # thread that forked goes on in the child: a dynamic loader's lock another thread held at
    # the fork would stay held (glibc's fork re-initialises that lock in the child, not the
    # lists a dlopen in flight was changing). The master's threads at a fork are Python
    # threads only: its control socket's and their clients' (control_server.py), a reload's
    # reading thread (reading.py), --metrics-bind's listener and scrapes (metrics_total.py,
    # metrics_http.py), --stats' (uwsgi_stats.py), the --py-autoreload watcher (reloader.py);
    # no module the master loads starts a thread of its own. A Python thread enters the loader
    # through an import, whose dlopen runs holding the GIL, and os.fork() holds the GIL while
    # it forks. The other door, the C library loading its NSS modules for a name lookup (the
    # GIL released), is the main thread's (listeners, --metrics-bind), which is the one that
    # forks; the one exception is a statsd client reconnecting to a host name from a log line
    # of another thread (statsd.py), a risk only where no lookup of the main thread loaded
    # those modules before. This is the case of every worker that imports its app
    # after the fork (no --preload): the app's C extensions are dlopened here too.
    from ._core import parent_death_signal

    try:
        parent_death_signal(int(MASTER_GONE))
    except OSError:  # not Linux: no orphan guard
        return
    if os.getppid() != master_pid:
        os._exit(1)
