"""What one server process (a worker, or a single server) says about itself to the control socket
(`Agent`), and a single server's answers to `sluicegate ctl` (`single_handler`: it reports
itself as its one worker).

What it reports comes from its core, from the same counters as `/metrics`: `Server.stats`,
the gauges of `Server.metrics_text()` (read by metrics_total's parser) and
`Server.in_flight()`, the registry behind `sluicegate_app_calls_in_flight`. A worker answers
its master through control_channel.py.
"""

from __future__ import annotations

import os
import sys
import time
import traceback

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional

from . import children
from .control_protocol import NEEDS_A_MASTER, OPERATIONS


def process_age(pid: int) -> Optional[float]:
    """Seconds since process `pid` started (None if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            start = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            up = float(f.read().split()[0])
    except (OSError, IndexError, ValueError):
        return None
    return max(0.0, up - start / (os.sysconf("SC_CLK_TCK") or 100))


GAUGES = {"sluicegate_app_calls_in_flight": "in_flight",
          "sluicegate_connections_open": "connections"}


#: Counters a status gives too (summed over their labels), for uWSGI's stats document
#: (uwsgi_stats.py); `errors` is the requests that ended with `end="error"`.
COUNTERS = {"sluicegate_response_body_bytes_total": "tx",
            "sluicegate_app_timeouts_total": "app_timeouts",
            "sluicegate_request_duration_seconds_sum": "duration_sum",
            "sluicegate_request_duration_seconds_count": "duration_count"}


#: The samples of the metrics text the status reads: only their lines are parsed, as the parse
#: holds the GIL (all ~200 lines took over a millisecond, which an inline call of the worker's
#: loop waited).
WANTED = tuple(name + after for name in (*GAUGES, *COUNTERS, "sluicegate_request_ends_total")
               for after in " {")


def calls_listed(cfg: Any) -> bool:
    """Whether a server process lists its app calls for `requests`: the core keeps that
    registry for `--timeout` and `--metrics-bind` only, as it costs every request."""
    return bool(cfg.timeout or cfg.metrics_bind)


class Agent:
    """What one server process (a worker, or a single server) says about itself, read from its
    core `server` (`_core.Server`); `phase()` is its lifecycle's state (core_server.Phase)."""

    def __init__(self, server: Any, phase: Callable[[], str], listed: bool = True) -> None:
        self.server = server
        self.phase = phase
        #: Whether the core lists its app calls (`calls_listed`): else `requests` is empty.
        self.listed = listed

    def status(self) -> Dict[str, Any]:
        pid = os.getpid()
        stats = self.server.stats
        facts: Dict[str, Any] = {
            "pid": pid, "age": process_age(pid), "state": self.phase(),
            "requests": stats["requests"], "in_flight": 0, "connections": 0,
            "threads": stats["threads"], "busy_threads": stats["busy_threads"],
            "rss": children.worker_rss(pid),
        }
        # Here: its parser is all a worker needs of metrics_total.py, whose aggregation and
        # listener are the master's with --metrics-bind only.
        from .metrics_total import Reading

        text = "\n".join(line for line in self.server.metrics_text().splitlines()
                         if line.startswith(WANTED))
        for _, key, _, value in Reading(text).samples:
            if key[0] in GAUGES:
                facts[GAUGES[key[0]]] = int(value)
            elif key[0] in COUNTERS:
                facts[COUNTERS[key[0]]] = facts.get(COUNTERS[key[0]], 0) + value
            elif key[0] == "sluicegate_request_ends_total" and ("end", "error") in key[1]:
                facts["errors"] = facts.get("errors", 0) + value
        return facts

    def requests(self, stacks: bool) -> List[Dict[str, Any]]:
        frames = sys._current_frames() if stacks else {}
        out = []
        for method, path, age, thread, stuck in self.server.in_flight():
            call: Dict[str, Any] = {"pid": os.getpid(), "method": method, "path": path,
                                    "age": round(age, 3), "stuck": stuck}
            if stacks:
                frame = frames.get(thread)
                call["stack"] = "".join(traceback.format_stack(frame)) if frame is not None \
                    else "(no Python frame: the thread is outside the interpreter)\n"
            out.append(call)
        return out

    def answer(self, command: Dict[str, Any]) -> Dict[str, Any]:
        """A worker's answer to its master (over its channel)."""
        if command.get("command") == "requests":
            return {"ok": True, "requests": self.requests(bool(command.get("stacks"))),
                    "listed": self.listed}
        answer = {"ok": True, "status": self.status()}
        if command.get("allowance"):  # the one worker its master asks (control_master.py)
            answer["allowance"] = allowance()
        return answer


def allowance() -> Dict[str, Any]:
    """The CPU the server's cgroup allows and how often its quota stopped it, read now
    (`_core.cpu_allowance`): `ctl status` shows it beside the master (the workers share its
    cgroup: a master, which does not load the extension, asks one of them)."""
    from . import _core
    return dict(_core.cpu_allowance())


def single_handler(agent: Agent, started: float) -> Callable[[Dict[str, Any]], Dict[str, Any]]:
    """The commands of a server without workers: it reports itself as its one worker."""

    def handle(command: Dict[str, Any]) -> Dict[str, Any]:
        name = command.get("command")
        if name == "status":
            me = agent.status()
            master = {"pid": me["pid"], "role": "single", "uptime": time.monotonic() - started,
                      "state": me["state"], "workers": 1, "allowance": allowance()}
            return {"ok": True, "master": master, "workers": [dict(me, worker=1)]}
        if name == "requests":
            calls = agent.requests(bool(command.get("stacks")))
            return {"ok": True, "requests": [dict(c, worker=1) for c in calls],
                    "listed": agent.listed}
        if name in OPERATIONS:  # the signal itself: what it does in a single process
            os.kill(os.getpid(), OPERATIONS[name])
            return {"ok": True, "done": name}
        if name == "workers":
            return {"ok": False, "error": NEEDS_A_MASTER}
        return {"ok": False, "error": f"unknown command {name!r}"}

    return handle
