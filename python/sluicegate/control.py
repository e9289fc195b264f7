"""The control socket that `sluicegate ctl` talks to (ctl.py is the client), and how its answers
are gathered: the master's from its workers over one socket pair each, a single server's from
itself.

Where: `--control-socket PATH`, else `$XDG_RUNTIME_DIR/sluicegate-PID.ctl` (`/tmp/...` without
that variable), PID being the master's or the single process's (`default_path`); none with
`--no-control-socket`. The socket is created with mode 0600 (under a umask of 0177, so it never
exists with a wider one), answers only peers of the same user or root (`SO_PEERCRED`), and is
removed when the server stops. A path where a live server answers is left alone (the control
socket is then off, said in the log); a dead socket there is replaced.

The protocol: one JSON object per line. A client connects, sends `{"command": ...}`, reads one
answer (`{"ok": true, ...}` or `{"ok": false, "error": ...}`) and the server closes. Commands:
`status`, `requests` (`"stacks": true` for Python stacks), `reload`, `workers`
(`"change": N`, N from -1024 to +1024 and never past 1024 workers: MAX_WORKERS),
`reopen-logs`, `stop`. Clients are answered at once, up to MAX_CLIENTS, each on a thread of
its own and within CLIENT_TIMEOUT_S, so a slow one holds only itself. The operations are the
signal table's (signals.py): a master queues the signal as if it had received it (`MasterView.signal`), so `workers` with +3
is three TTIN, never merged into one as three quick signals could be.

What a server process reports (`Agent`) comes from its core, from the same counters as
`/metrics`: `Server.stats`, the gauges of `Server.metrics_text()` (read by metrics_total's
parser) and `Server.in_flight()`, the registry behind `sluicegate_app_calls_in_flight`. A
master asks each worker over the socket pair it made before the fork (`Channel`, the worker's
end served by an `sg-ctl-agent` thread); a worker that does not answer within
`WORKER_TIMEOUT_S` is shown with what the master knows of it (pid, age, memory, state).
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import signal
import socket
import stat
import struct
import sys
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from . import children, thread_names
from .logs import log
from .metrics_total import Reading

#: How long a master waits for one worker's answer before showing it without one.
WORKER_TIMEOUT_S = 2.0

#: How long a client may take to send its whole command, and to take its whole answer: a
#: deadline, not a pause between bytes, so that one sending a byte now and then is cut off too.
CLIENT_TIMEOUT_S = 5.0

#: Clients answered at once, each on its own thread (`sg-ctl-client`): a slow one holds only
#: its own. One more is told the server is busy, and closed.
MAX_CLIENTS = 8

#: The most workers a master runs (master.SLOTS, the entries of the shared connection-count
#: table; --workers' bound), and so the most a `workers` command may change their number by:
#: each unit is one queued TTIN or TTOU, and a larger change could only be refused.
MAX_WORKERS = 1024

#: The longest command line a client may send.
MAX_COMMAND = 4096

#: How often the listening thread looks whether it was closed.
ACCEPT_TICK_S = 0.5

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
    sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")


def _bind(path: str) -> socket.socket:
    """A listening unix socket at `path`, mode 0600; OSError (with a reason) if a live server
    or a file that is no socket is there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(st.st_mode):
            raise OSError(errno.EEXIST, f"{path} exists and is not a socket")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
            raise OSError(errno.EADDRINUSE, f"a running server answers on {path}")
        except (ConnectionRefusedError, FileNotFoundError):
            os.unlink(path)  # a dead socket, left by a server that was killed
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(path)
    except OSError:
        sock.close()
        raise
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(16)
    return sock


def _peer_allowed(conn: socket.socket) -> bool:
    """The peer runs as this process's user, or as root."""
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return True  # no SO_PEERCRED: the socket's mode alone decides
    _, uid, _ = struct.unpack("3i", creds)
    return uid in (0, os.geteuid())


