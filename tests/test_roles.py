"""The Python front's roles and the small modules they share, in process: the lifecycle tables
(core_server.Phase, master.State, master.Life), the worker -> master messages, the signal table
and the pid file. The behaviour over real processes and signals is in test_workers.py,
test_shutdown.py, test_reload.py and test_systemd_and_privileges.py."""

import os
import signal
from typing import List

import pytest

from sluicegate import core_server, messages, pidfile, signals
from sluicegate.core_server import MOVES, Phase
from sluicegate.listeners import bind_all
from sluicegate.children import LIFE_MOVES, Child, Life
from sluicegate.master import STATE_MOVES, State
from sluicegate.messages import Message
from sluicegate.resolution import resolve
from sluicegate.single import SingleServer


def _reachable(moves, start):
    seen, todo = {start}, [start]
    while todo:
        for nxt in moves[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


@pytest.mark.parametrize("moves, start, ends", [
    (MOVES, Phase.STARTING, {Phase.STOPPED}),
    (STATE_MOVES, State.STARTING, {State.STOPPING}),
    (LIFE_MOVES, Life.BOOTING, set()),
])
def test_every_state_is_reachable_and_only_the_last_is_final(moves, start, ends):
    assert set(moves) == set(type(start))
    assert _reachable(moves, start) == set(type(start))
    assert {s for s, out in moves.items() if not out} == ends


def test_a_worker_told_to_stop_never_counts_as_serving_again():
    w = Child(pid=1, pipe=-1, generation=0, slot=0)
    w.become(Life.SERVING)
    w.become(Life.STOPPING)
    with pytest.raises(RuntimeError, match="stopping -> serving"):
        w.become(Life.SERVING)
    assert w.ready and w.leaving


def test_worker_messages_are_read_in_order_and_other_bytes_dropped():
    r, w = os.pipe()
    try:
        messages.send(w, Message.READY)
        os.write(w, b"x")
        messages.send(w, Message.MAX_REQUESTS)
        messages.send(w, Message.STUCK)
        assert messages.receive(r) == [Message.READY, Message.MAX_REQUESTS, Message.STUCK]
        os.close(w)
        w = -1
        assert messages.receive(r) == []  # the worker is gone
    finally:
        os.close(r)
        if w != -1:
            os.close(w)
    messages.send(None, Message.READY)  # no master: nothing to do, no error


def test_one_signal_table_for_every_process():
    operations = {signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1,
                  signal.SIGUSR2, signal.SIGTTIN, signal.SIGTTOU, signal.SIGWINCH}
    assert set(signals.TABLE) == operations == set(signals.SERVER_SIGNALS)
    assert set(signals.MASTER_SIGNALS) == operations | {signal.SIGCHLD}
    assert signals.op(signal.SIGCHLD) is None
    assert {signals.op(s) for s in operations} == set(signals.Op)


def test_the_pid_file_is_set_aside_taken_back_and_removed_only_if_ours(tmp_path):
    path = str(tmp_path / "s.pid")
    pidfile.write(path)
    assert open(path).read() == f"{os.getpid()}\n"
    pidfile.set_aside(path)
    assert not os.path.exists(path) and os.path.exists(path + pidfile.OLD_SUFFIX)
    pidfile.take_back(path)
    assert os.path.exists(path) and not os.path.exists(path + pidfile.OLD_SUFFIX)
    with open(path + pidfile.OLD_SUFFIX, "w") as f:
        f.write("1\n")  # another process's
    pidfile.remove(path)
    assert not os.path.exists(path) and os.path.exists(path + pidfile.OLD_SUFFIX)


class _Core:
    """A stand-in for _core whose Server records the stops it is asked for."""

    class Server:
        made: List["_Core.Server"] = []

        def __init__(self, app, listeners, config):
            self.listeners, self.shutdowns = listeners, []
            _Core.Server.made.append(self)

        def run(self):
            for fd, *_ in self.listeners:
                os.close(fd)

        def shutdown(self, graceful=True):
            self.shutdowns.append(graceful)

        @property
        def stats(self):
            return {"requests": 0, "stuck_calls": 0}


@pytest.mark.parametrize("asked, passed_on", [
    ([True], [True]),  # a stop asked before the server exists applies once it does
    ([False, True], [False]),  # a stop at once is never turned back into a graceful one
    ([True, True, False], [False]),  # the strongest stop asked so far applies
])
def test_stops_asked_before_the_server_exists(monkeypatch, asked, passed_on):
    monkeypatch.setattr(core_server, "import_core", lambda: _Core)
    monkeypatch.setattr(_Core.Server, "made", [])
    cfg = resolve({"bind": ["127.0.0.1:0"]}, env={})
    server = SingleServer(object(), cfg, bind_all(cfg.bind, cfg.backlog))
    for graceful in asked:
        server.shutdown(graceful=graceful)
    assert server.run() == 0
    assert _Core.Server.made[0].shutdowns == passed_on
    assert server.phase is Phase.STOPPED
