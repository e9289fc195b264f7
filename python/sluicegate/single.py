"""The single-process server (no `--workers`): one `ServerProcess` that tells the world itself.

It logs the `Starting sluicegate` line and one `Listening at: URL` line per socket, and tells
systemd `READY=1` (sd_notify.py). Tests find the port of a `-b 127.0.0.1:0` server by parsing the
`Listening at: http://HOST:PORT` line: its wording is a contract. The operations only a master
carries out (HUP, USR2, TTIN, TTOU, WINCH) are logged and ignored, never fatal.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import time

from . import control, hook_objects, hooks, sd_notify
from .core_server import ServerProcess
from .logs import log
from .signals import Op

#: Why a single server ignores an operation, by operation.
NEEDS_A_MASTER = "reloading and worker counts need a master (--workers N)"
SEE_THE_DOCS = "see docs/operations.md"


class SingleServer(ServerProcess):
    """One server, alone in its process (the lifecycle is core_server.Phase)."""

    def announce(self, threads: Tuple[int, int], why: str) -> None:
        log.info("Starting sluicegate %s: app %s, threads %d:%d (%s)",
                 self.version, self.app_name, threads[0], threads[1], why)
        if self.cfg.metrics_bind:  # before the readiness lines, which end the waiting
            where = self.cfg.metrics_bind
            log.info("Metrics at: %s/metrics", where if where.startswith("unix:")
                     else f"http://{where}")
        for s in self.sockets:
            log.info("Listening at: %s", s.url)
        sd_notify.notify("READY=1", "STATUS=serving")
        try:
            hooks.call(self.cfg.hooks, "when_ready",
                       hook_objects.server(self.cfg, 1, sockets=self.sockets, app=self.app))
        except hooks.HookExit as e:  # sys.exit() in when_ready: stop, with its status
            self.hook_exit = e.exit_code
            self.shutdown(graceful=True)

    #: The status a hook's sys.exit() asked for (hooks.EXITS), if one did.
    hook_exit: Optional[int] = None

    def run(self) -> int:
        status = super().run()
        return self.hook_exit if self.hook_exit is not None else status

    #: The control socket `sluicegate ctl` talks to, while serving.
    _control: Optional[control.ControlServer] = None

    def start_control(self, server: Any) -> None:
        agent = control.Agent(server, lambda: self.phase.value)
        self._control = control.start(
            control.path_for(self.cfg.control_socket, self.cfg.no_control_socket),
            control.single_handler(agent, time.monotonic()))

    def stop_control(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None

    def on_stopping(self) -> None:
        sd_notify.notify("STOPPING=1", "STATUS=finishing in-flight requests")

    def on_master_op(self, name: str, op: Op) -> None:
        why = NEEDS_A_MASTER if op in (Op.RELOAD, Op.MORE_WORKERS, Op.FEWER_WORKERS) \
            else SEE_THE_DOCS
        log.info("Received %s: ignored (%s)", name, why)

    def watches(self) -> bool:
        return bool(self.cfg.timeout and self.cfg.max_stuck)

    def watch(self, stats: Dict[str, Any]) -> bool:
        """With --max-stuck and no master to replace it: log the stuck calls, once."""
        if stats["stuck_calls"] < self.cfg.max_stuck:
            return False
        log.error("%d app calls are stuck past --timeout and hold their threads; with "
                  "--workers this worker would be replaced (--max-stuck %d)",
                  stats["stuck_calls"], self.cfg.max_stuck)
        return True
