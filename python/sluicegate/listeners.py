"""Listening addresses: their syntax, and binding them to sockets in Python.

sluicegate binds its sockets here rather than in the Rust core for two reasons:
  - errors such as "address already in use" or "permission denied" become one clear line from
    Python, before the core starts;
  - binding is separate from serving. A `BoundSocket` stays an open socket until it is handed
    over with `to_listener()`, so the master of `--workers` binds once, before any fork, and
    every worker process serves the same sockets (master.py).

Address syntax (the `--bind` option): `HOST:PORT`, `[IPV6]:PORT` or `unix:PATH`, where a unix
path may be followed by settings for the socket file: `unix:PATH;mode=660;owner=USER;group=GROUP`
(so that a proxy running as another user, nginx as `www-data`, may connect). A unix path that starts with `@` names an abstract
socket (Linux: no file, gone with the last descriptor; uWSGI's `@name`): `unix:@NAME`. Port 0
asks the kernel for a free port; the real one is read back after bind and is what gets reported (the
`Listening at:` log line, SERVER_PORT), so tests can bind port 0 and never race for a port.

Sockets can also come ready-made from systemd's socket activation (`LISTEN_FDS`): see
`inherited_sockets`.
"""

from __future__ import annotations

import errno
import os
import socket
import stat

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import List, Optional, Sequence, Tuple

from . import records
from .errors import BindError

if TYPE_CHECKING:
    #: What `_core.Server` takes per listener: (fd, kind, server_name, server_port, wire, tls).
    Listener = Tuple[int, str, str, str, str, bool]

_SYNTAX = ("expected HOST:PORT, [IPV6]:PORT, unix:PATH[;mode=660;owner=USER;group=GROUP] or unix:@NAME, "
           "each optionally after uwsgi: or proxy:, and that after https: or http:")

#: What a listener speaks: HTTP; HTTP after a PROXY protocol header (HAProxy's send-proxy);
#: the uwsgi protocol (nginx's uwsgi_pass).
WIRES = ("http", "proxy", "uwsgi")

#: The first descriptor systemd passes (sd_listen_fds(3)).
LISTEN_FDS_START = 3


@records.record(frozen=True)
class BindAddress:
    """One parsed `--bind` value. `host` is the host as written (IPv6 without brackets), or the
    socket's path for kind "unix"; `port` is the requested port (0 = any free port)."""

    kind: str  # "tcp" or "unix"
    host: str
    port: int = 0
    #: One of WIRES.
    wire: str = "http"
    #: Unix sockets only: the socket file's permission bits, owner and group (None: as created).
    mode: Optional[int] = None
    owner: Optional[str] = None
    group: Optional[str] = None
    #: TLS: True for `https:`, False for `http:` (plain even with --certfile), None: TLS when
    #: --certfile is given (gunicorn's rule).
    tls: Optional[bool] = None

    def __str__(self) -> str:
        prefix = "" if self.wire == "http" else f"{self.wire}:"
        if self.tls is not None:
            prefix = ("https:" if self.tls else "http:") + prefix
        if self.kind == "unix":
            return f"{prefix}unix:{self.host}"
        if ":" in self.host:
            return f"{prefix}[{self.host}]:{self.port}"
        return f"{prefix}{self.host}:{self.port}"


def parse_bind(text: str) -> BindAddress:
    """Parse one address, optionally prefixed by what the listener speaks (`uwsgi:`,
    `proxy:`); raise ValueError with a one-line reason if it is malformed."""
    text = text.strip()
    tls: Optional[bool] = None
    for scheme in ("https", "http"):
        if text.startswith(scheme + ":"):
            tls, text = scheme == "https", text[len(scheme) + 1:]
            break
    for wire in ("uwsgi", "proxy"):
        if text.startswith(wire + ":"):
            return records.replace(_parse_address(text[len(wire) + 1:]), wire=wire, tls=tls)
    return records.replace(_parse_address(text), tls=tls)


