"""`sluicegate ctl` and the control socket, with real servers, real worker processes, the real
client command and, for `top`, a real terminal (tmux).

A server under load gets it from a background client loop (`Load`, as in test_workers.py).
Requests "in flight" are the `blocking` app's `/slow` calls held at a gate the test opens, so
what `ctl requests` must list is known exactly. Operations are judged by their effects: pids
that change, worker counts, a process that exits, a socket file that goes.
"""

import json
import signal
import os
import shutil
import stat
import subprocess
import threading
import http.client

import pytest

from tests.conftest import PYTHON, ROOT
from tests.helpers import wait_for
from tests.load import Load


def ctl(*args, env=None):
    """Run `sluicegate ctl ARGS`; (exit status, stdout, stderr)."""
    penv = {k: v for k, v in os.environ.items() if not k.startswith("SLUICEGATE_")}
    penv["PYTHONPATH"] = str(ROOT)
    penv.update(env or {})
    p = subprocess.run([PYTHON, "-m", "sluicegate", "ctl", *args], capture_output=True,
                       text=True, timeout=60, env=penv, cwd=str(ROOT))
    return p.returncode, p.stdout, p.stderr


def ctl_json(sock, *args):
    code, out, err = ctl("--socket", sock, *args, "--json")
    assert code == 0, f"ctl {args}: {code}\n{out}\n{err}"
    return json.loads(out)


def serving_pids(sock):
    """The pids of the workers that serve (None while another state shows)."""
    answer = ctl_json(sock, "status")
    return {w["pid"] for w in answer["workers"] if w["state"] == "serving"}, answer


def get_in_thread(port, path, results):
    def run():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", path)
        results.append(conn.getresponse().read())
        conn.close()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.fixture
def sock_path(tmp_path):
    return str(tmp_path / "sg.ctl")


def test_ctl_status_shows_the_master_and_each_worker_under_load(start_server, sock_path):
    srv = start_server("workers", "--workers", "2", "--control-socket", sock_path)
    with Load(srv.port, clients=2, path="/", keep_alive=False) as load:
        load.wait_for(50)
        answer = ctl_json(sock_path, "status")
        code, text, _ = ctl("--socket", sock_path, "status")
    assert answer["master"]["pid"] == srv.pid and answer["master"]["role"] == "master"
    assert answer["master"]["state"] == "serving" and answer["master"]["workers"] == 2
    workers = answer["workers"]
    assert len(workers) == 2 and {w["worker"] for w in workers} == {1, 2}
    assert len({w["pid"] for w in workers}) == 2 and srv.pid not in {w["pid"] for w in workers}
    for w in workers:
        assert w["answered"] and w["state"] == "serving"
        assert w["rss"] > 0 and w["age"] >= 0 and w["in_flight"] >= 0
    # Both workers served the load, and the counts are the core's (`requests`).
    assert sum(w["requests"] for w in workers) >= 50
    assert code == 0 and f"master {srv.pid}" in text
    for w in workers:
        assert str(w["pid"]) in text


def test_ctl_requests_lists_held_requests_with_their_worker_path_and_stack(start_server,
                                                                          sock_path):
    # The core lists its calls with --timeout (or --metrics-bind): a registry every call pays.
    srv = start_server("blocking", "--workers", "2", "--control-socket", sock_path,
                       "--timeout", "600")
    results = []
    threads = [get_in_thread(srv.port, f"/slow?token={t}&secret=hunter2", results)
               for t in ("a", "b")]
    with Load(srv.port, clients=1, path="/", keep_alive=False) as load:  # /fast answers beside them
        srv.wait_marks("started", 2)
        load.wait_for(10)
        answer = ctl_json(sock_path, "requests")
        stacks = ctl_json(sock_path, "requests", "--stacks")
        code, text, _ = ctl("--socket", sock_path, "requests")
    srv.open_gate("slow")
    for t in threads:
        t.join(30)
    slow = [c for c in answer["requests"] if c["path"] == "/slow"]
    assert len(slow) == 2, answer
    workers = {w["pid"]: w["worker"] for w in ctl_json(sock_path, "status")["workers"]}
    for c in slow:
        assert c["method"] == "GET" and c["age"] > 0
        assert workers[c["pid"]] == c["worker"]
    assert "hunter2" not in json.dumps(answer) and "hunter2" not in text
    held = [c for c in stacks["requests"] if c["path"] == "/slow"]
    assert len(held) == 2 and all("wait_gate" in c["stack"] for c in held)
    assert code == 0 and "GET" in text and "/slow" in text
    assert sorted(results) == [b"slow a gate=open", b"slow b gate=open"]


