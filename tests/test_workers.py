"""Worker processes and the master's operations, with real processes, real signals
and real clients.

Load comes from client threads (tests/load.py) that each send requests one after another, on a
new connection each (so a reload or a recycle can be judged request by request) or over
keep-alive, and count answers that are not `200` with a pid as the body. Where no request may fail (a reload, a recycle), the count of
failures is asserted to be 0; where a worker is killed, only requests in flight on it may fail.
"""

import http.client
import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

from tests.helpers import wait_for
from tests.load import Load


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def get(port, path="/pid"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path)
    r = c.getresponse()
    return r.status, r.read()


def unix_get(path, target="/pid"):
    """One GET over the unix socket at `path`, Connection: close; the raw answer."""
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        return s.recv(4096)
    finally:
        s.close()


def test_two_workers_both_serve_and_the_master_serves_nothing(start_server):
    srv = start_server("workers", "--workers", "2")
    workers = children(srv.pid)
    assert len(workers) == 2
    seen = set()
    for _ in range(200):
        status, body = get(srv.port)
        assert status == 200
        seen.add(int(body))
        if len(seen) == 2:
            break
    assert seen == set(workers), (seen, workers)
    assert srv.pid not in seen


def test_a_killed_worker_is_replaced_and_logged(start_server):
    srv = start_server("workers", "--workers", "2")
    victim = children(srv.pid)[0]
    with Load(srv.port, clients=4, keep_alive=False) as load:
        load.wait_for(50)
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: len(children(srv.pid)) == 2 and victim not in children(srv.pid),
                 "a replacement worker", timeout=30)
        srv.wait_log(rf"Worker {victim} died \(killed by SIGKILL\)")
        srv.wait_log(r"Worker \d+ ready", since=0)
        load.wait_for(200)
    # Only requests in flight on the killed worker may fail: at most one per client.
    assert len(load.failed) <= 4, load.failed
    assert set(children(srv.pid)) & load.pids


def test_hup_reloads_every_worker_without_failing_a_request(start_server):
    srv = start_server("workers", "--workers", "2")
    old = set(children(srv.pid))
    with Load(srv.port, clients=4) as load:
        load.wait_for(100)
        for n in range(1, 3):
            srv.signal(signal.SIGHUP)
            wait_for(lambda: srv.log_text().count("Reload done") == n, "the reload", timeout=30)
            load.wait_for(100)
        wait_for(lambda: len(children(srv.pid)) == 2, "the old workers to finish", timeout=30)
    new = set(children(srv.pid))
    assert len(new) == 2 and not (new & old)
    assert load.failed == [], (load.failed, f"{time.monotonic():.4f}", srv.log_text())
    assert new & load.pids, "the new workers served"


def test_a_reload_whose_app_no_longer_imports_keeps_the_old_workers(start_server, tmp_path):
    (tmp_path / "changing.py").write_text(
        "def app(environ, start_response):\n"
        "    start_response('200 OK', [('Content-Length', '3')])\n"
        "    return [b'old']\n")
    srv = start_server(None, "--workers", "2", "changing:app", cwd=tmp_path)
    old = set(children(srv.pid))
    (tmp_path / "changing.py").write_text("import sluicegate_test_no_such_dependency\n")
    srv.signal(signal.SIGHUP)
    srv.wait_log(r"Reload abandoned")
    assert get(srv.port, "/") == (200, b"old")
    wait_for(lambda: set(children(srv.pid)) == old, "the failed new workers to be gone", timeout=30)
    assert srv.alive()


def test_a_worker_that_cannot_import_the_app_stops_the_server_with_status_3(start_server):
    from tests.conftest import ServerProcess
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "sluicegate", "--workers", "2", "-b", "127.0.0.1:0",
                        "tests.apps.boot_fails:app"], capture_output=True, text=True, timeout=60,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert r.returncode == 3, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("sluicegate: error:")]
    assert errors and "sluicegate_test_no_such_dependency" in errors[0]
    assert "Traceback" not in r.stderr
    # Not a respawn loop: the two first workers failed and nothing else was started.
    assert r.stderr.count("Booting worker") == 2


def test_max_requests_replaces_workers_without_failing_a_request(start_server):
    srv = start_server("workers", "--workers", "2", "--max-requests", "150",
                       "--max-requests-jitter", "20")
    first = set(children(srv.pid))
    with Load(srv.port, clients=4) as load:
        load.wait_for(900)
        # Both first workers reach their count (a worker looks at it every 0.1 s).
        wait_for(lambda: srv.log_text().count("reached --max-requests") >= 2, "two recycles",
                 timeout=30)
        # The replacements serve (their pids answer), the old workers having finished theirs.
        wait_for(lambda: len(load.pids - first) >= 1, "a replacement serving", timeout=30)
        load.wait_for(100)
    assert load.failed == []
    assert len(load.pids) >= 3, "a replacement served"


