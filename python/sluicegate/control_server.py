"""The control socket's server: a unix socket that `sluicegate ctl` (ctl.py) talks to, answered
by a handler the process gives it (control_agent.single_handler in a single server,
control_master.MasterControl.handle in a master); the protocol is control_protocol.py's.

The socket is created with mode 0600 (under a umask of 0177, so it never exists with a wider
one), answers only peers of the same user or root (`SO_PEERCRED`), and is removed when the
server stops. A path where a live server answers is left alone (the control socket is then
off, said in the log); a dead socket there is replaced. Clients are answered at once, up to
MAX_CLIENTS, each on a thread of its own and within CLIENT_TIMEOUT_S, so a slow one holds
only itself; each is hung up on without a reset (`_hang_up`).
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import threading
import time

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional, Set

from . import thread_names
from .control_protocol import WORKER_TIMEOUT_S, loads, send_line
from .logs import log


#: How long a client may take to send its whole command, and to take its whole answer: a
#: deadline, not a pause between bytes, so that one sending a byte now and then is cut off too.
CLIENT_TIMEOUT_S = 5.0


#: Clients answered at once, each on its own thread (`sg-ctl-client`): a slow one holds only
#: its own. One more is told the server is busy, and closed.
MAX_CLIENTS = 8


#: The longest command line a client may send.
MAX_COMMAND = 4096


#: How often the listening thread looks whether it was closed.
ACCEPT_TICK_S = 0.5


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
    import struct  # at the first client: a server no one asks carries no struct

    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return True  # no SO_PEERCRED: the socket's mode alone decides
    _, uid, _ = struct.unpack("3i", creds)
    return uid in (0, os.geteuid())


def _hang_up(conn: socket.socket) -> None:
    """Close a client's connection so that it reads the end of the stream after what it was
    sent: a unix socket closed with bytes it has not read resets its peer (ECONNRESET, where
    the answer may not be read), as when a command passed MAX_COMMAND or a byte came just
    before the deadline. So its sending is stopped first (`shutdown`: it gets EPIPE from then
    on), and what it sent before is read and dropped (a bounded amount: what the socket holds)
    before the close."""
    try:
        conn.shutdown(socket.SHUT_RDWR)
        conn.setblocking(False)
        while conn.recv(1 << 16):
            pass
    except OSError:
        pass
    conn.close()


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
                conn.settimeout(ACCEPT_TICK_S)
                try:
                    send_line(conn, {"ok": False, "error": f"busy: {MAX_CLIENTS} clients "
                                                           "are being answered, try again"})
                except OSError:
                    pass
                _hang_up(conn)

    def _client(self, conn: socket.socket) -> None:
        try:
            try:
                self._answer(conn)
            finally:
                _hang_up(conn)
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
                command = loads(data.split(b"\n", 1)[0] or b"null")
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