def test_ctl_requests_says_how_to_list_calls_when_the_server_does_not(start_server, sock_path):
    """Without --timeout or --metrics-bind the core keeps no list of its calls (it would cost
    every request): `requests` says so and how to get it, rather than an empty list alone."""
    srv = start_server("blocking", "--workers", "2", "--control-socket", sock_path)
    results = []
    t = get_in_thread(srv.port, "/slow?token=x", results)
    srv.wait_marks("started", 1)
    answer = ctl_json(sock_path, "requests")
    code, text, _ = ctl("--socket", sock_path, "requests")
    srv.open_gate("slow")
    t.join(30)
    assert answer["listed"] is False and answer["requests"] == []
    assert code == 0 and "start it with --timeout or --metrics-bind" in text


def test_ctl_reload_replaces_every_worker(start_server, sock_path):
    srv = start_server("workers", "--workers", "2", "--control-socket", sock_path)
    before, _ = serving_pids(sock_path)
    assert len(before) == 2
    code, out, _ = ctl("--socket", sock_path, "reload")
    assert code == 0 and "reload" in out
    wait_for(lambda: (lambda p: len(p) == 2 and not p & before)(serving_pids(sock_path)[0]),
             "two new workers serving after ctl reload", 30)
    assert srv.alive()


def test_ctl_workers_adds_and_removes_workers(start_server, sock_path):
    srv = start_server("workers", "--workers", "2", "--control-socket", sock_path)
    answer = ctl_json(sock_path, "workers", "+2")
    assert answer["previous"] == 2 and answer["target"] == 4
    wait_for(lambda: len(serving_pids(sock_path)[0]) == 4, "four workers serving", 30)
    assert ctl_json(sock_path, "status")["master"]["workers"] == 4
    code, out, _ = ctl("--socket", sock_path, "workers", "-3")
    assert code == 0 and "4 -> 1" in out
    wait_for(lambda: len(ctl_json(sock_path, "status")["workers"]) == 1, "one worker left", 30)
    assert srv.alive()


def test_ctl_reopen_logs_has_every_worker_reopen_its_access_log(start_server, sock_path,
                                                                 tmp_path):
    log_path = tmp_path / "access.log"
    srv = start_server("workers", "--workers", "2", "--control-socket", sock_path,
                       "--access-log", str(log_path))
    os.rename(log_path, tmp_path / "access.log.1")  # what logrotate does
    code, out, _ = ctl("--socket", sock_path, "reopen-logs")
    assert code == 0 and "reopen-logs" in out
    wait_for(lambda: srv.log_text().count("reopened") == 2, "both workers reopening", 30)
    assert log_path.exists()


def test_ctl_stop_stops_the_server_gracefully(start_server, sock_path):
    srv = start_server("blocking", "--workers", "2", "--control-socket", sock_path)
    results = []
    t = get_in_thread(srv.port, "/slow?token=held", results)
    srv.wait_marks("started", 1)
    code, out, _ = ctl("--socket", sock_path, "stop")
    assert code == 0 and "stop" in out
    srv.wait_log("Received SIGTERM")
    srv.open_gate("slow")
    t.join(30)
    assert results == [b"slow held gate=open"]  # the request in flight was finished
    assert srv.wait_exit() == 0
    assert not os.path.exists(sock_path)