def test_max_requests_is_exact_for_requests_one_after_another(start_server):
    """With --max-requests 2 a worker served 3 or more requests: the limit was compared every
    20 ms by the worker's Python side, and in between the worker went on accepting. Now the
    request that reaches the limit retires the worker at once: sent one after another, each on
    a new connection, every replaced worker served exactly 2."""
    srv = start_server("workers", "--workers", "2", "--max-requests", "2")
    ended = re.compile(r"Worker \d+ served (\d+) requests")
    served = []
    for sent in range(1, 401):  # back to back: no pause for a late look at the count to use
        assert get(srv.port)[0] == 200
        served = ended.findall(srv.log_text())
        if len(served) >= 4:
            break
    assert len(served) >= 4, f"{len(served)} replaced after {sent} requests"
    assert set(served) == {"2"}, served


def test_a_worker_past_max_requests_hands_its_clients_over_while_another_serves(start_server):
    """A worker that reached --max-requests kept taking its share while its replacement
    booted (6,707-8,630 requests served with --max-requests 5000). Now its last answer says
    `Connection: close`, and it leaves new connections to the other worker:
    a keep-alive client's next request, on its new connection, is another worker's, and no
    request fails on the way."""
    srv = start_server("workers", "--workers", "2", "--max-requests", "20")
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    answers = []  # (pid, closes)
    for _ in range(400):
        conn.request("GET", "/pid")
        r = conn.getresponse()
        body = r.read()
        assert r.status == 200
        answers.append((int(body), (r.getheader("Connection") or "").lower() == "close"))
        if answers[-1][1]:
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        closes = [i for i, (_, c) in enumerate(answers) if c]
        if closes and len(answers) > closes[0] + 5:
            break
    conn.close()
    first_close = next(i for i, (_, c) in enumerate(answers) if c)
    handed_over_by = answers[first_close][0]
    assert answers[first_close + 1][0] != handed_over_by, answers[first_close - 2:first_close + 3]
    # Every answer before the hand-over said keep-alive and the connection carried it.
    assert all(not c for _, c in answers[:first_close])


def test_ttin_and_ttou_change_the_number_of_workers(start_server):
    srv = start_server("workers", "--workers", "2")
    srv.signal(signal.SIGTTIN)
    wait_for(lambda: len(children(srv.pid)) == 3, "a third worker", timeout=30)
    # One at a time: the kernel merges a signal sent while the same one is still pending.
    srv.signal(signal.SIGTTOU)
    srv.wait_log(r"Received SIGTTOU: 2 worker")
    srv.signal(signal.SIGTTOU)
    srv.wait_log(r"Received SIGTTOU: 1 worker")
    wait_for(lambda: len(children(srv.pid)) == 1, "one worker", timeout=30)
    mark = srv.log_mark()
    srv.signal(signal.SIGTTOU)  # never fewer than one
    srv.wait_log(r"Received SIGTTOU: 1 worker", since=mark)
    assert get(srv.port)[0] == 200
    assert len(children(srv.pid)) == 1


def test_term_lets_workers_finish_in_flight_requests(start_server):
    srv = start_server("workers", "--workers", "2", "--graceful-timeout", "20")
    result = {}

    def slow():
        result["answer"] = get(srv.port, "/sleep?t=1.5&token=inflight")

    t = threading.Thread(target=slow)
    t.start()
    srv.wait_marks("sleep-started", 1)
    srv.signal(signal.SIGTERM)
    assert srv.wait_exit() == 0
    t.join(30)
    assert result["answer"][0] == 200 and result["answer"][1].startswith(b"slept inflight")


def test_quit_stops_at_once(start_server):
    srv = start_server("workers", "--workers", "2", "--graceful-timeout", "60")
    t = threading.Thread(target=lambda: get_quietly(srv.port), daemon=True)
    t.start()
    srv.wait_marks("sleep-started", 1)
    srv.signal(signal.SIGQUIT)
    assert srv.wait_exit() != 0  # a request was cut
    assert "Received SIGQUIT: stopping now" in srv.log_text()


def get_quietly(port):
    try:
        get(port, "/sleep?t=30&token=cut")
    except OSError:
        pass


