"""Fixtures that run real sluicegate server processes for the end-to-end tests.

How a server is started (the contract every test relies on):

- Command: ``$SLUICEGATE_TEST_PYTHON -m sluicegate --bind 127.0.0.1:0 [OPTIONS] tests.apps.NAME:app``
  (``SLUICEGATE_TEST_PYTHON`` defaults to ``.venv/bin/python`` at the repository root, which
  ``./dev build`` fills).
- App import: the fixture apps live in ``tests/apps/`` and are imported as the package
  ``tests.apps`` — the server runs with cwd = repository root and ``PYTHONPATH`` = repository root
  (prepended to any existing value). ``tests/__init__.py`` makes ``tests`` a regular package, so a
  stray ``tests`` package in site-packages cannot shadow it.
- Readiness: the server logs ``Listening at: http://HOST:PORT`` (or ``unix:/path``) on stderr,
  one line per ``--bind``. ``ServerProcess.wait_listening()``, the one readiness wait, reads
  stderr until it has seen one line per bind (bounded: ``STARTUP_TIMEOUT`` seconds, failing with
  the collected stderr), and takes the real port from it (port 0 binds an ephemeral port: no
  port guessing, no races). A process started another way (a script calling ``serve()``, a
  server behind ``systemd-socket-activate``) is run with ``command=`` and waited on the same way.
- Waiting: every other wait is ``tests.helpers.wait_for(predicate, what, timeout)``, a bounded
  poll that fails naming what it waited for.
- Logs: background threads drain stderr (the error log) and stdout into lists, so tests can
  assert what was logged (``server.log_text()``, ``server.wait_log(regex)``).
- State shared with apps: each server gets a private directory passed to the apps in the
  environment variable ``SGTEST_STATE_DIR``; apps record events there (e.g. that ``close()`` was
  called, that a request started) and wait on "gate" files the test creates (see
  ``tests/apps/_state.py``). This is how tests await events instead of sleeping.
- Environment: every ``SLUICEGATE_*`` variable of the calling environment is removed, since the
  server reads options from them.
- Teardown: SIGTERM, a bounded wait, then SIGKILL.

Sharing: starting a server costs ~0.2 s, so ``servers.get(app, *options)`` returns one process
per (app, options) for the whole session. After every test an autouse fixture checks that the
shared servers the test used are still alive and did not log a Rust panic; if one died, that test
fails with the server's log (so the test that crashed the server is the one that fails), and the
next ``get`` starts a fresh one. Tests that need special options, signals, or to watch a process
exit use ``start_server(app, *options)`` instead, which gives them a private process.
"""

from __future__ import annotations

import http.client
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import pytest

from tests.helpers import STARTUP_TIMEOUT, listening_addresses, wait_for

# The `serial` marker: the tests ./dev test runs alone after the parallel part (tests/serial.py).
pytest_plugins = ["tests.serial"]

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PYTHON = os.environ.get("SLUICEGATE_TEST_PYTHON", str(ROOT / ".venv" / "bin" / "python"))
STOP_TIMEOUT = 10.0