def test_the_control_socket_is_mode_0600_and_the_starting_users(start_server, sock_path):
    start_server("workers", "--workers", "2", "--control-socket", sock_path)
    st = os.stat(sock_path)
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_uid == os.getuid()


def test_the_default_socket_is_in_the_runtime_dir_named_for_the_master(start_server, tmp_path):
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    srv = start_server("workers", "--workers", "2", env=env)
    path = tmp_path / f"sluicegate-{srv.pid}.ctl"
    assert path.exists()
    code, out, _ = ctl("--pid", str(srv.pid), "status", env=env)
    assert code == 0 and f"master {srv.pid}" in out
    code, out, _ = ctl("status", env=env)  # the one server there is found without --pid
    assert code == 0 and f"master {srv.pid}" in out
    srv.stop()
    assert not path.exists()


def test_no_control_socket_leaves_no_socket(start_server, tmp_path, sock_path):
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    srv = start_server("workers", "--workers", "2", "--no-control-socket", env=env)
    other = start_server("hello", "--no-control-socket", "--control-socket", sock_path, env=env)
    assert srv.request("GET", "/").status == 200 and other.request("GET", "/").status == 200
    assert os.listdir(tmp_path) == []
    code, _, err = ctl("--pid", str(srv.pid), "status", env=env)
    assert code == 1 and "sluicegate ctl:" in err


def test_a_single_server_answers_for_itself(start_server, sock_path):
    srv = start_server("blocking", "--control-socket", sock_path, "--timeout", "600")
    results = []
    t = get_in_thread(srv.port, "/slow?token=one", results)
    srv.wait_marks("started", 1)
    status = ctl_json(sock_path, "status")
    calls = ctl_json(sock_path, "requests")["requests"]
    code, _, err = ctl("--socket", sock_path, "workers", "+1")
    mark = srv.log_mark()
    reload_code, out, _ = ctl("--socket", sock_path, "reload")  # HUP, as a single server takes it
    srv.wait_log(r"Received SIGHUP", since=mark)
    srv.open_gate("slow")
    t.join(30)
    assert status["master"]["role"] == "single" and status["master"]["pid"] == srv.pid
    assert [w["pid"] for w in status["workers"]] == [srv.pid]
    assert [(c["method"], c["path"], c["pid"]) for c in calls] == [("GET", "/slow", srv.pid)]
    assert code == 1 and "need a master" in err
    assert reload_code == 0 and "reload" in out and srv.alive()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_ctl_top_in_a_terminal_shows_the_workers_and_quits_on_q(start_server, sock_path):
    srv = start_server("workers", "--workers", "2", "--control-socket", sock_path)
    pids = [str(w["pid"]) for w in ctl_json(sock_path, "status")["workers"]]
    session = f"sgtop{os.getpid()}"
    command = (f"env PYTHONPATH={ROOT} {PYTHON} -m sluicegate ctl --socket {sock_path} "
               "top --interval 0.2; echo top-exited-$?")
    tmux = ["tmux", "-L", session]
    # As a person would: a shell in a terminal, the command typed into it, then `q`.
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "120", "-y", "40",
                    "sh"], check=True, env={**os.environ, "TERM": "xterm"})
    try:
        subprocess.run([*tmux, "send-keys", "-t", session, command, "Enter"], check=True)
        def screen():
            return subprocess.run([*tmux, "capture-pane", "-p", "-t", session],
                                  capture_output=True, text=True).stdout

        shown = wait_for(lambda: (lambda s: all(p in s for p in pids) and s)(screen()),
                         "top showing both worker pids", 20, context=screen)
        assert "sluicegate top" in shown and f"master {srv.pid}" in shown
        assert "WORKER" in shown and "IN FLIGHT" in shown
        subprocess.run([*tmux, "send-keys", "-t", session, "q"], check=True)
        wait_for(lambda: "top-exited-0" in screen(), "top to quit on q", 20, context=screen)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def test_status_shows_a_worker_whose_gil_is_held_without_its_answer(start_server, sock_path):
    """A worker stuck in a C call that holds the GIL cannot answer; `status` still answers,
    with that worker's pid, age and memory from the master and `(no answer)`, and the other
    worker's figures."""
    srv = start_server("gil_held", "--workers", "2", "--control-socket", sock_path)
    fifo = srv.state_path("hold-fifo")
    os.mkfifo(fifo)
    results = []
    t = get_in_thread(srv.port, "/hold", results)
    try:
        srv.wait_marks("hold-started", 1)
        answer = ctl_json(sock_path, "status")
        code, text, _ = ctl("--socket", sock_path, "status")
    finally:
        with open(fifo, "wb") as f:
            f.write(b"x")
        t.join(30)
    rows = answer["workers"]
    assert len(rows) == 2 and sorted(w["answered"] for w in rows) == [False, True]
    silent = next(w for w in rows if not w["answered"])
    assert silent["requests"] is None and silent["rss"] > 0 and silent["state"] == "serving"
    assert code == 0 and "(no answer)" in text
    assert results == [b"released"]
    wait_for(lambda: all(w["answered"] for w in ctl_json(sock_path, "status")["workers"]),
             "both workers answering once the GIL is let go", 30)