def _parse_address(text: str) -> BindAddress:
    if text.startswith("unix:"):
        path, *settings = text[len("unix:"):].split(";")
        # As gunicorn reads it (util.parse_address): "unix://" is a prefix of its own, so
        # unix://tmp/x.sock is ./tmp/x.sock and unix:///run/x.sock is /run/x.sock.
        path = path[2:] if path.startswith("//") else path
        if not path:
            raise ValueError("unix: needs a path, e.g. unix:/run/sluicegate.sock")
        if "\0" in path:
            raise ValueError("a unix socket path cannot contain NUL")
        if path == "@":
            raise ValueError("unix:@ needs a name, e.g. unix:@sluicegate")
        mode: Optional[int] = None
        owner: Optional[str] = None
        group: Optional[str] = None
        for setting in settings:
            key, eq, value = setting.strip().partition("=")
            if not eq or not value:
                raise ValueError(f"unix socket setting {setting!r}: expected mode=, owner= or group=")
            if key == "mode":
                try:
                    mode = int(value, 8)
                except ValueError:
                    raise ValueError(f"mode={value}: expected octal permission bits, e.g. 660") from None
                if not 0 <= mode <= 0o777:
                    raise ValueError(f"mode={value}: expected octal permission bits, e.g. 660")
            elif key == "owner":
                owner = value
            elif key == "group":
                group = value
            else:
                raise ValueError(f"unknown unix socket setting {key!r} (mode, owner, group)")
        return BindAddress("unix", path, mode=mode, owner=owner, group=group)
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ValueError(f"{_SYNTAX} (an IPv6 address looks like [::1]:8000)")
        port_text = rest[1:]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise ValueError(f"{_SYNTAX} (no port given)")
        if ":" in host:
            raise ValueError(f"{_SYNTAX} (put an IPv6 address in brackets: [{host}]:{port_text})")
    if not host:
        raise ValueError(f"{_SYNTAX} (no host given; 0.0.0.0 or [::] listens on every interface)")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"port {port_text!r} is not a number from 0 to 65535")
    return BindAddress("tcp", host, int(port_text))


class BoundSocket:
    """A listening, non-blocking socket, not yet handed to a server."""

    def __init__(self, address: BindAddress, sock: socket.socket, created: bool = True) -> None:
        """`created`: this process made the socket (and its unix file, which it removes at the
        end); False for sockets passed by systemd, whose files are systemd's."""
        self.address = address
        #: Speaks TLS (`https:`, or --certfile without `http:`): settled by the supervisor
        #: (`speak_tls`) before the socket is handed over.
        self.tls: bool = address.tls is True
        self._sock: Optional[socket.socket] = sock
        #: The real port after bind (port 0 reports the one the kernel chose); 0 for unix.
        self.port: int = sock.getsockname()[1] if address.kind == "tcp" else 0
        # The identity of the socket file we created, so cleanup never removes a file that
        # someone else put at the same path after us.
        self._unix_inode: Optional[Tuple[int, int]] = None
        if address.kind == "unix" and created and not is_abstract(address):
            st = os.stat(address.host)
            self._unix_inode = (st.st_dev, st.st_ino)

    @property
    def url(self) -> str:
        """Where clients reach this socket, as logged in the `Listening at:` line."""
        prefix = {"http": "", "proxy": "proxy:", "uwsgi": "uwsgi:"}[self.address.wire]
        if self.address.kind == "unix":
            return f"{prefix}unix:{self.address.host}"
        host = f"[{self.address.host}]" if ":" in self.address.host else self.address.host
        scheme = "uwsgi" if self.address.wire == "uwsgi" else "https" if self.tls else "http"
        return f"{prefix if self.address.wire == 'proxy' else ''}{scheme}://{host}:{self.port}"

    def to_listener(self) -> Listener:
        """Hand the socket over: detach its fd (the Rust core takes ownership of it) and return
        the `(fd, kind, server_name, server_port)` tuple that `_core.Server` wants."""
        if self._sock is None:
            raise RuntimeError(f"{self.address} was already handed over or closed")
        fd = self._sock.detach()
        self._sock = None
        port = "" if self.address.kind == "unix" else str(self.port)
        return (fd, self.address.kind, self.address.host, port, self.address.wire, self.tls)

    def stop_listening(self) -> None:
        """Close this process's descriptor of the socket, keeping its unix socket file (for
        `close()` to remove at the end): what a master does as a stop begins. The kernel closes
        the socket once its workers have closed theirs too, as each does when it stops
        accepting; from then on a new connection is refused, where it used to wait in a
        backlog nobody accepted from until the master exited."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def close(self) -> None:
        """Close the socket if still ours, and remove the unix socket file we created."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self.remove_unix_file()

    def fileno(self) -> int:
        """The socket's descriptor (while not handed over)."""
        if self._sock is None:
            raise RuntimeError(f"{self.address} was already handed over or closed")
        return self._sock.fileno()

    def reclaim_unix_file(self) -> None:
        """Own the unix socket file again (after forget_unix_file), if it is still ours."""
        if self.address.kind == "unix" and self._sock is not None:
            try:
                st = os.stat(self.address.host)
                if stat.S_ISSOCK(st.st_mode):
                    self._unix_inode = (st.st_dev, st.st_ino)
            except OSError:
                pass

    def forget_unix_file(self) -> None:
        """In a worker process: the socket file belongs to the master, which removes it."""
        self._unix_inode = None

    def remove_unix_file(self) -> None:
        """Remove the unix socket file if it is still the one this process created."""
        if self._unix_inode is None:
            return
        try:
            st = os.stat(self.address.host)
            if (st.st_dev, st.st_ino) == self._unix_inode:
                os.unlink(self.address.host)
        except OSError:
            pass
        self._unix_inode = None