def test_pid_file_is_written_and_removed(start_server, tmp_path):
    pid_file = tmp_path / "sg.pid"
    srv = start_server("workers", "--workers", "2", "--pid", str(pid_file))
    assert pid_file.read_text().strip() == str(srv.pid)
    srv.signal(signal.SIGTERM)
    assert srv.wait_exit() == 0
    assert not pid_file.exists()


def test_a_pid_file_naming_a_live_server_is_neither_taken_nor_removed(start_server, tmp_path):
    """A second server started with the same --pid overwrote the first's
    file, then removed it when it stopped, leaving the running server unnamed. Now the second
    one refuses to start, in one line naming the pid, and the file stays the first's."""
    pid_file = tmp_path / "sg.pid"
    first = start_server("workers", "--workers", "1", "--pid", str(pid_file))
    assert pid_file.read_text().strip() == str(first.pid)
    for workers in (["--workers", "1"], []):  # under a master, and a single process
        second = start_server("workers", *workers, "--pid", str(pid_file), wait_ready=False)
        assert second.wait_exit() == 1
        errors = [line for line in second.log_text().splitlines() if "error" in line]
        assert len(errors) == 1, second.log_text()
        assert f"names a running process (pid {first.pid})" in errors[0], errors[0]
        assert pid_file.read_text().strip() == str(first.pid)
    assert first.request("GET", "/").status == 200
    first.signal(signal.SIGTERM)
    assert first.wait_exit() == 0
    assert not pid_file.exists()


