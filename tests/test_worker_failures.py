"""What the master does when a worker cannot boot after the server started, and when the master
itself is killed: real processes, real signals, real sockets.

A replacement that fails to boot leaves the healthy workers serving and is tried again later;
a reload whose configuration cannot boot leaves the previous configuration in force for later
replacements; a master killed with SIGKILL takes its workers with it (PR_SET_PDEATHSIG), so
nothing keeps serving on its port.
"""

import os
import signal
import socket

from tests.helpers import wait_for
from tests.test_workers import children, get

GOOD = ("def app(environ, start_response):\n"
        "    start_response('200 OK', [('Content-Length', '{n}')])\n"
        "    return [b'{body}']\n")


def good_app(body):
    return GOOD.format(n=len(body), body=body)


def running(pid):
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_replacement_that_fails_to_boot_leaves_the_healthy_workers_serving(start_server,
                                                                              tmp_path):
    (tmp_path / "changing.py").write_text(good_app("old"))
    srv = start_server(None, "--workers", "2", "changing:app", cwd=tmp_path)
    victim, healthy = children(srv.pid)
    (tmp_path / "changing.py").write_text("import sluicegate_test_no_such_dependency\n")
    mark = srv.log_mark()
    os.kill(victim, signal.SIGKILL)
    srv.wait_log(r"Worker \d+ failed to boot", since=mark)
    srv.wait_log(r"1 of 2 worker\(s\) serving; starting a replacement again in 1s", since=mark)
    for _ in range(20):
        assert get(srv.port, "/") == (200, b"old")
    # Tried again later (after 2 s, then 4 s, ...), not in a loop, and the server stays up.
    srv.wait_log(r"starting a replacement again in 2s", since=mark, timeout=30)
    assert srv.alive() and healthy in children(srv.pid)
    # Once the app imports again, the next try boots and the server is whole again.
    (tmp_path / "changing.py").write_text(good_app("new"))
    mark = srv.log_mark()
    srv.wait_log(r"Worker \d+ ready", since=mark, timeout=40)
    wait_for(lambda: len(children(srv.pid)) == 2, "two workers again", timeout=30)
    assert srv.alive()


def test_a_reload_that_cannot_boot_keeps_the_previous_configuration(start_server, tmp_path):
    conf = tmp_path / "sg.toml"
    conf.write_text('app = "tests.apps.workers:app"\n')
    srv = start_server(None, "--workers", "2", "--config", str(conf))
    conf.write_text('app = "tests.apps.boot_fails:app"\n')
    srv.signal(signal.SIGHUP)
    srv.wait_log(r"Reload abandoned")
    wait_for(lambda: len(children(srv.pid)) == 2, "the failed new workers to be gone", timeout=30)
    # A routine replacement boots with the configuration that serves, not the abandoned one.
    mark = srv.log_mark()
    os.kill(children(srv.pid)[0], signal.SIGKILL)
    srv.wait_log(r"Worker \d+ ready", since=mark, timeout=30)
    assert "failed to boot" not in srv.log_since(mark)
    assert srv.alive()
    status, body = get(srv.port)
    assert status == 200 and body.isdigit()


def test_a_master_killed_with_sigkill_takes_its_workers_with_it(start_server):
    srv = start_server("workers", "--workers", "2")
    workers, port = children(srv.pid), srv.port
    assert get(port)[0] == 200
    os.kill(srv.pid, signal.SIGKILL)
    srv.wait_exit()
    try:
        wait_for(lambda: not any(running(p) for p in workers), "the workers to stop",
                   timeout=15)
    finally:
        for p in workers:  # orphans, if the test fails: they must not outlive it
            if running(p):
                os.kill(p, signal.SIGKILL)
    with socket.socket() as s:  # the port is free: a restart can bind it
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