def inherited_sockets(env: Optional[dict] = None) -> List[BoundSocket]:
    """The listening sockets systemd passed (socket activation: `LISTEN_PID` is this process,
    `LISTEN_FDS` of them from fd 3, optionally named by `LISTEN_FDNAMES`), or [] when none were.
    The variables are removed, so worker processes and the app do not take them for their own.
    Each must be a listening stream socket (TCP or unix), else BindError. Their unix files are
    not ours to remove (a master started by USR2 takes them over once it serves)."""
    env = os.environ if env is None else env
    if env.get("LISTEN_PID") != str(os.getpid()) or not env.get("LISTEN_FDS", "").isdigit():
        return []
    count = int(env["LISTEN_FDS"])
    for key in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        env.pop(key, None)
    sockets: List[BoundSocket] = []
    for fd in range(LISTEN_FDS_START, LISTEN_FDS_START + count):
        try:
            sock = socket.socket(fileno=fd)
        except OSError as e:
            raise BindError(f"socket activation: descriptor {fd} is not a socket ({e.strerror})")
        if sock.type != socket.SOCK_STREAM or not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            sock.detach()
            raise BindError(f"socket activation: descriptor {fd} is not a listening stream socket")
        sock.set_inheritable(False)
        sock.setblocking(False)
        name = sock.getsockname()
        if sock.family == socket.AF_UNIX:
            path = name.decode(errors="replace") if isinstance(name, bytes) else name
            path = "@" + path[1:] if path.startswith("\0") else path
            address = BindAddress("unix", path)
        else:
            address = BindAddress("tcp", name[0], name[1])
        bound = BoundSocket(address, sock, created=False)
        sockets.append(bound)
    return sockets


#: The umask a unix socket file is made under without --umask: gunicorn's `umask` default, 0,
#: so `bind = "unix:/run/app/http.sock"` is srwxrwxrwx and a proxy running as another user
#: (nginx as www-data) may connect; who reaches it is the directory's permissions' decision.
UNIX_SOCKET_UMASK = 0


def bind_all(addresses: Sequence[BindAddress], backlog: int,
             reuse_port: bool = False, umask: Optional[int] = None) -> List[BoundSocket]:
    """Bind and listen on every address, or on none: if one fails, the ones already bound are
    closed and BindError is raised. `reuse_port`: SO_REUSEPORT on the TCP ones (--reuse-port).
    `umask`: --umask, which unix socket files are made under (None: UNIX_SOCKET_UMASK)."""
    bound: List[BoundSocket] = []
    try:
        for address in addresses:
            bound.append(bind(address, backlog, reuse_port, umask))
    except BaseException:
        for b in bound:
            b.close()
        raise
    return bound


def bind(address: BindAddress, backlog: int, reuse_port: bool = False,
         umask: Optional[int] = None) -> BoundSocket:
    """Bind and listen on one address; raise BindError with a one-line reason on failure."""
    if address.kind == "unix":
        sock = _bind_unix(address, backlog, UNIX_SOCKET_UMASK if umask is None else umask)
    else:
        sock = _bind_tcp(address, backlog, reuse_port)
    return BoundSocket(address, sock)


def _bind_tcp(address: BindAddress, backlog: int, reuse_port: bool = False) -> socket.socket:
    try:
        infos = socket.getaddrinfo(
            address.host, address.port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE
        )
    except socket.gaierror as e:
        raise BindError(f"cannot listen on {address}: cannot resolve {address.host!r}: {e.strerror}")
    # A name can resolve to several addresses (localhost: 127.0.0.1 and ::1); like gunicorn we
    # take the first. Bind each literally (-b 127.0.0.1:0 -b [::1]:0) to get both.
    family, type_, proto, _, sockaddr = infos[0]
    sock = socket.socket(family, type_, proto)
    try:
        # Restart without waiting for TIME_WAIT connections of the previous process to expire.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            # Others that set it too may bind this address; the kernel spreads connections.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6:
            # [::]:8000 means IPv6 only, so that 0.0.0.0:8000 can be bound beside it.
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(sockaddr)
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError as e:
        sock.close()
        raise BindError(f"cannot listen on {address}: {_reason(e, address)}")
    return sock


