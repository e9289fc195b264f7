"""The single-process server (no `--workers`): one `ServerProcess` that tells the world itself.

It logs the `Starting sluicegate` line and one `Listening at: URL` line per socket, and tells
systemd `READY=1` (sd_notify.py). Tests find the port of a `-b 127.0.0.1:0` server by parsing the
`Listening at: http://HOST:PORT` line: its wording is a contract. HUP re-reads the TLS
certificate and key (on a thread with a timeout, reading.py) and serves new connections with
them once they pass the checks; the app and the other options need a master to reload. The
other operations only a master carries out (USR2, TTIN, TTOU, WINCH) are logged and ignored,
never fatal.
"""

from __future__ import annotations

import threading
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple

    from .uwsgi_stats import StatsServer

from . import control_agent, control_server, hook_objects, hooks, sd_notify, tls
from .control_protocol import path_for
from .core_server import ServerProcess
from .errors import SluicegateError
from .logs import log
from .reading import Reading
from .signals import Op

#: Why a single server ignores an operation, by operation.
NEEDS_A_MASTER = "reloading the app and the options, and worker counts, need a master " \
    "(--workers N)"
UPGRADE_NEEDS_A_MASTER = "an upgrade on the same sockets needs a master (--workers N); " \
    "restart the process instead (see docs/operations.md)"
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
    _control: Optional[control_server.ControlServer] = None
    #: The --stats server (uwsgi_stats.py), while serving.
    _stats: Optional[StatsServer] = None

    def start_control(self, server: Any) -> None:
        agent = control_agent.Agent(server, lambda: self.phase.value,
                                    control_agent.calls_listed(self.cfg))
        handle = control_agent.single_handler(agent, time.monotonic())
        self._control = control_server.start(
            path_for(self.cfg.control_socket, self.cfg.no_control_socket), handle)
        if not self.cfg.stats:
            return
        from . import uwsgi_stats  # here: without --stats no process needs it

        self._stats = uwsgi_stats.start(  # uWSGI's stats document, this process its one worker
            self.cfg.stats, self.cfg.stats_http, lambda: handle({"command": "status"}),
            uwsgi_stats.socket_infos(self.sockets, self.cfg.backlog))

    def stop_control(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._stats is not None:
            self._stats.close()
            self._stats = None

    def on_stopping(self) -> None:
        sd_notify.notify("STOPPING=1", "STATUS=finishing in-flight requests")

    def on_master_op(self, name: str, op: Op) -> None:
        if op is Op.RELOAD and self.cfg.certfile:
            self._reload_certificate(name)
            return
        why = NEEDS_A_MASTER if op in (Op.RELOAD, Op.MORE_WORKERS, Op.FEWER_WORKERS) \
            else UPGRADE_NEEDS_A_MASTER if op is Op.UPGRADE else SEE_THE_DOCS
        log.info("Received %s: ignored (%s)", name, why)

    def _reload_certificate(self, name: str) -> None:
        """HUP with --certfile: read the certificate and key again, off this thread (a signal
        handler's), and serve new connections with them once they pass the checks; one line
        says what came of it."""
        def done() -> None:
            timer.cancel()
            if not reading.settle():
                return  # said overdue already: what it read so late is not used
            try:
                credentials = reading.result()
            except SluicegateError as e:
                log.error("Received %s: the new certificate is not used (%s); serving with the "
                          "previous one", name, e)
                return
            if self._server is not None and self._server.set_tls(credentials):
                tls.adopt(credentials)
                import datetime  # only with a certificate to report
                until = datetime.datetime.fromtimestamp(credentials.not_after,
                                                        datetime.timezone.utc)
                log.info("Received %s: certificate re-read (%s, valid until %s); new connections "
                         "are served with it (%s)", name, credentials.subject,
                         until.strftime("%Y-%m-%d %H:%M:%S UTC"), NEEDS_A_MASTER)

        def overdue() -> None:
            if reading.settle():
                log.error("Received %s: the certificate and key could not be read within %gs (a "
                          "hung network mount? a FIFO?); serving with the previous ones",
                          name, reading.timeout)

        reading = Reading(lambda: tls.read(self.cfg), done)
        timer = threading.Timer(reading.timeout, overdue)
        timer.daemon = True
        reading.start()
        timer.start()  # cancelled already if the reading is done: then it ends at once

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
