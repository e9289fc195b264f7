"""uWSGI's stats server (`--stats ADDRESS`, `--stats-http`): the JSON document uWSGI 2.0's
master writes (core/master_utils.c, `uwsgi_master_generate_stats`) to each client of its stats
socket, made from what the server already knows of its workers (control_master.py's `status`
answer: each worker's counters as its core counts them), so that `uwsgitop` and the
exporters that read uWSGI's stats work unchanged.

ADDRESS as uWSGI takes it: `HOST:PORT` (`:PORT` is every interface), a unix socket path, or
`@NAME` (an abstract unix socket). A client connects and reads the document until the
server closes (with `--stats-http`: it sends an HTTP request first and gets a `HTTP/1.0 200
OK` answer with `Content-Type: application/json`, as uWSGI's `stats-http`).

The document (`Document`): the top-level keys of uWSGI's (`version`, `listen_queue`,
`listen_queue_errors`, `signal_queue`, `load`, `pid`, `uid`, `gid`, `cwd`, `locks`, `sockets`,
`workers`), and per worker `id` (uWSGI's worker id, from 1: a replacement keeps its predecessor's), `pid`, `accepting`, `requests`, `delta_requests` (since the
previous document), `exceptions` (requests that ended with an error: the app failed, or the
request was refused), `harakiri_count` (calls ended by --timeout), `signals`, `signal_queue`
(0: no signal framework), `status` (`idle`, `busy`, or `cheap` for a worker not serving yet),
`rss`, `vsz` (bytes), `running_time` (µs spent in requests), `last_spawn` (epoch seconds),
`respawn_count` (starts of the worker id), `tx` (response body bytes), `avg_rt` (µs per
request), `apps` (the one app), `cores` (one per pool thread; `in_request` set on as many as
are busy; per-core request counts are not kept, so they read 0). Left out: `daemons`, `caches`,
`metrics`, `spoolers`, `crons`, `legions`, which uWSGI writes only when such a subsystem is
configured, and sluicegate has none of them.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

from . import thread_names
from .logs import log

#: The uWSGI release whose document this follows (uwsgi_module's version too).
UWSGI_VERSION = "2.0.31"

#: The most a client may take to send its HTTP request (--stats-http).
CLIENT_TIMEOUT_S = 5.0

if TYPE_CHECKING:
    #: One listener as the document shows it: (name, protocol, backlog, listening socket or None).
    SocketInfo = Tuple[str, str, int, Optional[socket.socket]]

if TYPE_CHECKING:
    #: What the server knows now: control_master.py's `status` answer.
    Status = Callable[[], Dict[str, Any]]


def parse_stats(value: object) -> Optional[str]:
    """A stats address: HOST:PORT, :PORT, a unix path or @NAME ('' or None: off)."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"expected a string, not {type(value).__name__}")
    text = os.fspath(value).strip()
    if not text or text.lower() == "off":
        return None
    if "\0" in text:
        raise ValueError("an address cannot hold a NUL byte")
    if not _is_unix(text):
        host, _, port = text.rpartition(":")
        if not port.isdigit() or int(port) > 65535:
            raise ValueError(f"{text!r}: expected HOST:PORT, :PORT, a unix socket path or @NAME")
    return text


def _is_unix(address: str) -> bool:
    return address.startswith(("@", "/", "./", "unix:")) or ":" not in address


def listen(address: str) -> socket.socket:
    """The stats socket, listening (uWSGI's `bind_to_tcp` / `bind_to_unix`)."""
    if _is_unix(address):
        path = address[5:] if address.startswith("unix:") else address
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if path.startswith("@"):
            sock.bind("\0" + path[1:])
        else:
            try:
                os.unlink(path)  # uWSGI replaces a stale socket file
            except FileNotFoundError:
                pass
            sock.bind(path)
    else:
        host, _, port = address.rpartition(":")
        host = host.strip("[]") or "0.0.0.0"
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, int(port)))
    sock.listen(64)
    return sock


