"""A worker process of `--workers N`: one `ServerProcess` that tells its master instead of the
world.

Forked by the master (master.py) on the master's listening sockets, it serves until the master
signals it, and reports on its pipe (messages.py): `READY` once serving, `MAX_REQUESTS` after
`--max-requests` requests (the core retired it with the last of them), `STUCK` with `--max-stuck` stuck app calls. Only the master logs the
`Listening at:` lines and speaks to systemd; the operations that are the master's (HUP, USR2,
TTIN, TTOU, WINCH) reach the worker with the process group and are left to it.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Tuple

from . import control_agent, control_channel, messages
from .config import metrics_address
from .core_server import ServerProcess
from .listeners import BoundSocket
from .logs import log
from .messages import Message
from .uwsgi_compat import COMPAT_MIN_LIFETIME, compat_number
from .validated import Config


class WorkerServer(ServerProcess):
    """The server of one worker process (the lifecycle is core_server.Phase)."""

    def __init__(
        self, app: Callable[..., Any], cfg: Config, sockets: List[BoundSocket], *,
        events_fd: int, max_requests: int, workers: int, balance: Tuple[int, int, int],
        metrics_fd: int = -1, app_name: str = "", version: str = "",
    ) -> None:
        """`events_fd`: the write end of this worker's pipe to the master; `max_requests`:
        --max-requests with this worker's jitter (0: never); `metrics_fd`: the master's memfd
        for this worker's last metrics reading (-1: no --metrics-bind)."""
        super().__init__(app, cfg, sockets, app_name=app_name, version=version,
                         owns_process=True, workers=workers, balance=balance)
        self.events_fd = events_fd
        self.metrics_fd = metrics_fd
        self.max_requests = max_requests
        self.max_stuck = cfg.max_stuck if cfg.timeout else 0
        # uWSGI's min-worker-lifetime: --max-requests replaces no worker younger than this.
        self.min_lifetime = compat_number(cfg.uwsgi_compat, COMPAT_MIN_LIFETIME) or 0
        self.born = time.monotonic()

    def announce(self, threads: Tuple[int, int], why: str) -> None:
        metrics = metrics_address(self.cfg.metrics_bind, self.balance[2])
        log.info("Worker %d: app %s, threads %d:%d (%s)%s", os.getpid(), self.app_name,
                 threads[0], threads[1], why, f", metrics at {metrics}" if metrics else "")
        messages.send(self.events_fd, Message.READY)

    def watches(self) -> bool:
        return bool(self.max_requests or self.max_stuck)

    def watch(self, stats: Dict[str, Any]) -> bool:
        """Ask the master for a replacement once, when a limit is reached. The core retired
        the worker already with the request that reached --max-requests (`retire_after`);
        `retire()` covers a limit reached before min-worker-lifetime passed."""
        if self.max_requests and stats["requests"] >= self.max_requests \
                and time.monotonic() - self.born >= self.min_lifetime:
            self._server.retire()  # it accepts no more; the others serve while its successor boots
            messages.send(self.events_fd, Message.MAX_REQUESTS)
            return True
        if self.max_stuck and stats["stuck_calls"] >= self.max_stuck:
            log.error("Worker %d: %d app calls are stuck past --timeout (--max-stuck %d): "
                      "asking for a replacement", os.getpid(), stats["stuck_calls"],
                      self.max_stuck)
            self._server.retire()
            messages.send(self.events_fd, Message.STUCK)
            return True
        return False

    def start_control(self, server: Any) -> None:
        """Tell the core the request limit (it retires the worker with the request that reaches
        it, io/request_limit.rs), and answer the master's control questions on the socket
        pair it left us."""
        server.retire_after(self.max_requests,
                            max(0.0, self.min_lifetime - (time.monotonic() - self.born)))
        channel = control_channel.take_channel()
        if channel is not None:
            agent = control_agent.Agent(server, lambda: self.phase.value,
                                        control_agent.calls_listed(self.cfg))
            control_channel.serve_channel(channel, agent)

    def after_run(self) -> None:
        log.info("Worker %d served %d requests", os.getpid(), self._server.stats["requests"])
        if self.metrics_fd >= 0:  # the master adds what this worker counted to its totals
            os.pwrite(self.metrics_fd, self._server.metrics_text().encode(), 0)
