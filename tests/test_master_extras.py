"""What a master does beside serving, with uWSGI 2.0's meanings (options_processes.py): side
commands (--attach-daemon, --smart-attach-daemon), --exec-pre-app, --touch-reload,
--max-worker-lifetime and --on-term. Each test runs a real server and watches real processes.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.helpers import wait_for


def _lines(path: Path):
    try:
        return path.read_text().split()
    except FileNotFoundError:
        return []


def _pid_in(path: Path):
    """The pid a shell wrote to `path`, or None: one read, since `echo $! > path` truncates
    the file before it writes, and a second read may find it empty."""
    lines = _lines(path)
    return int(lines[0]) if len(lines) == 1 else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _pid(srv) -> int:
    return int(srv.request(path="/pid").body)


def test_attach_daemon_is_started_restarted_kept_on_reload_and_stopped(start_server, tmp_path):
    pids = tmp_path / "pids"
    command = f"echo $$ >> {pids}; exec sleep 1000"
    srv = start_server("workers", "--attach-daemon", command)
    wait_for(lambda: len(_lines(pids)) == 1, "the side command started")
    first = int(_lines(pids)[0])
    assert _alive(first)
    # A graceful reload replaces the workers, not the side command.
    worker = _pid(srv)
    mark = srv.log_mark()
    srv.signal(signal.SIGHUP)
    srv.wait_log(r"Reload done", since=mark)
    wait_for(lambda: _pid(srv) != worker, "the new worker serving")
    assert _alive(first) and len(_lines(pids)) == 1
    # Killed: started again.
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: len(_lines(pids)) == 2, "the side command started again", timeout=30)
    second = int(_lines(pids)[1])
    assert srv.wait_log(r"Side command .* exited \(killed by SIGKILL\)")
    # The server's stop stops it.
    assert srv.stop() == 0
    wait_for(lambda: not _alive(second), "the side command stopped with the server")
    assert len(_lines(pids)) == 2


def test_an_attach_daemon_command_dies_with_a_master_killed_with_sigkill(start_server,
                                                                         tmp_path):
    pids = tmp_path / "pids"
    srv = start_server("workers", "--attach-daemon", f"echo $$ >> {pids}; exec sleep 1000")
    wait_for(lambda: len(_lines(pids)) == 1, "the side command started")
    command = int(_lines(pids)[0])
    srv.kill()  # SIGKILL: the master stops nothing
    wait_for(lambda: not _alive(command), "the side command gone with the master")


def test_a_side_command_that_dies_at_once_is_throttled(start_server, tmp_path):
    """A command that exits at once is started again after a wait, not in a loop."""
    runs = tmp_path / "runs"
    srv = start_server("workers", "--attach-daemon", f"echo run >> {runs}; exit 3")
    srv.wait_log(r"Side command .* exited \(exit status 3\): starting it again in \d+s")
    wait_for(lambda: len(_lines(runs)) >= 2, "the command started again", timeout=30)
    # Each start within 3 s of the one before waits one second more.
    srv.wait_log(r"starting it again in [2-9]s", timeout=30)


def test_smart_attach_daemon_watches_its_pid_file_and_outlives_the_server(start_server,
                                                                         tmp_path):
    pidfile = tmp_path / "side.pid"
    starts = tmp_path / "starts"
    command = (f"echo start >> {starts}; sleep 1000 </dev/null >/dev/null 2>&1 & "
               f"echo $! > {pidfile}")
    srv = start_server("workers", "--smart-attach-daemon", f"{pidfile} {command}")
    first = wait_for(lambda: (pid := _pid_in(pidfile)) and _alive(pid) and pid,
                     "the smart command's pid file")
    try:
        os.kill(first, signal.SIGKILL)
        second = wait_for(lambda: (pid := _pid_in(pidfile)) not in (None, first) and pid,
                          "the smart command started again", timeout=30)
        assert len(_lines(starts)) == 2
        assert srv.stop() == 0
        assert _alive(second), "uWSGI leaves a smart-attach-daemon command running"
    finally:
        for line in _lines(pidfile):
            try:
                os.kill(int(line), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_smart_attach_daemon_adopts_a_live_pid_file(start_server, tmp_path):
    pidfile = tmp_path / "side.pid"
    starts = tmp_path / "starts"
    pidfile.write_text(f"{os.getpid()}\n")  # a live process: this test's
    srv = start_server("workers", "--smart-attach-daemon",
                       f"{pidfile} echo start >> {starts}")
    srv.wait_log(rf"Side command .*: found pid {os.getpid()} in")
    assert not starts.exists()


def test_exec_pre_app_runs_in_each_worker_before_the_app(start_server, tmp_path):
    ran = tmp_path / "ran"
    srv = start_server("workers", "--workers", "2", "--exec-pre-app", f"echo $$ >> {ran}",
                       "--exec-pre-app", f"echo second >> {ran}")
    wait_for(lambda: len(_lines(ran)) == 4, "the commands in each worker")
    assert _lines(ran).count("second") == 2  # both commands, in each of the two workers
    assert _lines(ran)[0] != "second"  # in order
    srv.stop()


def test_exec_pre_app_runs_once_in_the_master_with_preload(start_server, tmp_path):
    ran = tmp_path / "ran"
    srv = start_server("workers", "--workers", "2", "--preload", "--exec-pre-app",
                       f"echo $PPID >> {ran}")
    assert _lines(ran) == [str(srv.pid)]


def test_a_failing_exec_pre_app_command_stops_the_start(start_server):
    srv = start_server("workers", "--exec-pre-app", "exit 7", wait_ready=False)
    assert srv.wait_exit() == 1  # a start error of the single process
    assert "--exec-pre-app command 'exit 7' failed (exit status 7)" in srv.log_text()
    assert "Listening at" not in srv.log_text()


def test_touch_reload_reloads_gracefully_when_the_file_is_touched(start_server, tmp_path):
    touched = tmp_path / "reload.touch"
    touched.write_text("")
    srv = start_server("workers", "--touch-reload", str(touched))
    before = _pid(srv)
    mark = srv.log_mark()
    os.utime(touched, ns=(0, os.stat(touched).st_mtime_ns + 10**9))
    srv.wait_log(r"reload\.touch was touched \(--touch-reload\)", since=mark)
    srv.wait_log(r"Reload done", since=mark)
    wait_for(lambda: _pid(srv) != before, "the new worker serving")


def test_touch_reload_counts_a_file_that_appears(start_server, tmp_path):
    touched = tmp_path / "later.touch"
    srv = start_server("workers", "--touch-reload", str(touched))
    before = _pid(srv)
    mark = srv.log_mark()
    touched.write_text("")
    srv.wait_log(r"Reload done", since=mark)
    wait_for(lambda: _pid(srv) != before, "the new worker serving")


def test_max_worker_lifetime_replaces_an_old_worker(start_server):
    srv = start_server("workers", "--workers", "1", "--max-worker-lifetime", "1")
    first = _pid(srv)
    srv.wait_log(rf"Worker {first} served for [\d.]+s \(--max-worker-lifetime\)", timeout=30)
    wait_for(lambda: _pid(srv) != first, "the replacement serving", timeout=30)


def test_on_term_reload_makes_sigterm_a_graceful_reload(start_server):
    srv = start_server("workers", "--on-term", "reload")
    before = _pid(srv)
    mark = srv.log_mark()
    srv.signal(signal.SIGTERM)
    srv.wait_log(r"Received SIGTERM \(--on-term reload\)", since=mark)
    srv.wait_log(r"Reload done", since=mark)
    wait_for(lambda: _pid(srv) != before, "the new worker serving")
    assert srv.alive()
    assert srv.stop(signal.SIGINT) == 0  # INT still stops


def test_on_term_stop_is_the_default(start_server):
    srv = start_server("workers", "--workers", "1")
    assert srv.stop(signal.SIGTERM) == 0
    assert "Reload" not in srv.log_text()