class ControlServer:
    """The control socket: a thread (`sg-control`) accepts clients and hands each to a thread
    of its own (`sg-ctl-client`, at most MAX_CLIENTS at once), which reads its one command
    within CLIENT_TIMEOUT_S and answers it with `handle(command) -> answer`."""

    def __init__(self, path: str, handle: Callable[[Dict[str, Any]], Dict[str, Any]]) -> None:
        self.path = path
        self.handle = handle
        self.sock = _bind(path)
        st = os.stat(path)
        self._file = (st.st_dev, st.st_ino)  # removed at the end only if it is still this one
        self.sock.settimeout(ACCEPT_TICK_S)
        self._closed = threading.Event()
        self._clients: Set[Any] = set()  # the client threads
        self._clients_lock = threading.Lock()
        self._thread = thread_names.start(self._serve, "sg-control")

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                if self._closed.is_set():
                    return
                time.sleep(ACCEPT_TICK_S)  # out of descriptors: try again later
                continue
            with self._clients_lock:
                room = len(self._clients) < MAX_CLIENTS
                if room:
                    thread = thread_names.start(lambda c=conn: self._client(c), "sg-ctl-client")
                    self._clients.add(thread)
            if not room:
                with conn:
                    conn.settimeout(ACCEPT_TICK_S)
                    try:
                        send_line(conn, {"ok": False, "error": f"busy: {MAX_CLIENTS} clients "
                                                               "are being answered, try again"})
                    except OSError:
                        pass

    def _client(self, conn: socket.socket) -> None:
        try:
            with conn:
                self._answer(conn)
        finally:
            with self._clients_lock:
                self._clients.discard(threading.current_thread())

    def _answer(self, conn: socket.socket) -> None:
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        try:
            conn.settimeout(CLIENT_TIMEOUT_S)
            if not _peer_allowed(conn):
                send_line(conn, {"ok": False, "error": "not this server's user"})
                return
            data = b""
            while b"\n" not in data and len(data) < MAX_COMMAND:
                left = deadline - time.monotonic()
                if left <= 0:
                    return  # too slow: closed without an answer
                conn.settimeout(left)
                chunk = conn.recv(MAX_COMMAND)
                if not chunk:
                    break
                data += chunk
            try:
                command = json.loads(data.split(b"\n", 1)[0] or b"null")
                if not isinstance(command, dict):
                    raise ValueError("a command is a JSON object")
                answer = self.handle(command)
            except ValueError as e:
                answer = {"ok": False, "error": f"bad command: {e}"}
            except Exception as e:  # the server goes on; the client hears why
                log.exception("Control socket: %r failed", data[:200])
                answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
            conn.settimeout(CLIENT_TIMEOUT_S)  # the answer too: a client that takes none goes
            send_line(conn, answer)
        except OSError:
            pass  # the client went away, or was too slow

    def close_in_child(self) -> None:
        """In a worker just forked: close the listener's descriptor, nothing else."""
        self.sock.close()

    def close(self) -> None:
        """Stop answering and remove the socket file (if it is still ours). The thread is
        woken (`shutdown` ends its `accept`) and joined: it holds the server it reads from,
        which a server stopped inside a program must not outlive."""
        self._closed.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if threading.current_thread() is not self._thread:
            self._thread.join(CLIENT_TIMEOUT_S + ACCEPT_TICK_S)
        with self._clients_lock:
            clients = list(self._clients)
        for thread in clients:  # each ends within its deadline (and the handle's own waits)
            if thread is not threading.current_thread():
                thread.join(CLIENT_TIMEOUT_S + WORKER_TIMEOUT_S)
        self.handle = _closed_handle
        try:
            st = os.stat(self.path)
            ours = (st.st_dev, st.st_ino) == self._file
        except OSError:
            ours = False
        self.sock.close()
        if ours:
            try:
                os.unlink(self.path)
            except OSError:
                pass


def _closed_handle(command: Dict[str, Any]) -> Dict[str, Any]:
    return {"ok": False, "error": "the server is stopping"}


def start(path: Optional[str], handle: Callable[[Dict[str, Any]], Dict[str, Any]]
          ) -> Optional[ControlServer]:
    """The control server at `path` (None: off); if it cannot listen there, the server runs
    without one and the log says why."""
    if path is None:
        return None
    try:
        server = ControlServer(path, handle)
    except OSError as e:
        log.error("Control socket %s: cannot listen (%s): `sluicegate ctl` will not reach this "
                  "server", path, e.strerror or e)
        return None
    log.info("Control socket at %s", path)
    return server


# -- a server process's own facts --------------------------------------------------------


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
        for family, key, _, value in Reading(self.server.metrics_text()).samples:
            if family in GAUGES:
                facts[GAUGES[family]] = int(value)
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
        return {"ok": True, "status": self.status()}


def allowance() -> Dict[str, Any]:
    """The CPU the server's cgroup allows and how often its quota stopped it, read now
    (`_core.cpu_allowance`): `ctl status` shows it beside the master (the workers share its
    cgroup)."""
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


# -- a master and its workers -------------------------------------------------------------