def _bind_unix(address: BindAddress, backlog: int, umask: int) -> socket.socket:
    """The socket file is made under `umask` (gunicorn's way: its mode is 0777 without it),
    the process's own umask put back after; `mode=` then sets it exactly."""
    path = address.host
    if is_abstract(address):
        return _bind_abstract(address, backlog)
    _remove_stale_unix_socket(address)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(umask)
    try:
        sock.bind(path)
    except OSError as e:
        sock.close()
        raise BindError(f"cannot listen on {address}: {_reason(e)}")
    finally:
        os.umask(old)
    step = "listen"
    try:
        # Permissions before listen(): no client connects through looser ones in between.
        if address.mode is not None:
            step = f"set mode={address.mode:o}"
            os.chmod(path, address.mode)
        if address.owner is not None or address.group is not None:
            from .privileges import group_id, user_id
            step = "chown"
            os.chown(path, user_id(address.owner) if address.owner else -1,
                     group_id(address.group) if address.group else -1)
            step = "listen"
        sock.listen(backlog)
        sock.setblocking(False)
    except (OSError, ValueError) as e:
        sock.close()
        os.unlink(path)
        why = _reason(e) if isinstance(e, OSError) else str(e)
        if step == "chown" and isinstance(e, OSError) and e.errno in (errno.EPERM, errno.EACCES):
            raise BindError(f"cannot listen on {address}: the socket file cannot be given to "
                            f"{_owner_text(address)} (chown: permission denied): only root may "
                            "give a file away, and another user may only set a group it is a "
                            "member of; start as root, or drop the setting and set the group "
                            "of the directory instead")
        if step != "listen":
            raise BindError(f"cannot listen on {address}: cannot {step} on the socket file: {why}")
        raise BindError(f"cannot listen on {address}: {why}")
    return sock


def is_abstract(address: BindAddress) -> bool:
    """`unix:@NAME`: a socket in Linux's abstract namespace, with no file."""
    return address.kind == "unix" and address.host.startswith("@")


def address_has_file(address: BindAddress) -> bool:
    return address.kind == "unix" and not address.host.startswith("@")


def _bind_abstract(address: BindAddress, backlog: int) -> socket.socket:
    """An abstract socket: no file, so no stale file to remove, no mode nor owner (anyone
    who may connect to unix sockets in this network namespace may connect), and nothing to
    remove at exit; a name in use is "address already in use"."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind("\0" + address.host[1:])
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError as e:
        sock.close()
        raise BindError(f"cannot listen on {address}: {_reason(e)}")
    return sock


def with_socket_defaults(address: BindAddress, mode: Optional[int],
                         owner: Optional[str]) -> BindAddress:
    """A unix socket file's address with --socket-mode and --socket-owner USER[:GROUP] where
    its own `;mode=`, `;owner=`, `;group=` settings say nothing (abstract sockets have no file:
    left alone)."""
    if not address_has_file(address) or (mode is None and owner is None):
        return address
    user, _, group = (owner or "").partition(":")
    return records.replace(
        address, mode=address.mode if address.mode is not None else mode,
        owner=address.owner or user or None, group=address.group or group or None)


def _owner_text(address: BindAddress) -> str:
    parts = ([f"user {address.owner}"] if address.owner else []) + \
        ([f"group {address.group}"] if address.group else [])
    return " and ".join(parts)


def _remove_stale_unix_socket(address: BindAddress) -> None:
    """A socket file left by a server that died is removed; one that a live server is listening
    on is an "address already in use" error, never silently stolen."""
    path = address.host
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise BindError(f"cannot listen on {address}: {_reason(e)}")
    if not stat.S_ISSOCK(st.st_mode):
        raise BindError(f"cannot listen on {address}: the path exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
    except ConnectionRefusedError:
        os.unlink(path)  # nobody listening: stale
        return
    except FileNotFoundError:
        return
    except OSError as e:
        raise BindError(f"cannot listen on {address}: {_reason(e)}")
    finally:
        probe.close()
    raise BindError(f"cannot listen on {address}: address already in use (a server is listening on it)")


def _reason(e: OSError, address: Optional[BindAddress] = None) -> str:
    if e.errno == errno.EADDRINUSE:
        return "address already in use"
    if e.errno in (errno.EACCES, errno.EPERM):
        if address is not None and address.kind == "tcp" and 0 < address.port < 1024:
            return "permission denied (ports below 1024 need privileges)"
        return "permission denied"
    text = e.strerror or str(e)
    return text[:1].lower() + text[1:]
