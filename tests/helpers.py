"""The one bounded wait every test uses, the readiness waits built on it, and the one reader of
the server's readiness line.

- ``wait_for(predicate, what, timeout)``: polls ``predicate`` until it returns a truthy value
  (returned) and fails with ``WaitTimeout``, an AssertionError naming ``what`` it waited for,
  after ``timeout`` seconds. The timeout is an upper bound for the wait, not a timed assertion:
  it is generous (2 shared cores), and a passing test never waits for it. A predicate may raise
  to stop the wait early (a process died: no point in waiting on).
- ``listening_addresses(line)``: the addresses on a readiness line, ``Listening at:
  http://HOST:PORT`` (or ``uwsgi://``, ``unix:/path``; several comma-separated on one line), as
  ``("tcp", (host, port))`` / ``("unix", path)``. ``ServerProcess.wait_listening()`` in
  ``conftest.py`` reads the server's error log with it; that is the one readiness wait of a
  server the fixture started.
- The readiness waits of other processes, each over ``wait_for``: ``wait_accepting(ports)``
  (a proxy's listeners accept connections), ``wait_in_file(path, text)`` (a server started by
  hand wrote its readiness line to its log file), and ``unless_refused(call)``, the predicate for
  a first answer from a socket nobody listens on yet (socket activation, a metrics port). Each
  fails at once, with the process's standard error, when the ``process`` it waits on exits.

Sockets, logs and app marks are waited on through these; nothing sleeps a guessed time.
"""

from __future__ import annotations

import http.client
import os
import random
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterable, List, Optional, Tuple, TypeVar

# Upper bound for any single wait on the server. Generous: 2 shared cores.
TIMEOUT = 10.0

# Upper bound for a server to log its readiness line after it was started.
STARTUP_TIMEOUT = 20.0

# How often wait_for looks again: short against the waits it bounds, long against a poll's cost.
POLL_INTERVAL = 0.02

# The readiness line: one per --bind (several addresses on one line, comma-separated, also parse).
LISTEN_MARK = "Listening at:"
ADDR_RE = re.compile(r"(?:https?|uwsgi)://(?P<host>\[[^\]]+\]|[^:\s,]+):(?P<port>\d+)|unix:(?P<path>[^\s,]+)")

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """A bounded wait ran out; the message says what was being waited for."""


def wait_for(predicate: Callable[[], T], what: str, timeout: float = TIMEOUT,
             interval: float = POLL_INTERVAL, context: Optional[Callable[[], str]] = None) -> T:
    """Poll `predicate` until it returns a truthy value (returned) or raise WaitTimeout after
    `timeout` seconds, naming `what` was awaited and, if given, the text `context()` returns
    then (a log tail, the last value seen)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            msg = f"timed out after {timeout}s waiting for {what}"
            if context is not None:
                msg += "\n" + context()
            raise WaitTimeout(msg)
        time.sleep(interval)


def _alive(process: Optional["subprocess.Popen[Any]"], what: str,
           context: Optional[Callable[[], str]] = None) -> None:
    """Raise, with its standard error (and `context()`), if `process` has exited: waiting on is
    pointless."""
    if process is not None and process.poll() is not None:
        err = process.stderr.read() if process.stderr else ""
        err = err.decode(errors="replace") if isinstance(err, bytes) else err
        more = context() if context is not None else ""
        raise AssertionError(f"exited ({process.returncode}) before {what}: {err}{more}")


def accepts(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a TCP connection to `host`:`port` is accepted now."""
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


def wait_accepting(ports: Iterable[int], what: str, timeout: float = TIMEOUT,
                   process: Optional["subprocess.Popen[Any]"] = None,
                   context: Optional[Callable[[], str]] = None) -> None:
    """Until each of `ports` (on 127.0.0.1) accepts a connection: a proxy started in front of
    the server is listening."""
    ports = list(ports)

    def listening() -> bool:
        _alive(process, what, context)
        return all(accepts(port) for port in ports)

    wait_for(listening, what, timeout, interval=0.05, context=context)


def wait_in_file(path: Path, text: str, timeout: float = TIMEOUT,
                 process: Optional["subprocess.Popen[Any]"] = None) -> str:
    """Until the file at `path` holds `text` (a process started by hand logs its readiness line
    to a file of its own); the file's text then."""
    def found() -> Optional[str]:
        _alive(process, f"{text!r} in {path}")
        whole = path.read_text() if path.exists() else ""
        return whole if text in whole else None

    return wait_for(found, f"{text!r} in {path}", timeout, interval=0.05,
                    context=lambda: path.read_text()[-2000:] if path.exists() else "no file")


def unless_refused(call: Callable[[], T]) -> Optional[T]:
    """`call()`, or None when its connection was refused: nobody listens there yet. A
    `wait_for` predicate for the first answer of a socket that comes up later."""
    try:
        return call()
    except ConnectionRefusedError:
        return None


def listening_addresses(line: str) -> List[Tuple[str, object]]:
    """The addresses a readiness line announces (none if `line` is not one)."""
    if LISTEN_MARK not in line:
        return []
    found: List[Tuple[str, object]] = []
    for m in ADDR_RE.finditer(line.split(LISTEN_MARK, 1)[1]):
        if m.group("path"):
            found.append(("unix", m.group("path")))
        else:
            found.append(("tcp", (m.group("host").strip("[]"), int(m.group("port")))))
    return found


def write_whole(path, text: str) -> None:
    """Write `text` to `path` then move it into place, as editors do: a file watcher (or a
    reload importing it) sees one complete file, never half of one."""
    tmp = str(path) + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


#: Where `free_ports` looks: below Linux's ephemeral range (32768-60999), so the client side of
#: some other connection cannot take one of the run between the look and the server's bind.
PORT_RUNS = (20000, 32000)


def free_ports(n: int) -> int:
    """P such that P .. P+n-1 are free now (a worker process's --metrics-bind is PORT+slot)."""
    for _ in range(200):
        port = random.randrange(*PORT_RUNS)
        held = []
        try:
            for i in range(n):
                t = socket.socket()
                held.append(t)
                t.bind(("127.0.0.1", port + i))
            return port
        except OSError:
            continue
        finally:
            for t in held:
                t.close()
    raise AssertionError("no free run of ports")


def status_of(port: int, path: str, timeout: float = 10) -> int:
    """One GET `path` on a new connection to 127.0.0.1:`port`; the answer's status (body read)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()
