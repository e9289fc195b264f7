"""Reloads that overlap (regression, 962d1ba): a second HUP while the first reload's workers are
still importing the app, and a code change with `--reload` while the previous change's workers
are. The newest reload wins, one generation boots at a time, the serving workers keep serving
until it is ready, no request fails and the master never exits. Real processes, real signals,
real sockets, real inotify.
"""

import os
import signal

import pytest

from tests.helpers import wait_for, write_whole
from tests.load import Load
from tests.test_workers import children


def _importing(srv, n):
    """Until `n` workers have begun importing the app (tests/apps/slow_import.py)."""
    return srv.wait_marks("importing", n, timeout=30)


def test_a_second_hup_while_a_reload_imports_supersedes_it(start_server):
    srv = start_server("slow_import", "--workers", "2")
    first = set(children(srv.pid))
    _importing(srv, 2)
    srv.state_path("hold-imports").write_text("")  # from now on an import waits for the gate
    with Load(srv.port, clients=4) as load:
        load.wait_for(50)
        srv.signal(signal.SIGHUP)
        superseded = {int(p) for p in _importing(srv, 4)[2:]}
        srv.signal(signal.SIGHUP)
        newest = {int(p) for p in _importing(srv, 6)[4:]}
        # One generation boots at a time: the superseded one is stopped, not left importing.
        wait_for(lambda: set(children(srv.pid)) == first | newest,
                 "the superseded workers to be stopped", timeout=30,
                 context=lambda: f"{children(srv.pid)}\n{srv.log_text()}")
        load.wait_for(50)
        srv.open_gate("imports")
        srv.wait_log(r"Reload done: 2 new worker\(s\) serving", timeout=30)
        wait_for(lambda: set(children(srv.pid)) == newest, "only the newest workers left",
                 timeout=30, context=lambda: f"{children(srv.pid)} {newest}\n{srv.log_text()}")
        load.wait_for(50)
    assert load.failed == [], (load.failed, srv.log_text())
    assert srv.alive()
    assert srv.log_text().count("Reload done") == 1
    assert "supersedes the reload in progress" in srv.log_text()
    assert load.pids & newest and not load.pids & superseded
    assert not first & set(children(srv.pid))


def test_a_superseding_reload_that_cannot_boot_keeps_the_configuration_from_before_both(
        start_server, tmp_path):
    conf = tmp_path / "sg.toml"
    conf.write_text('app = "tests.apps.workers:app"\n')
    srv = start_server(None, "--workers", "2", "--config", str(conf))
    first = set(children(srv.pid))
    srv.state_path("hold-imports").write_text("")
    conf.write_text('app = "tests.apps.slow_import:app"\n')
    srv.signal(signal.SIGHUP)
    _importing(srv, 2)
    conf.write_text('app = "tests.apps.boot_fails:app"\n')
    srv.signal(signal.SIGHUP)
    srv.wait_log(r"Reload abandoned", timeout=30)
    srv.open_gate("imports")  # a superseded worker still importing would finish now
    wait_for(lambda: set(children(srv.pid)) == first, "only the first workers left",
             timeout=30, context=lambda: f"{children(srv.pid)} {first}\n{srv.log_text()}")
    # A routine replacement boots with the configuration that serves, neither reload's.
    mark = srv.log_mark()
    os.kill(min(first), signal.SIGKILL)
    srv.wait_log(r"Worker \d+ ready", since=mark, timeout=30)
    assert "failed to boot" not in srv.log_since(mark)
    assert len(srv.marks("importing")) == 2
    assert srv.alive()
    assert set(children(srv.pid)) - first, "the replacement serves"


APP = """
import os
from tests.apps._state import STATE_DIR, mark, wait_gate
mark("importing", str(os.getpid()))
if os.path.exists(os.path.join(STATE_DIR, "hold-imports")):
    wait_gate("imports")

def app(environ, start_response):
    body = {body!r}
    start_response('200 OK', [('Content-Length', str(len(body)))])
    return [body]
"""


write = write_whole


def test_an_edit_while_a_reload_imports_supersedes_it(start_server, tmp_path):
    pytest.importorskip("watchfiles")
    module = tmp_path / "devapp.py"
    write(module, APP.format(body=b"one"))
    srv = start_server(None, "--reload", "--workers", "2", "devapp:app", cwd=tmp_path)
    _importing(srv, 2)
    srv.state_path("hold-imports").write_text("")

    seen = set()
    failed = []

    def one():
        try:
            r = srv.request("GET", "/")
            seen.add(r.body)
            return r.status == 200 and r.body in (b"one", b"two", b"three")
        except OSError as e:
            failed.append(repr(e))
            return False

    first = set(children(srv.pid))
    write(module, APP.format(body=b"two"))
    _importing(srv, 4)
    assert all(one() for _ in range(20))
    mark = srv.log_mark()
    write(module, APP.format(body=b"three"))
    newest = {int(p) for p in _importing(srv, 6)[4:]}
    wait_for(lambda: set(children(srv.pid)) == first | newest,
             "the superseded workers to be stopped", timeout=30,
             context=lambda: f"{children(srv.pid)}\n{srv.log_text()}")
    assert all(one() for _ in range(20))
    srv.open_gate("imports")
    wait_for(lambda: one() and srv.request("GET", "/").body == b"three", "the newest code",
             timeout=30, context=srv.log_text)
    assert srv.alive() and failed == []
    assert b"two" not in seen
    assert "supersedes the reload in progress" in srv.log_since(mark)


def test_sigint_during_a_slow_reload_exits_0(start_server):
    """Regression (f90e6ba): the workers still importing are cancelled (killed), which cut no
    request: the stop is a clean one."""
    srv = start_server("slow_import", "--workers", "2")
    _importing(srv, 2)
    srv.state_path("hold-imports").write_text("")
    srv.signal(signal.SIGHUP)
    _importing(srv, 4)
    srv.signal(signal.SIGINT)
    assert srv.wait_exit(30) == 0, srv.log_text()