def test_a_stale_pid_file_is_replaced(start_server, tmp_path):
    """A pid file left by a server that is gone (kill -9, a reboot) names a dead pid: it is
    replaced, and removed when the new server stops."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    pid_file = tmp_path / "sg.pid"
    pid_file.write_text(f"{gone.pid}\n")
    srv = start_server("workers", "--workers", "1", "--pid", str(pid_file))
    assert pid_file.read_text().strip() == str(srv.pid)
    srv.signal(signal.SIGTERM)
    assert srv.wait_exit() == 0
    assert not pid_file.exists()


def test_pid_off_writes_no_pid_file(start_server, tmp_path):
    # --help shows the default as "off"; saying it must not create a file named "off".
    srv = start_server("workers", "--workers", "1", "--pid", "off", cwd=tmp_path)
    assert srv.request("GET", "/").status == 200
    assert not (tmp_path / "off").exists()  # (one would be written at start, removed at exit)
    srv.signal(signal.SIGTERM)
    assert srv.wait_exit() == 0


def test_a_unix_socket_file_survives_worker_replacement_and_goes_with_the_master(start_server,
                                                                                  tmp_path):
    path = str(tmp_path / "sg.sock")
    srv = start_server("workers", "--workers", "2", binds=[f"unix:{path}"])
    victim = children(srv.pid)[0]
    os.kill(victim, signal.SIGKILL)
    wait_for(lambda: len(children(srv.pid)) == 2 and victim not in children(srv.pid),
             "a replacement worker", timeout=30)
    srv.signal(signal.SIGHUP)
    wait_for(lambda: "Reload done" in srv.log_text(), "the reload", timeout=30)
    assert unix_get(path).startswith(b"HTTP/1.1 200")
    srv.signal(signal.SIGTERM)
    assert srv.wait_exit() == 0
    assert not os.path.exists(path)


@pytest.mark.parametrize("signame", ["SIGHUP", "SIGUSR2", "SIGTTIN", "SIGTTOU", "SIGWINCH"])
def test_operations_signals_never_kill_a_single_process_server(start_server, signame):
    srv = start_server("workers")
    srv.signal(getattr(signal, signame))
    srv.wait_log(rf"Received {signame}: ignored")
    assert srv.alive()
    status, body = get(srv.port)
    assert status == 200 and int(body) == srv.pid


def test_usr1_reopens_the_access_log(start_server, tmp_path):
    log_path = tmp_path / "access.log"
    srv = start_server("workers", "--access-log", str(log_path))
    get(srv.port, "/pid?before")
    wait_for(lambda: "before" in log_path.read_text(), "the first access line", timeout=30)
    os.rename(log_path, tmp_path / "access.log.1")  # what logrotate does
    srv.signal(signal.SIGUSR1)
    srv.wait_log(r"access log .* reopened")
    get(srv.port, "/pid?after")
    wait_for(lambda: log_path.exists() and "after" in log_path.read_text(),
             "a line in the new file", timeout=30)
    assert "after" not in (tmp_path / "access.log.1").read_text()


def test_usr1_reaches_every_worker(start_server, tmp_path):
    log_path = tmp_path / "access.log"
    srv = start_server("workers", "--workers", "2", "--access-log", str(log_path))
    os.rename(log_path, tmp_path / "access.log.1")
    srv.signal(signal.SIGUSR1)
    wait_for(lambda: srv.log_text().count("reopened") == 2, "both workers reopening", timeout=30)
    assert log_path.exists()


def test_connections_are_spread_evenly_over_the_workers(start_server):
    """Workers share the listening socket; each publishes how many connections it holds and
    leaves new ones to a less loaded worker (src/io/balance.rs). Without that, the worker that
    is already running wins nearly every accept (measured 84% / 16%)."""
    srv = start_server("workers", "--workers", "2")
    conns = []
    per_worker = {}
    try:
        for _ in range(24):
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
            c.request("GET", "/pid")
            r = c.getresponse()
            pid = int(r.read())
            per_worker[pid] = per_worker.get(pid, 0) + 1
            conns.append(c)  # kept open: each worker's count includes it
    finally:
        for c in conns:
            c.close()
    assert set(per_worker) == set(children(srv.pid)), per_worker
    assert min(per_worker.values()) >= 10, per_worker


def test_max_rss_replaces_a_worker_that_grew_past_it(start_server):
    srv = start_server("leaky", "--workers", "1", "--max-rss", "120M")
    first = children(srv.pid)[0]
    # Each /leak keeps 4 MiB in the worker that served it (the only one).
    for _ in range(40):
        status, body = get(srv.port, "/leak")
        assert status == 200
    srv.wait_log(rf"Worker {first} uses \d+ MiB \(over --max-rss\)")
    wait_for(lambda: children(srv.pid) and first not in children(srv.pid), "the replacement",
             timeout=30)
    status, body = get(srv.port, "/pid")
    assert status == 200 and int(body) != first


def _pid_from(path):
    try:
        return int(open(path).read())
    except (OSError, ValueError):
        return None


def test_usr2_starts_a_new_master_on_the_same_sockets_without_failing_a_request(start_server,
                                                                              tmp_path):
    pid_file = str(tmp_path / "sg.pid")
    srv = start_server("workers", "--workers", "2", "--pid", pid_file)
    old_workers = set(children(srv.pid))
    new_master = None
    try:
        with Load(srv.port, clients=4) as load:
            load.wait_for(100)
            srv.signal(signal.SIGUSR2)
            wait_for(lambda: _pid_from(pid_file) not in (None, srv.pid), "the new master's pid",
                     timeout=30)
            new_master = _pid_from(pid_file)
            assert _pid_from(pid_file + ".oldbin") == srv.pid
            wait_for(lambda: len(children(new_master)) == 2, "the new master's workers", timeout=30)
            srv.wait_log(rf"\[{new_master}\] \[INFO\] Listening at: http://127.0.0.1:{srv.port}")
            load.wait_for(100)
            srv.signal(signal.SIGTERM)  # the operator stops the old master
            assert srv.wait_exit() == 0
            load.wait_for(200)
        assert load.failed == []
        new_workers = set(children(new_master))
        assert new_workers & load.pids and not (new_workers & old_workers)
        assert "passed by the previous master" in srv.log_text()
        assert not os.path.exists(pid_file + ".oldbin")
    finally:
        if new_master:
            os.kill(new_master, signal.SIGTERM)
            wait_for(lambda: not os.path.exists(f"/proc/{new_master}") or
                     open(f"/proc/{new_master}/stat").read().split()[2] == "Z",
                     "the new master to end", timeout=30)
    assert not os.path.exists(pid_file)


def test_a_failed_upgrade_leaves_the_old_master_in_charge(start_server, tmp_path):
    (tmp_path / "changing.py").write_text(
        "def app(environ, start_response):\n"
        "    start_response('200 OK', [('Content-Length', '3')])\n"
        "    return [b'old']\n")
    pid_file = str(tmp_path / "sg.pid")
    sock = str(tmp_path / "sg.sock")
    srv = start_server(None, "--workers", "2", "--pid", pid_file, "changing:app", cwd=tmp_path,
                       binds=[f"unix:{sock}"])
    (tmp_path / "changing.py").write_text("import sluicegate_test_no_such_dependency\n")
    srv.signal(signal.SIGUSR2)
    srv.wait_log(r"New master \d+ exited \(exit status 3\): this master keeps serving")
    assert _pid_from(pid_file) == srv.pid
    assert not os.path.exists(pid_file + ".oldbin")
    assert unix_get(sock, "/").endswith(b"old")
    srv.signal(signal.SIGTERM)
    assert srv.wait_exit() == 0
    assert not os.path.exists(sock), "the old master removed its socket file again"