def test_a_second_server_leaves_a_live_control_socket_to_the_first(start_server, sock_path):
    first = start_server("workers", "--workers", "1", "--control-socket", sock_path)
    second = start_server("hello", "--control-socket", sock_path)
    second.wait_log(r"Control socket .*cannot listen")
    assert second.request("GET", "/").status == 200  # it serves without one
    assert second.stop() == 0
    assert ctl_json(sock_path, "status")["master"]["pid"] == first.pid


def test_a_dead_control_socket_is_replaced(start_server, sock_path):
    import socket as socket_module
    dead = socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM)
    dead.bind(sock_path)  # bound, never listening: what a killed server leaves
    dead.close()
    srv = start_server("hello", "--control-socket", sock_path)
    assert ctl_json(sock_path, "status")["master"]["pid"] == srv.pid


def test_ctl_without_a_socket_names_the_servers_when_there_are_several(start_server, tmp_path):
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    one = start_server("hello", env=env)
    two = start_server("hello", env=env)
    code, _, err = ctl("status", env=env)
    assert code == 1 and "several servers run" in err
    assert f"sluicegate-{one.pid}.ctl" in err and f"sluicegate-{two.pid}.ctl" in err


def test_after_usr2_each_master_answers_on_its_own_default_socket(start_server, tmp_path):
    from tests.test_worker_failures import running
    from tests.test_workers import _pid_from
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    pid_file = str(tmp_path / "sg.pid")
    srv = start_server("workers", "--workers", "2", "--pid", pid_file, env=env)
    new_master = None
    try:
        srv.signal(signal.SIGUSR2)
        wait_for(lambda: _pid_from(pid_file) not in (None, srv.pid), "the new master's pid", 30,
                 context=srv.log_text)
        new_master = _pid_from(pid_file)
        srv.wait_log(rf"\[{new_master}\] \[INFO\] Listening at:", timeout=30)
        for pid in (srv.pid, new_master):
            code, out, _ = ctl("--pid", str(pid), "status", env=env)
            assert code == 0 and f"master {pid}" in out
        srv.signal(signal.SIGTERM)  # the operator stops the old master: its socket goes
        assert srv.wait_exit() == 0
        assert not (tmp_path / f"sluicegate-{srv.pid}.ctl").exists()
        code, out, _ = ctl("status", env=env)  # the one left
        assert code == 0 and f"master {new_master}" in out
    finally:
        if new_master and running(new_master):
            os.kill(new_master, signal.SIGTERM)
            wait_for(lambda: not running(new_master), "the new master to end", 30)
