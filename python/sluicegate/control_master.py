"""A master's side of `sluicegate ctl`: its control socket (control_server.py) answered from its
workers, each asked over its channel (control_channel.py), and the operations turned into
signals queued for the master's loop (`MasterView.signal`, as if the signal was received).
A worker that does not answer within WORKER_TIMEOUT_S is shown with what the master knows of
it (pid, age, memory, state); workers still booting are not asked (NOT_SERVING).
"""

from __future__ import annotations

import os
import signal
import socket
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

from . import records
from . import children
from .control_agent import allowance, process_age
from .control_channel import Channel, keep_channel
from .control_protocol import MAX_WORKERS, NOT_SERVING, OPERATIONS, workers_change_refused
from .control_server import ControlServer, start


@records.record
class MasterView:
    """What the master shows its control server: callables read on the control thread."""

    state: Callable[[], str]
    target: Callable[[], int]
    #: (pid, worker number from 1, life) of each worker.
    workers: Callable[[], List[Tuple[int, int, str]]]
    #: Queue a signal for the master's loop, as if it had been received.
    signal: Callable[[int], None]


class MasterControl:
    """A master's control socket and its channels to its workers."""

    def __init__(self, server: Optional[ControlServer], view: MasterView) -> None:
        self.server = server
        self.view = view
        self.started = time.monotonic()
        self.channels: Dict[int, Channel] = {}

    def pair(self) -> Tuple[socket.socket, socket.socket]:
        """Before a fork: the master's end and the worker's."""
        return socket.socketpair()

    def in_child(self, pair: Tuple[socket.socket, socket.socket]) -> None:
        """In the worker just forked: keep only its end of its pair (never raises)."""
        try:
            pair[0].close()
            for ch in self.channels.values():
                ch.close()
            if self.server is not None:
                self.server.close_in_child()
            keep_channel(pair[1])
        except OSError:
            pass

    def add(self, pid: int, pair: Tuple[socket.socket, socket.socket]) -> None:
        pair[1].close()
        self.channels[pid] = Channel(pair[0])

    def forget(self, pid: int) -> None:
        ch = self.channels.pop(pid, None)
        if ch is not None:
            ch.close()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for ch in list(self.channels.values()):
            ch.close()

    def handle(self, command: Dict[str, Any]) -> Dict[str, Any]:
        name = command.get("command")
        if name == "status":
            return self._status()
        if name == "requests":
            calls: List[Dict[str, Any]] = []
            listed = True
            for pid, number, life in self.view.workers():
                ch = self.channels.get(pid) if life not in NOT_SERVING else None
                answer = ch.ask({"command": "requests", "stacks": bool(command.get("stacks"))}) \
                    if ch is not None else None
                for call in (answer or {}).get("requests", []):
                    calls.append(dict(call, worker=number))
                listed = listed and (answer or {}).get("listed", True)
            calls.sort(key=lambda c: -c["age"])
            return {"ok": True, "requests": calls, "listed": listed}
        if name in OPERATIONS:
            self.view.signal(OPERATIONS[name])
            return {"ok": True, "done": name}
        if name == "workers":
            change = command.get("change")
            refused = workers_change_refused(change)
            if refused:
                return {"ok": False, "error": refused}
            before = self.view.target()
            if before + change > MAX_WORKERS:
                return {"ok": False, "error": f"workers {change:+d}: {before} run, and a master "
                        f"runs at most {MAX_WORKERS}"}
            target = max(1, before + change)
            for _ in range(abs(target - before)):  # TTOU never goes below one: none queued
                self.view.signal(signal.SIGTTIN if change > 0 else signal.SIGTTOU)
            return {"ok": True, "done": "workers", "previous": before, "target": target}
        return {"ok": False, "error": f"unknown command {name!r}"}

    def _status(self) -> Dict[str, Any]:
        workers = []
        # The cgroup's CPU allowance is read by the extension, which the master does not load
        # (master.py): the first worker that answers reads it (they share the master's
        # cgroup); only when none does is the extension loaded here (on this thread: its
        # dlopen holds the GIL, so no fork of the main thread happens during it).
        cpu: Optional[Dict[str, Any]] = None
        for pid, number, life in self.view.workers():
            ch = self.channels.get(pid) if life not in NOT_SERVING else None
            answer = ch.ask({"command": "status", "allowance": cpu is None}) \
                if ch is not None else None
            if answer and cpu is None:
                cpu = answer.get("allowance")
            row: Dict[str, Any] = {"pid": pid, "age": process_age(pid), "requests": None,
                                   "in_flight": None, "connections": None,
                                   "rss": children.worker_rss(pid)}
            if answer and answer.get("ok"):
                row.update(answer["status"])
            row.update(worker=number, state=life, answered=bool(answer))
            workers.append(row)
        workers.sort(key=lambda w: w["worker"])
        master = {"pid": os.getpid(), "role": "master", "state": self.view.state(),
                  "uptime": time.monotonic() - self.started, "workers": self.view.target(),
                  "rss": children.worker_rss(os.getpid()),
                  "allowance": cpu if cpu is not None else allowance()}
        return {"ok": True, "master": master, "workers": workers}


def start_master(path: Optional[str], view: MasterView) -> Optional[MasterControl]:
    """A master's control (None with --no-control-socket). Its socket may fail to listen (the
    log says why): the master still asks its workers, for nothing."""
    if path is None:
        return None
    control = MasterControl(None, view)
    control.server = start(path, control.handle)
    return control
