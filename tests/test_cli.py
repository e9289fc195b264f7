"""Tests of the `sluicegate` command as a user meets it: `python -m sluicegate` in a subprocess.

The error contract: every user error (bad app path, module not found, ImportError inside the
app's module, missing attribute, bad option value, address in use) prints exactly ONE line on
stderr, `sluicegate: error: ...`, nothing on stdout, and exits non-zero (2 for usage errors, 1 for
the rest). Those errors happen before the Rust core is needed, so those tests run even while
`sluicegate._core` is not built.

The tests that serve requests need the core and skip (saying so) while it cannot be imported.
They find the port of `--bind 127.0.0.1:0` from the `Listening at:` log line: no sleeps.

One in-process test drives the Supervisor with a fake core, only to check what the front hands
to the core (listener tuples, config keys, signal wiring); everything else uses the real one.
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYTHON_DIR = ROOT / "python"
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))

from sluicegate.options import OPTIONS  # noqa: E402

TIMEOUT = 20.0  # upper bound for any one server process in these tests

# Fixture apps written into each test's tmp_path (the server runs there: cwd goes first on
# sys.path, as the CLI promises).
APPS = {
    "goodapp.py": """
        def app(environ, start_response):
            body = ("hello from " + environ["SCRIPT_NAME"] + environ["PATH_INFO"]).encode()
            start_response("200 OK", [("Content-Type", "text/plain"),
                                      ("Content-Length", str(len(body)))])
            return [body]

        class Holder:
            wsgi = staticmethod(app)

        holder = Holder()
        not_callable = 42

        def create_app(greeting="hi", punct="!"):
            def made(environ, start_response):
                body = (greeting + punct).encode()
                start_response("200 OK", [("Content-Length", str(len(body)))])
                return [body]
            return made

        def broken_factory():
            raise RuntimeError("database\\nunreachable")

        def factory_without_call():
            return app
    """,
    "brokenapp.py": """
        import os
        import nosuchdependency_sg  # the app's own missing dependency
    """,
    "crashapp.py": """
        raise ValueError("bad settings: DEBUG must be a bool")
    """,
}


def _env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICEGATE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), os.environ.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    for name, source in APPS.items():
        (tmp_path / name).write_text(textwrap.dedent(source).lstrip("\n"))
    return tmp_path


def run_cli(*args: str, cwd: Path, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sluicegate", *args], cwd=str(cwd), env=_env(env),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT,
    )


def assert_one_line_error(result: subprocess.CompletedProcess, expected: str, code: int) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got:\n{result.stderr}"
    assert lines[0].startswith("sluicegate: error: "), lines[0]
    assert expected in lines[0], lines[0]
    assert result.stdout == ""
    assert result.returncode == code
    return lines[0]


def _core_importable() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import sluicegate._core"], env=_env(),
                           capture_output=True, timeout=TIMEOUT)
    return probe.returncode == 0


needs_core = pytest.mark.skipif(
    not _core_importable(),
    reason="sluicegate._core (the Rust extension) cannot be imported yet: build it with ./dev build",
)


# --- --help and --version


def test_help_lists_every_option(tmp_path):
    result = run_cli("--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: sluicegate [OPTIONS] [MODULE:APP]")
    for o in OPTIONS:
        for flag in o.flags:
            assert flag in result.stdout, f"{flag} missing from --help"
        assert o.env in result.stdout
    assert "--version" in result.stdout


def test_version(tmp_path):
    result = run_cli("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert re.fullmatch(r"sluicegate \S+\n", result.stdout), result.stdout


# --- one-line errors


@pytest.mark.parametrize("app, expected", [
    ("goodapp", "module 'goodapp' has no attribute 'application' (app path 'goodapp' means 'goodapp:application'"),
    ("goodapp.py:app", "give a module name, not a file name (e.g. goodapp:app"),
    ("goodapp:app(", "is not an attribute name or a call"),
    ("goodapp:create_app(__import__('os'))", "a factory's arguments must be literals"),
    ("nosuchmodule_sg:app", "module 'nosuchmodule_sg' not found"),
    ("goodapp.sub:app", "module 'goodapp.sub' not found"),
    ("brokenapp:app",
     "cannot import 'brokenapp': ModuleNotFoundError: No module named 'nosuchdependency_sg' "
     "(brokenapp.py, line 2)"),
    ("crashapp:app",
     "cannot import 'crashapp': ValueError: bad settings: DEBUG must be a bool (crashapp.py, line 1)"),
    ("goodapp:nope", "module 'goodapp' has no attribute 'nope'"),
    ("goodapp:holder.nope", "'goodapp:holder' has no attribute 'nope'"),
    ("goodapp:not_callable", "it is an object of type int"),
    ("goodapp:broken_factory()", "app factory 'goodapp:broken_factory()' raised RuntimeError: database unreachable"),
    ("goodapp:factory_without_call", "if it is an app factory, call it: 'goodapp:factory_without_call()'"),
])
def test_app_loading_errors(app_dir, app, expected):
    result = run_cli("--bind", "127.0.0.1:0", app, cwd=app_dir)
    assert_one_line_error(result, expected, 1)


def test_import_error_inside_the_app_is_not_module_not_found(app_dir):
    line = assert_one_line_error(run_cli("brokenapp:app", cwd=app_dir), "brokenapp", 1)
    assert "not found" not in line


def test_debug_log_level_shows_the_traceback(app_dir):
    result = run_cli("--log-level", "debug", "brokenapp:app", cwd=app_dir)
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert 'brokenapp.py", line 2' in result.stderr
    assert result.stderr.splitlines()[-1].startswith("sluicegate: error: cannot import 'brokenapp'")


@pytest.mark.parametrize("args, env, expected", [
    (["--threads", "5:2"], {}, "--threads '5:2': MIN (5) is larger than MAX (2)"),
    (["--limit-body", "lots"], {}, "--limit-body 'lots': expected a byte count"),
    (["--bind", "localhost"], {}, "--bind 'localhost': expected HOST:PORT"),
    (["--root-path", "app/"], {}, "--root-path 'app/'"),
    (["--no-such-option"], {}, "unknown option --no-such-option"),
    (["--threads"], {}, "argument --threads: expected one argument"),
    ([], {"SLUICEGATE_THREADS": "0"}, "SLUICEGATE_THREADS='0': MAX must be at least 1"),
    # A 100 KiB value once made every response 100 KiB longer. Refused at start,
    # in one line that quotes only the start of the value.
    (["--server-header", "x" * 100_000], {},
     "--server-header '" + "x" * 79 + "... (100002 characters): is 100000 bytes long; at most "
     "256 are allowed"),
    ([], {"SLUICEGATE_SERVER_HEADER": "y" * 257}, "at most 256 are allowed"),
])
def test_bad_option_values(app_dir, args, env, expected):
    result = run_cli("goodapp:app", *args, cwd=app_dir, env=env)
    assert_one_line_error(result, expected, 2)


def test_port_in_use(app_dir):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        result = run_cli("--bind", f"127.0.0.1:{port}", "goodapp:app", cwd=app_dir)
    finally:
        taken.close()
    assert_one_line_error(result, f"cannot listen on 127.0.0.1:{port}: address already in use", 1)


def test_unix_socket_in_use(app_dir):
    path = str(app_dir / "taken.sock")
    taken = socket.socket(socket.AF_UNIX)
    taken.bind(path)
    taken.listen()
    try:
        result = run_cli("--bind", f"unix:{path}", "goodapp:app", cwd=app_dir)
    finally:
        taken.close()
    assert_one_line_error(result, f"cannot listen on unix:{path}: address already in use", 1)
    assert os.path.exists(path), "a socket another server listens on must never be removed"


def test_failed_bind_releases_the_other_addresses(app_dir):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    unix_path = app_dir / "first.sock"
    try:
        result = run_cli("-b", f"unix:{unix_path}", "-b", f"127.0.0.1:{port}", "goodapp:app",
                         cwd=app_dir)
    finally:
        taken.close()
    assert_one_line_error(result, "address already in use", 1)
    assert not unix_path.exists()


# --- serving (needs the Rust core)


@needs_core
def test_demo_app_and_graceful_sigterm(start_server, tmp_path):
    server = start_server(None, cwd=tmp_path)
    assert re.search(r"\[\d+\] \[INFO\] Listening at: http://127\.0\.0\.1:\d+$", server.log_text(), re.M)
    page = server.request("GET", "/some/where?x=1")
    assert page.status == 404
    page = server.request("GET", "/")
    assert page.status == 200
    assert b"sluicegate" in page.body and b"demo app" in page.body and b"GET /" in page.body
    echo = server.request("POST", "/echo", body=b"ping \x00 pong")
    assert (echo.status, echo.body) == (200, b"ping \x00 pong")
    assert server.stop(signal.SIGTERM) == 0
    assert "Received SIGTERM" in server.log_text() and "Shutdown complete" in server.log_text()


@needs_core
def test_sigint_twice_stops(start_server, tmp_path):
    """Regression (1dc142a): a second SIGINT landing as the CLI exits after a quick shutdown
    turned the clean exit into a KeyboardInterrupt; SIGTERM/SIGINT now stay handled."""
    server = start_server(None, cwd=tmp_path)
    assert server.request().status == 200
    assert server.stop(signal.SIGINT, signal.SIGINT) == 0
    assert "Traceback" not in server.log_text()


@needs_core
def test_factory_dotted_attribute_root_path_and_unix_socket(start_server, app_dir):
    sock_path = str(app_dir / "app.sock")
    server = start_server(None, "--root-path", "/base", "goodapp:holder.wsgi", cwd=app_dir,
                          binds=["127.0.0.1:0", f"unix:{sock_path}"])
    assert server.addresses[1] == ("unix", sock_path)
    assert server.request("GET", "/base/x").body == b"hello from /base/x"
    assert server.request("GET", "/base/y", address=1).body == b"hello from /base/y"
    assert server.stop() == 0
    assert not os.path.exists(sock_path), "the server removes the unix socket it created"

    server = start_server("goodapp:create_app('hey', punct='?')", cwd=app_dir)
    assert server.request().body == b"hey?"


@needs_core
def test_stale_unix_socket_is_replaced(start_server, app_dir):
    path = str(app_dir / "stale.sock")
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(path)
    dead.close()  # the file stays, nobody listens: what a killed server leaves behind
    server = start_server("goodapp:app", cwd=app_dir, binds=[f"unix:{path}"])
    assert server.request().status == 200


@needs_core
def test_chdir_env_and_access_log(start_server, app_dir, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    log_path = app_dir / "access.log"
    server = start_server(None, "--access-log", str(log_path), cwd=elsewhere,
                          env={"SLUICEGATE_CHDIR": str(app_dir), "SLUICEGATE_APP": "goodapp:app"})
    assert server.request("GET", "/logged").body == b"hello from /logged"
    assert server.stop() == 0
    assert "/logged" in log_path.read_text()


# --- the handover to the core, with a fake core (unit level only)


class _FakeServer:
    """Stands in for _core.Server to check what the front hands over: records its arguments,
    and its run() delivers the signals a test asks for, as the core does from signal_fd."""

    instances: List["_FakeServer"] = []
    signals_to_send: List[int] = []

    def __init__(self, app, listeners, config):
        self.app, self.listeners, self.config = app, listeners, config
        self.shutdowns: List[bool] = []
        _FakeServer.instances.append(self)

    def run(self) -> None:
        for s in self.signals_to_send:
            os.kill(os.getpid(), s)
            # The real core reads signal_fd; here the wakeup byte must have arrived.
            assert select.select([self.config["signal_fd"]], [], [], 5)[0]
            time.sleep(0)  # the Python handler runs at the next bytecode boundary
        for fd, *_ in self.listeners:
            os.close(fd)

    def shutdown(self, graceful: bool = True) -> None:
        self.shutdowns.append(graceful)

    @property
    def stats(self) -> dict:
        return {"requests": 0, "stuck_calls": 0}


def test_supervisor_hands_listeners_config_and_signals_to_the_core(monkeypatch, tmp_path, caplog):
    from sluicegate import core_server, single, supervisor
    from sluicegate.listeners import bind_all
    from sluicegate.resolution import resolve

    fake_core = type(sys)("fake_core")
    fake_core.Server = _FakeServer  # type: ignore[attr-defined]
    monkeypatch.setattr(core_server, "import_core", lambda: fake_core)
    monkeypatch.setattr(_FakeServer, "instances", [])
    monkeypatch.setattr(_FakeServer, "signals_to_send", [signal.SIGTERM, signal.SIGINT, signal.SIGINT])

    unix_path = str(tmp_path / "s.sock")
    cfg = resolve({"bind": ["127.0.0.1:0", f"unix:{unix_path}"], "threads": "2:9",
                   "access_log": str(tmp_path / "access.log")}, env={})
    sockets = bind_all(cfg.bind, cfg.backlog)
    port = sockets[0].port
    assert port != 0
    app = object()
    before = signal.getsignal(signal.SIGINT)
    with caplog.at_level("INFO", logger="sluicegate"):
        monkeypatch.setattr(supervisor.log, "propagate", True)
        assert single.SingleServer(app, cfg, sockets).run() == 0

    (server,) = _FakeServer.instances
    assert server.app is app
    tcp, unix = server.listeners
    assert tcp[1:] == ("tcp", "127.0.0.1", str(port), "http", False) and isinstance(tcp[0], int)
    assert unix[1:] == ("unix", unix_path, "", "http", False)
    assert (server.config["threads_min"], server.config["threads_max"]) == (2, 9)
    assert server.config["access_log_fd"] > 2 and server.config["signal_fd"] > 2
    assert server.shutdowns == [True, True, False]  # SIGTERM, SIGINT: graceful; 2nd SIGINT: now
    assert f"Listening at: http://127.0.0.1:{port}" in caplog.messages
    assert f"Listening at: unix:{unix_path}" in caplog.messages
    assert signal.getsignal(signal.SIGINT) is before, "signal handlers are restored"
    assert not os.path.exists(unix_path)


# --- binding (listeners.py), in process: the sockets the CLI hands to the core


def _ipv6_available() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_available(), reason="no IPv6 loopback on this machine")
def test_ipv6_listener_is_v6only_nonblocking_and_reports_the_real_port():
    from sluicegate.listeners import bind, parse_bind

    bound = bind(parse_bind("[::1]:0"), backlog=8)
    assert bound.url == f"http://[::1]:{bound.port}" and bound.port != 0
    fd, kind, name, port, wire, tls = bound.to_listener()
    assert tls is False
    sock = socket.socket(fileno=fd)
    try:
        assert (kind, name, port) == ("tcp", "::1", str(bound.port))
        assert sock.family == socket.AF_INET6
        assert sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) == 1
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) == 1
        assert os.get_blocking(fd) is False
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1
    finally:
        sock.close()
    with pytest.raises(RuntimeError):
        bound.to_listener()


def test_unix_path_that_is_not_a_socket_is_never_removed(tmp_path):
    from sluicegate.errors import BindError
    from sluicegate.listeners import bind, parse_bind

    path = tmp_path / "important.txt"
    path.write_text("data")
    with pytest.raises(BindError, match="the path exists and is not a socket"):
        bind(parse_bind(f"unix:{path}"), backlog=8)
    assert path.read_text() == "data"


@needs_core
def test_options_reach_the_core(start_server, app_dir):
    server = start_server("goodapp:app", "--server-header", "front-test/1",
                          "--limit-request-line", "100", "--access-log", "-", cwd=app_dir)
    response = server.request("GET", "/short")
    assert response.getheader("Server") == "front-test/1"
    assert server.request("GET", "/" + "x" * 200).status == 414
    assert server.stop() == 0
    assert '"GET /short HTTP/1.1" 200' in server.stdout_text()  # --access-log - is stdout

    server = start_server("goodapp:app", "--server-header", "", cwd=app_dir)
    assert server.request().getheader("Server") is None

    longest = "p" * 256  # the cap is inclusive
    server = start_server("goodapp:app", "--server-header", longest, cwd=app_dir)
    assert server.request().getheader("Server") == longest