PANIC_RE = re.compile(r"panicked at|RUST_BACKTRACE")


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a unix socket."""

    def __init__(self, path: str):
        super().__init__("localhost", timeout=STOP_TIMEOUT)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(STOP_TIMEOUT)
        self.sock.connect(self.unix_path)


class ServerProcess:
    """One running sluicegate process, its logs and its app state directory."""

    def __init__(self, app: Optional[str], options=(), binds: Optional[List[str]] = None,
                 env: Optional[Dict[str, str]] = None, cwd: Optional[Path] = None,
                 nofile: Optional[int] = None, command: Optional[Sequence[str]] = None,
                 wait_ready: bool = True):
        # `command`: run this command line instead of `python -m sluicegate` (`app`, `options`
        # and `binds` are then unused); it is ready when it has logged one readiness line.
        # `wait_ready` False: the caller calls wait_listening() itself (a server that starts on
        # its first connection).
        # app None: the command line carries no app of its own (the options may name one, the
        # environment may, or the demo app is served).
        self.app = None if app is None else app if ":" in app else f"tests.apps.{app}:app"
        self.options = list(options)
        self.binds = binds if binds is not None else ["127.0.0.1:0"]
        self.state_dir = tempfile.mkdtemp(prefix="sgtest-")
        self.stderr_lines: List[str] = []
        self.stdout_lines: List[str] = []
        self._cond = threading.Condition()
        self.addresses: List[Tuple[str, object]] = []  # ("tcp", (host, port)) / ("unix", path)
        cmd = [PYTHON, "-m", "sluicegate"]
        for b in self.binds:
            cmd += ["--bind", b]
        cmd += self.options + ([self.app] if self.app else [])
        self.listeners = len(self.binds) + self.options.count("--bind")
        if command is not None:
            cmd, self.listeners = list(command), 1
        self.cmd = cmd
        penv = {k: v for k, v in os.environ.items() if not k.startswith("SLUICEGATE_")}
        penv["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
        penv["SGTEST_STATE_DIR"] = self.state_dir
        penv["PYTHONUNBUFFERED"] = "1"
        penv.update(env or {})
        def limit_fds() -> None:  # in the child, before exec: a small descriptor limit
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.left_behind = False  # set when a process it left behind holds its output
        self.proc = subprocess.Popen(cmd, cwd=str(cwd or ROOT), env=penv, stdin=subprocess.DEVNULL,
                                     preexec_fn=limit_fds if nofile else None,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._threads = [
            threading.Thread(target=self._drain, args=(self.proc.stderr, self.stderr_lines),
                             daemon=True),
            threading.Thread(target=self._drain, args=(self.proc.stdout, self.stdout_lines),
                             daemon=True),
        ]
        for t in self._threads:
            t.start()
        if wait_ready:
            try:
                self.wait_listening()
            except BaseException:
                self.kill()
                raise

    # -- process -----------------------------------------------------------------------------
    def _drain(self, pipe, lines: List[str]) -> None:
        for raw in iter(pipe.readline, b""):
            with self._cond:
                lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_listening(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """The readiness wait: read the error log until one readiness line per listener was
        logged, and fill `addresses` from them. Fails with the log if the process exits first
        or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        seen = 0
        self.addresses.clear()
        with self._cond:
            while True:
                for line in self.stderr_lines[seen:]:
                    self.addresses.extend(listening_addresses(line))
                seen = len(self.stderr_lines)
                if len(self.addresses) >= self.listeners:
                    return
                if self.proc.poll() is not None:
                    # Let the drain threads collect the last lines before reporting.
                    self._cond.wait(0.2)
                    pytest.fail(f"server exited with {self.proc.returncode} before listening\n"
                                f"command: {' '.join(self.cmd)}\nstderr:\n{self.log_text()}",
                                pytrace=False)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    pytest.fail(f"server not listening after {timeout}s\n"
                                f"command: {' '.join(self.cmd)}\nstderr:\n{self.log_text()}",
                                pytrace=False)
                self._cond.wait(min(remaining, 0.5))

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def port(self) -> int:
        """Port of the first TCP listener."""
        for kind, addr in self.addresses:
            if kind == "tcp":
                return addr[1]
        raise AssertionError("server has no TCP listener")

    @property
    def host(self) -> str:
        for kind, addr in self.addresses:
            if kind == "tcp":
                return addr[0]
        raise AssertionError("server has no TCP listener")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait_exit(self, timeout: float = STOP_TIMEOUT) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"server did not exit within {timeout}s\n"
                                 f"stderr:\n{self.log_text()}")

    def stop(self, *signals: int) -> Optional[int]:
        """Send `signals` (default SIGTERM), bounded wait, then SIGKILL. Returns the exit code
        (negative: the signal that ended it, -9 when it had to be killed)."""
        if self.proc.poll() is None:
            for sig in signals or (signal.SIGTERM,):
                self.proc.send_signal(sig)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.kill()
        self._finish()
        return self.proc.returncode

    # -- requests ----------------------------------------------------------------------------
    def request(self, method: str = "GET", path: str = "/", body: Optional[bytes] = None,
                address: int = 0) -> http.client.HTTPResponse:
        """One request with http.client on listener number `address` (TCP or unix); the
        response's body is read into `response.body`."""
        kind, where = self.addresses[address]
        if kind == "unix":
            conn: http.client.HTTPConnection = UnixHTTPConnection(str(where))
        else:
            conn = http.client.HTTPConnection(where[0], where[1], timeout=STOP_TIMEOUT)
        conn.request(method, path, body=body)
        response = conn.getresponse()
        response.body = response.read()  # type: ignore[attr-defined]
        conn.close()
        return response

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(STOP_TIMEOUT)
        self._finish()

    def _finish(self) -> None:
        for t in self._threads:
            t.join(STOP_TIMEOUT)
        if any(t.is_alive() for t in self._threads):
            # A process the server left behind (an orphaned worker) still holds the pipes: a
            # reader thread is inside read(), and closing its file would wait for it forever.
            self.left_behind = True
            shutil.rmtree(self.state_dir, ignore_errors=True)
            return
        for p in (self.proc.stdout, self.proc.stderr):
            try:
                p.close()
            except Exception:
                pass
        shutil.rmtree(self.state_dir, ignore_errors=True)

    # -- logs --------------------------------------------------------------------------------
    def log_text(self) -> str:
        with self._cond:
            return "\n".join(self.stderr_lines)

    def stdout_text(self) -> str:
        with self._cond:
            return "\n".join(self.stdout_lines)

    def log_mark(self) -> int:
        """A position in the error log; pass to log_since / wait_log to look only at lines
        logged after it."""
        with self._cond:
            return len(self.stderr_lines)

    def log_since(self, mark: int) -> str:
        with self._cond:
            return "\n".join(self.stderr_lines[mark:])

    def wait_log(self, pattern: str, since: int = 0, timeout: float = 10.0,
                 stream: str = "stderr") -> re.Match:
        """Wait (bounded) until a line matching `pattern` appears in the error log (or stdout)
        after position `since`; return the match."""
        rx = re.compile(pattern)
        lines = self.stderr_lines if stream == "stderr" else self.stdout_lines
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in lines[since:]:
                    m = rx.search(line)
                    if m:
                        return m
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"no log line matching {pattern!r} within {timeout}s; {stream} since "
                        f"mark:\n" + "\n".join(lines[since:])[-4000:])
                self._cond.wait(min(remaining, 0.5))

    # -- app state ---------------------------------------------------------------------------
    def state_path(self, name: str) -> Path:
        return Path(self.state_dir) / name

    def open_gate(self, name: str) -> None:
        """Create the gate file an app is waiting on (see tests/apps/_state.py)."""
        p = self.state_path("gate-" + name)
        p.write_text("open")

    def marks(self, name: str, prefix: str = "") -> List[str]:
        """Lines an app recorded with _state.mark(name, ...), optionally only those starting
        with `prefix` (tests sharing a server use a unique token as prefix)."""
        p = self.state_path("mark-" + name)
        try:
            lines = p.read_text().splitlines()
        except FileNotFoundError:
            return []
        return [line for line in lines if line and line.startswith(prefix)]

    def wait_marks(self, name: str, count: int = 1, prefix: str = "",
                   timeout: float = 10.0) -> List[str]:
        """Wait (bounded) until at least `count` lines starting with `prefix` were recorded
        under `name`."""
        def recorded():
            got = self.marks(name, prefix)
            if len(got) >= count:
                return got
            if not self.alive():
                raise AssertionError(f"server died while waiting for '{name}' marks\n"
                                     f"{self.log_text()[-3000:]}")
            return None

        return wait_for(recorded, f"{count} '{name}' marks (prefix {prefix!r}) from the app",
                        timeout, context=lambda: f"recorded: {self.marks(name, prefix)}\n"
                        f"server log tail:\n{self.log_text()[-3000:]}")


