"""A worker whose `--metrics-bind` port is busy (regression, 93c59d0): it used to
say ready before the core bound its metrics port, then die, and be replaced at once, again and
again (196 boots in 5 s), the master retiring healthy workers for it. Now every worker checks
that it can listen on its metrics address before it says ready: one that cannot fails its boot
with one error line, so the first workers stop the start (status 3) and a later one is retried
with back-off while the others serve. Real processes, real signals, real sockets.
"""

import http.client
import random
import re
import signal
import socket
import subprocess
import sys

from tests.conftest import ROOT
from tests.helpers import unless_refused, wait_for
from tests.test_workers import children, get


def reusable_socket():
    """A TCP socket with SO_REUSEADDR, as the server binds its metrics port."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return s


def held_port_pair(busy_at=1):
    """(P, a socket listening on P+busy_at): P .. P+busy_at-1 free, P+busy_at busy. The
    master listens on P (the sum), the worker in slot S on P+S+1. P is taken below the
    kernel's ephemeral range (32768 and up): on a machine whose clients hold thousands of
    connections, a run of neighbouring ports in that range is rarely free, and a client's
    connect could take one between the probe and the server's bind. Each probe binds as the
    server does, with SO_REUSEADDR (a port left in TIME-WAIT is free to listen on)."""
    for _ in range(200):
        port = random.randrange(20000, 32700)
        busy = reusable_socket()
        try:
            for i in range(1, busy_at):
                with reusable_socket() as free:
                    free.bind(("127.0.0.1", port + i))
            busy.bind(("127.0.0.1", port + busy_at))
        except OSError:
            busy.close()
            continue
        busy.listen()
        return port, busy
    raise AssertionError("no two neighbouring free ports")


def scrape(port):
    """The body of GET /metrics on `port`, once it answers 200 (the core binds the metrics
    listener while its server is built, before the worker says ready; the master may say a
    worker is ready a moment before it looks)."""
    def answered():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/metrics")
        r = c.getresponse()
        return r.status == 200 and r.read()

    return wait_for(lambda: unless_refused(answered), f"metrics on port {port}")


def test_a_busy_metrics_port_among_the_first_workers_stops_the_start_with_one_line():
    port, busy = held_port_pair()
    with busy:
        r = subprocess.run([sys.executable, "-m", "sluicegate", "--workers", "2", "-b",
                            "127.0.0.1:0", "--metrics-bind", f"127.0.0.1:{port}",
                            "tests.apps.workers:app"], capture_output=True, text=True,
                           timeout=60, cwd=str(ROOT))
    assert r.returncode == 3, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("sluicegate: error:")]
    assert errors == [f"sluicegate: error: --metrics-bind 127.0.0.1:{port + 1}: cannot listen: "
                      "Address already in use"], r.stderr
    assert "Traceback" not in r.stderr and "died" not in r.stderr, r.stderr
    assert r.stderr.count("Booting worker") == 2, r.stderr


def test_a_busy_metrics_port_stops_a_single_process_start_with_one_line(tmp_path):
    """Regression: without --workers, a busy --metrics-bind port printed a 16-line traceback
    (the core's bind error); now one line and status 1, as a busy --bind. A unix path held by
    a live server is refused the same way."""
    port, busy = held_port_pair()
    with busy:
        r = subprocess.run([sys.executable, "-m", "sluicegate", "-b", "127.0.0.1:0",
                            "--metrics-bind", f"127.0.0.1:{port + 1}", "tests.apps.hello:app"],
                           capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [f"sluicegate: error: --metrics-bind 127.0.0.1:{port + 1}: "
                                     "cannot listen: Address already in use"], r.stderr
    path = tmp_path / "m.sock"
    with socket.socket(socket.AF_UNIX) as live:
        live.bind(str(path))
        live.listen()
        r = subprocess.run([sys.executable, "-m", "sluicegate", "-b", "127.0.0.1:0",
                            "--metrics-bind", f"unix:{path}", "tests.apps.hello:app"],
                           capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [f"sluicegate: error: --metrics-bind unix:{path}: another "
                                     f"process listens on {path}"], r.stderr


def test_a_later_worker_with_a_busy_metrics_port_is_retried_with_back_off(start_server):
    port, busy = held_port_pair(busy_at=2)
    srv = start_server("workers", "--workers", "1", "--metrics-bind", f"127.0.0.1:{port}")
    healthy = children(srv.pid)
    try:
        mark = srv.log_mark()
        srv.signal(signal.SIGTTIN)  # the new worker takes slot 1: port + 2, busy
        srv.wait_log(r"Worker \d+ failed to boot", since=mark)
        srv.wait_log(r"1 of 2 worker\(s\) serving; starting a replacement again in 1s",
                     since=mark)
        srv.wait_log(r"starting a replacement again in 2s", since=mark, timeout=30)
        log = srv.log_since(mark)
        assert "cannot listen: Address already in use" in log
        assert "ready" not in log.replace("already", "") and "died" not in log, log
        assert log.count("Booting worker") == 2, log  # tried twice in ~1 s, not in a loop
        assert children(srv.pid) == healthy[:1] or set(healthy) <= set(children(srv.pid))
        assert get(srv.port)[0] == 200
        assert b'worker="1"' in scrape(port + 1)
    finally:
        busy.close()
    mark = srv.log_mark()
    srv.wait_log(r"Worker \d+ ready", since=mark, timeout=30)  # the port is free: it boots
    wait_for(lambda: len(children(srv.pid)) == 2, "two workers", timeout=30)
    assert b'worker="2"' in scrape(port + 2)
    assert srv.alive()


def test_failed_replacements_are_counted_in_systemds_status(start_server):
    """An operator sees failed boots in `systemctl status`, and
    sees the server whole again once a replacement boots."""
    from tests.test_systemd_and_privileges import NotifySocket

    def status_matching(pattern):
        """Messages until a STATUS= line matches `pattern` (bounded by the socket timeout)."""
        while True:
            msg = notify.sock.recv(4096).decode()
            notify.messages.append(msg)
            found = re.search(rf"^STATUS=({pattern})$", msg, re.M)
            if found:
                return found.group(1)

    notify = NotifySocket()
    port, busy = held_port_pair(busy_at=2)
    try:
        srv = start_server("workers", "--workers", "1", "--metrics-bind", f"127.0.0.1:{port}",
                           env={"NOTIFY_SOCKET": notify.path})
        notify.wait_for("READY=1")
        srv.signal(signal.SIGTTIN)
        assert status_matching(r"serving with 1 of 2 worker\(s\); \d+ replacement.*") == \
            "serving with 1 of 2 worker(s); 1 replacement(s) failed to boot since the start"
        busy.close()
        whole = status_matching(r"serving with 2 worker\(s\).*")
        assert re.fullmatch(r"serving with 2 worker\(s\); \d+ replacement\(s\) failed to boot "
                            r"since the start", whole), whole
        assert srv.alive()
    finally:
        busy.close()
        notify.close()