class Channel:
    """The master's end of the socket pair it shares with one worker: `ask` sends a command and
    waits for the answer that carries the same number (a late answer to an earlier question
    is skipped)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lock = threading.Lock()
        self._seq = 0
        self._buf = b""

    def ask(self, command: Dict[str, Any], timeout: float = WORKER_TIMEOUT_S
            ) -> Optional[Dict[str, Any]]:
        with self._lock:
            self._seq += 1
            deadline = time.monotonic() + timeout
            try:
                send_line(self.sock, dict(command, id=self._seq))
                while True:
                    while b"\n" not in self._buf:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            return None
                        self.sock.settimeout(left)
                        data = self.sock.recv(1 << 16)
                        if not data:
                            return None
                        self._buf += data
                    line, self._buf = self._buf.split(b"\n", 1)
                    answer = json.loads(line)
                    if answer.get("id") == self._seq:
                        return answer
            except (OSError, ValueError):
                return None

    def close(self) -> None:
        self.sock.close()


def serve_channel(sock: socket.socket, agent: Agent) -> None:
    """In a worker: answer the master's questions on `sock` on a thread (`sg-ctl-agent`) until
    the master closes its end."""

    def serve() -> None:
        with sock, sock.makefile("rb") as lines:
            for line in lines:
                try:
                    command = json.loads(line)
                    answer = agent.answer(command)
                    answer["id"] = command.get("id")
                    send_line(sock, answer)
                except (ValueError, AttributeError):
                    continue
                except OSError:
                    return

    thread_names.start(serve, "sg-ctl-agent")


#: In a worker: its end of the socket pair, left by the master between the fork and the
#: worker's server (`take_channel`).
_inherited: List[socket.socket] = []


def take_channel() -> Optional[socket.socket]:
    return _inherited.pop() if _inherited else None


@dataclasses.dataclass
class MasterView:
    """What the master shows its control server: callables read on the control thread."""

    state: Callable[[], str]
    target: Callable[[], int]
    #: (pid, worker number from 1, life) of each worker.
    workers: Callable[[], List[Tuple[int, int, str]]]
    #: Queue a signal for the master's loop, as if it had been received.
    signal: Callable[[int], None]


def workers_change_refused(change: object) -> Optional[str]:
    """Why a `workers` change is refused (None: it is an integer of 1 to MAX_WORKERS,
    either sign)."""
    if not isinstance(change, int) or isinstance(change, bool) or change == 0:
        return "workers takes +N or -N (N at least 1)"
    if abs(change) > MAX_WORKERS:
        return (f"workers takes +N or -N with N at most {MAX_WORKERS} (the most workers "
                "a master runs)")
    return None


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
            _inherited.append(pair[1])
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
        for pid, number, life in self.view.workers():
            ch = self.channels.get(pid) if life not in NOT_SERVING else None
            answer = ch.ask({"command": "status"}) if ch is not None else None
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
                  "rss": children.worker_rss(os.getpid()), "allowance": allowance()}
        return {"ok": True, "master": master, "workers": workers}


def start_master(path: Optional[str], view: MasterView) -> Optional[MasterControl]:
    """A master's control (None with --no-control-socket). Its socket may fail to listen (the
    log says why): the master still asks its workers, for nothing."""
    if path is None:
        return None
    control = MasterControl(None, view)
    control.server = start(path, control.handle)
    return control


def parse_control_socket(value: object) -> str:
    """A unix socket path for the control socket ('' for the default one)."""
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"expected a string, not {type(value).__name__}")
    text = os.fspath(value)
    text = text[5:] if text.startswith("unix:") else text
    if "\0" in text:
        raise ValueError("a path cannot hold a NUL byte")
    if len(os.fsencode(text)) > 107:  # sun_path: 108 bytes with its NUL
        raise ValueError("a unix socket path is at most 107 bytes")
    return text


def option_rows(Option: Callable[..., Any], parse_bool: Callable[[object], bool]
                ) -> Tuple[Any, ...]:
    """The control socket's rows of options.py's table, in its order (after
    --debug-requests)."""
    return (
        Option(
            "control_socket", parse_control_socket, "",
            "The control socket's path (a unix socket, mode 0600), which `sluicegate ctl` talks to: "
            "status, in-flight requests, reload, worker counts, log reopening, stop "
            "(docs/operations.md). Empty: $XDG_RUNTIME_DIR/sluicegate-PID.ctl, or "
            "/tmp/sluicegate-PID.ctl without it, PID being the master's (or the single process's).",
            "PATH", str,
        ),
        Option(
            "no_control_socket", parse_bool, "false",
            "Run no control socket (`sluicegate ctl` then cannot reach this server).",
            "", bool, switch=True, core=True,
        ),
    )
