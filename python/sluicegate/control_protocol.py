"""What `sluicegate ctl` (ctl.py) and the server's control socket (control_server.py) agree on:
where the socket is, how a message is framed, and the commands.

Where: `--control-socket PATH`, else `$XDG_RUNTIME_DIR/sluicegate-PID.ctl` (`/tmp/...` without
that variable), PID being the master's or the single process's (`default_path`); none with
`--no-control-socket` (`path_for`).

The protocol: one JSON object per line (`send_line`, `loads`: json is imported at the first
message, so a server no one asks carries none; privileges.py imports it before a user switch).
A client connects, sends `{"command": ...}`, reads one answer (`{"ok": true, ...}` or
`{"ok": false, "error": ...}`) and the server closes. Commands: `status`, `requests` (`"stacks": true` for Python stacks),
`reload`, `workers` (`"change": N`, N from -1024 to +1024 and never past 1024 workers:
MAX_WORKERS), `reopen-logs`, `stop`. The operations are the signal table's (signals.py,
`OPERATIONS`): a master queues the signal as if it had received it (control_master.py), so
`workers` with +3 is three TTIN, never merged into one as three quick signals could be.
"""

from __future__ import annotations

import os
import signal
import socket

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional


#: How long a master waits for one worker's answer before showing it without one.
WORKER_TIMEOUT_S = 2.0


#: The most workers a master runs (master.SLOTS, the entries of the shared connection-count
#: table; --workers' bound), and so the most a `workers` command may change their number by:
#: each unit is one queued TTIN or TTOU, and a larger change could only be refused.
MAX_WORKERS = 1024


#: The commands that change something, and the signal each stands for (signals.TABLE).
OPERATIONS: Dict[str, signal.Signals] = {
    "reload": signal.SIGHUP,
    "reopen-logs": signal.SIGUSR1,
    "stop": signal.SIGTERM,
}


#: Workers' lives (children.Life) in which their server is not built yet, or never will be:
#: the master does not ask them (it would wait WORKER_TIMEOUT_S for nothing).
NOT_SERVING = ("booting", "cancelled")


NEEDS_A_MASTER = "worker counts need a master (--workers N)"


def runtime_dir() -> str:
    """Where default control sockets live: $XDG_RUNTIME_DIR if it is a directory, else /tmp."""
    d = os.environ.get("XDG_RUNTIME_DIR", "")
    return d if d and os.path.isdir(d) else "/tmp"


def default_path(pid: int) -> str:
    return os.path.join(runtime_dir(), f"sluicegate-{pid}.ctl")


def path_for(control_socket: str, no_control_socket: bool) -> Optional[str]:
    """This process's control socket path from the two options (None: off)."""
    if no_control_socket:
        return None
    return os.path.abspath(control_socket) if control_socket else default_path(os.getpid())


def send_line(sock: socket.socket, message: Dict[str, Any]) -> None:
    import json  # at the first message: a process no one asks carries no json

    sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")


def loads(line: bytes) -> Any:
    """One message read (ValueError if it is not JSON)."""
    import json

    return json.loads(line)


def workers_change_refused(change: object) -> Optional[str]:
    """Why a `workers` change is refused (None: it is an integer of 1 to MAX_WORKERS,
    either sign)."""
    if not isinstance(change, int) or isinstance(change, bool) or change == 0:
        return "workers takes +N or -N (N at least 1)"
    if abs(change) > MAX_WORKERS:
        return (f"workers takes +N or -N with N at most {MAX_WORKERS} (the most workers "
                "a master runs)")
    return None
