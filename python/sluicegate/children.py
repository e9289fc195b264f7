"""The master's record of its workers: each `Child` and its `Life` (the legal moves in one
table), the master's own `State` (its moves in `STATE_MOVES`), and the small facts about a
process the master reads (alive, resident memory, how it ended). Plain data and /proc reads, no
policy: the decisions stay in `master.py` (and `master_reload.py`)."""

from __future__ import annotations

import enum
import os
import signal

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Dict, FrozenSet, Iterable, Optional

from . import records


class State(enum.Enum):
    """The master's life."""

    STARTING = "starting"  # the first workers boot; nothing announced yet
    SERVING = "serving"  # keeping `target` workers
    RELOADING = "reloading"  # the newest generation boots beside the serving one
    STOPPING = "stopping"  # every worker was told to stop; the master ends when they are gone


STATE_MOVES: Dict[State, FrozenSet[State]] = {
    State.STARTING: frozenset({State.SERVING, State.STOPPING}),
    State.SERVING: frozenset({State.RELOADING, State.STOPPING}),
    State.RELOADING: frozenset({State.RELOADING, State.SERVING, State.STOPPING}),
    State.STOPPING: frozenset(),
}



class Life(enum.Enum):
    """A worker's life, as its master sees it."""

    BOOTING = "booting"  # forked, importing the app: has not said READY
    SERVING = "serving"
    OUTGOING = "outgoing"  # serving, asked to be replaced: stops once its successor is ready
    STOPPING = "stopping"  # told to stop after it served: draining
    CANCELLED = "cancelled"  # told to stop before it was ready


LIFE_MOVES: Dict[Life, FrozenSet[Life]] = {
    Life.BOOTING: frozenset({Life.SERVING, Life.CANCELLED}),
    Life.SERVING: frozenset({Life.OUTGOING, Life.STOPPING}),
    Life.OUTGOING: frozenset({Life.STOPPING}),
    Life.STOPPING: frozenset({Life.STOPPING}),
    Life.CANCELLED: frozenset({Life.CANCELLED, Life.STOPPING}),  # READY came after the stop
}


@records.record
class Child:
    """A worker process, as its master keeps it."""

    pid: int
    pipe: int  # read end of the worker's message pipe
    generation: int
    slot: int  # its entry in the connection-count table
    metrics_fd: int = -1  # the memfd it leaves its last metrics reading in (metrics_total.py)
    age: int = 0  # gunicorn's worker age: how many workers this master had started with it
    life: Life = Life.BOOTING
    kill_at: float = 0.0  # told to stop: when it gets SIGKILL if still there (0: not told)
    serving_since: float = 0.0  # time.monotonic() when it said READY (--max-worker-lifetime)
    wid: int = 0  # uWSGI's worker id, from 0 (free_wid): its replacement takes it over

    @staticmethod
    def free_wid(workers: Iterable["Child"], generation: int) -> int:
        """The id of a new worker of `generation`: the lowest its booting and serving workers
        do not hold. So a worker replaced (its predecessor still draining) takes over the
        predecessor's id, as in uWSGI, where a respawned worker keeps its id."""
        held = {w.wid for w in workers if w.generation == generation
                and w.life in (Life.BOOTING, Life.SERVING)}
        return next(i for i in range(len(held) + 1) if i not in held)

    def become(self, life: Life) -> None:
        if life not in LIFE_MOVES[self.life]:
            raise RuntimeError(f"worker {self.pid}: {self.life.value} -> {life.value}")
        self.life = life

    @property
    def ready(self) -> bool:
        """It said READY (and may have been told to stop since)."""
        return self.life in (Life.SERVING, Life.OUTGOING, Life.STOPPING)

    @property
    def leaving(self) -> bool:
        """It was told to stop."""
        return self.life in (Life.STOPPING, Life.CANCELLED)


def alive(pid: int) -> bool:
    """Whether a process exists (one we may not signal exists too)."""
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


def describe_exit(status: int) -> str:
    """A wait status as a log line says it: `exit status N` or `killed by SIGNAME`."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"killed by {name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