class ServerPool:
    """Session-wide shared servers, one per (app, options)."""

    def __init__(self):
        self.servers: Dict[Tuple, ServerProcess] = {}
        self.checked: Dict[Tuple, int] = {}  # key -> log position already checked for panics

    def get(self, app: str, *options: str) -> ServerProcess:
        key = (app,) + tuple(options)
        srv = self.servers.get(key)
        if srv is None or not srv.alive():
            srv = ServerProcess(app, options)
            self.servers[key] = srv
            self.checked[key] = 0
        return srv

    def check_after_test(self) -> Optional[str]:
        problems = []
        for key, srv in list(self.servers.items()):
            mark = self.checked.get(key, 0)
            if not srv.alive():
                problems.append(f"shared server {key} died during this test (exit "
                                f"{srv.proc.returncode}); log since the previous test:\n"
                                f"{srv.log_since(mark)[-4000:]}")
                del self.servers[key]
                srv.kill()
                continue
            if PANIC_RE.search(srv.log_since(mark)):
                problems.append(f"shared server {key} logged a panic during this test:\n"
                                f"{srv.log_since(mark)[-4000:]}")
            self.checked[key] = srv.log_mark()
        return "\n\n".join(problems) or None

    def stop_all(self) -> None:
        for srv in self.servers.values():
            srv.stop()
        self.servers.clear()