def _vsz(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _accept_queue(sock: Optional[socket.socket]) -> int:
    """Connections waiting in a TCP listener's accept queue (Linux's TCP_INFO `tcpi_unacked`
    on a listening socket, which uWSGI reads too); 0 where it cannot be read."""
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return 0
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        return int(struct.unpack_from("I", info, 24)[0])  # tcpi_unacked
    except (OSError, struct.error):
        return 0


def socket_infos(sockets: List[Any], backlog: int) -> List[SocketInfo]:
    """The document's `sockets` from the server's listeners (listeners.BoundSocket): the name
    uWSGI gives a socket (HOST:PORT or the path) and its protocol (`uwsgi` or `http`)."""
    infos = []
    for s in sockets:
        a = s.address
        name = a.host if a.kind == "unix" else f"{a.host}:{s.port}"
        proto = "uwsgi" if a.wire == "uwsgi" else "http"
        infos.append((name, proto, backlog, getattr(s, "_sock", None)))
    return infos


class Document:
    """Makes uWSGI's document from the server's status; keeps each worker's last request
    count for `delta_requests`."""

    def __init__(self, status: Status, sockets: List[SocketInfo],
                 respawns: Callable[[], Dict[int, int]],
                 ids: Callable[[], Dict[int, int]] = dict) -> None:
        self.status = status
        self.sockets = sockets
        self.respawns = respawns
        self.ids = ids
        self.last: Dict[int, int] = {}
        self.lock = threading.Lock()

    def make(self) -> Dict[str, Any]:
        answer = self.status()
        workers = [w for w in answer.get("workers", [])]
        queues = [_accept_queue(s) for _, _, _, s in self.sockets]
        respawns = self.respawns()
        ids = self.ids()
        cwd = os.getcwd()
        doc: Dict[str, Any] = {
            "version": UWSGI_VERSION,
            "listen_queue": sum(queues),
            "listen_queue_errors": 0,
            "signal_queue": 0,
            "load": sum(int(w.get("in_flight") or 0) for w in workers),
            "pid": os.getpid(),
            "uid": os.getuid(),
            "gid": os.getgid(),
            "cwd": cwd,
            "locks": [],
            "sockets": [
                {"name": name, "proto": proto, "queue": q, "max_queue": backlog, "shared": 0,
                 "can_offload": 0}
                for (name, proto, backlog, _), q in zip(self.sockets, queues)],
            "workers": [self._worker(w, respawns, ids, cwd) for w in workers],
        }
        return doc

    def _worker(self, w: Dict[str, Any], respawns: Dict[int, int], ids: Dict[int, int],
                cwd: str) -> Dict[str, Any]:
        pid = int(w.get("pid") or 0)
        number = ids.get(pid) or int(w.get("worker") or 1)  # uWSGI's id, else the slot's
        requests = int(w.get("requests") or 0)
        with self.lock:
            delta = max(0, requests - self.last.get(pid, 0))
            self.last[pid] = requests
        count = float(w.get("duration_count") or 0)
        running = int(float(w.get("duration_sum") or 0) * 1e6)
        serving = w.get("state") in (None, "serving", "outgoing", "stopping") and \
            w.get("answered", True)
        busy = int(w.get("busy_threads") or 0)
        threads = max(1, int(w.get("threads") or 1))
        age = w.get("age")
        exceptions = int(w.get("errors") or 0)
        return {
            "id": number, "pid": pid, "accepting": 1 if serving else 0,
            "requests": requests, "delta_requests": delta, "exceptions": exceptions,
            "harakiri_count": int(w.get("app_timeouts") or 0), "signals": 0,
            "signal_queue": 0,
            "status": "cheap" if not serving else "busy" if busy or w.get("in_flight")
            else "idle",
            "rss": int(w.get("rss") or 0), "vsz": _vsz(pid),
            "running_time": running,
            "last_spawn": int(time.time() - age) if age is not None else 0,
            "respawn_count": respawns.get(number, 1),
            "tx": int(w.get("tx") or 0),
            "avg_rt": int(running / count) if count else 0,
            "apps": [{"id": 0, "modifier1": 0, "mountpoint": "", "startup_time": 0,
                      "requests": requests, "exceptions": exceptions, "chdir": ""}],
            "cores": [{"id": i, "requests": 0, "static_requests": 0, "routed_requests": 0,
                       "offloaded_requests": 0, "write_errors": 0, "read_errors": 0,
                       "in_request": 1 if i < busy else 0, "vars": [], "req_info": {}}
                      for i in range(threads)],
        }


class StatsServer:
    """The stats socket and its thread (`sg-uwsgi-stats`): one document per client."""

    def __init__(self, sock: socket.socket, document: Document, http: bool) -> None:
        self.sock = sock
        self.document = document
        self.http = http
        self.closed = False
        self.thread = thread_names.start(self._serve, "sg-uwsgi-stats")

    def _serve(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                if self.closed:
                    return
                continue
            thread_names.start(lambda conn=conn: self._answer(conn), "sg-uwsgi-stats")

    def _answer(self, conn: socket.socket) -> None:
        try:
            with conn:
                conn.settimeout(CLIENT_TIMEOUT_S)
                if self.http:
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.0 200 OK\r\nConnection: close\r\n"
                                 b"Access-Control-Allow-Origin: *\r\n"
                                 b"Content-Type: application/json\r\n\r\n")
                conn.sendall(json.dumps(self.document.make()).encode())
        except Exception as e:  # a client gone, a worker that did not answer
            log.debug("stats: %s", e)

    def forget_in_child(self) -> None:
        """In a process forked from the server: close its copy of the socket (no shutdown,
        which would stop the server's)."""
        self.sock.close()

    def close(self) -> None:
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def start(address: Optional[str], http: bool, status: Status, sockets: List[SocketInfo],
          respawns: Callable[[], Dict[int, int]] = dict,
          ids: Callable[[], Dict[int, int]] = dict) -> Optional[StatsServer]:
    """The stats server on `address` (None: off); a socket that cannot be listened on is said
    in the log and the server runs without it. `respawns()`: starts per uWSGI worker id;
    `ids()`: each worker's uWSGI id by pid (a replacement keeps its predecessor's)."""
    if not address:
        return None
    try:
        sock = listen(address)
    except OSError as e:
        log.error("stats: cannot listen on %s: %s", address, e)
        return None
    log.info("stats server (uWSGI's JSON%s) at %s", " over HTTP" if http else "", address)
    return StatsServer(sock, Document(status, sockets, respawns, ids), http)