@pytest.fixture(scope="session")
def servers(request):
    """Shared server processes: ``servers.get("hello")``, ``servers.get("echo_environ",
    "--root-path", "/app")``."""
    pool = ServerPool()
    request.session._sg_pool = pool
    yield pool
    pool.stop_all()


@pytest.fixture(autouse=True)
def _shared_servers_survive(request):
    """Fail the test during which a shared server died or panicked."""
    yield
    pool = getattr(request.session, "_sg_pool", None)
    if pool is not None:
        problem = pool.check_after_test()
        if problem:
            pytest.fail(problem, pytrace=False)


@pytest.fixture
def start_server():
    """Start a private server: ``start_server("blocking", "--threads", "1:4")``; with
    ``app=None`` the options alone make the command line (``start_server(None, "--root-path",
    "/x", "mod:app", cwd=tmp)``). Also ``binds``, extra ``env`` and a working directory
    ``cwd`` (default: the repository root), and ``nofile``, a file-descriptor limit for the
    server process; ``command`` runs another command line (a script calling ``serve()``), and
    ``wait_ready=False`` leaves the readiness wait to the test. Stopped at teardown (SIGTERM,
    bounded wait, SIGKILL)."""
    started: List[ServerProcess] = []

    def start(app: Optional[str], *options: str, binds: Optional[List[str]] = None,
              env: Optional[Dict[str, str]] = None, cwd: Optional[Path] = None,
              nofile: Optional[int] = None, command: Optional[Sequence[str]] = None,
              wait_ready: bool = True) -> ServerProcess:
        srv = ServerProcess(app, options, binds=binds, env=env, cwd=cwd, nofile=nofile,
                            command=command, wait_ready=wait_ready)
        started.append(srv)
        return srv

    yield start
    panics = []
    for srv in started:
        srv.stop()
        if PANIC_RE.search(srv.log_text()):
            panics.append(f"private server {srv.cmd} logged a panic:\n{srv.log_text()[-4000:]}")
        if srv.left_behind:
            panics.append(f"private server {srv.cmd} left a process behind that holds its "
                          f"output after it ended:\n{srv.log_text()[-4000:]}")
    if panics:
        pytest.fail("\n\n".join(panics), pytrace=False)


@pytest.fixture
def pool_server():
    """An in-process server with the pool scheduler, for tests that read its pool's stats:
    ``sup, port = pool_server(app, threads=(1, 4))``; stopped at teardown."""
    from tests.inprocess import start_pool_server

    started = []

    def start(app, **options):
        sup, port, t = start_pool_server(app, **options)
        started.append((sup, t))
        return sup, port

    yield start
    for sup, t in started:
        sup.shutdown()
        t.join(15)
        assert not t.is_alive()
