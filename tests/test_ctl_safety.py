"""`sluicegate ctl` and the control socket against hostile or careless peers: a socket planted
by another user in the runtime directory, answers carrying terminal escapes, worker changes
past any sensible bound, and control clients that are slow or silent. Real servers, the real
client command, and a planted socket served by a real process of another user (`nobody`).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from sluicegate import control_server

from tests.helpers import wait_for
from tests.test_ctl import ctl, ctl_json

#: A stand-in control server: it answers every command as done, records what it was asked,
#: and puts terminal escapes in every answer (an OSC title change, a clear screen, a bell).
FAKE = r'''
import json, os, socket, sys
where = sys.argv[1]
path = os.path.join(where, f"sluicegate-{os.getpid()}.ctl") if len(sys.argv) < 3 else sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(4)
print("ready", path, flush=True)
evil = "\x1b]0;owned\x07\x1b[2J\x9b31m"
while True:
    c, _ = s.accept()
    line = c.makefile("rb").readline()
    with open(os.path.join(where, "asked"), "ab") as f:
        f.write(line)
    cmd = json.loads(line).get("command")
    if cmd == "status":
        answer = {"ok": True, "master": {"pid": 1, "role": "master" + evil, "state": evil,
                  "uptime": 1.0, "workers": 1}, "workers": [
                  {"worker": 1, "pid": 2, "age": 1.0, "requests": evil, "in_flight": 0,
                   "connections": 0, "rss": 1, "state": "serving" + evil}]}
    elif cmd == "requests":
        answer = {"ok": True, "listed": True, "requests": [
                  {"worker": 1, "pid": 2, "age": 1.0, "method": "GET" + evil,
                   "path": "/" + evil, "stack": "line\n" + evil}]}
    elif cmd == "reload":
        answer = {"ok": False, "error": "no" + evil}
    else:
        answer = {"ok": True, "done": cmd + evil}
    c.sendall(json.dumps(answer).encode() + b"\n")
    c.close()
'''


#: The fake server's interpreter: one that `nobody` may run (the work tree's may be private).
PLAIN_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable


def as_nobody():
    nobody = pwd.getpwnam("nobody")
    os.setgid(nobody.pw_gid)
    os.setgroups([])
    os.setuid(nobody.pw_uid)


@pytest.fixture
def shared_dir():
    """A runtime directory any user may write in, as /tmp is."""
    d = tempfile.mkdtemp(prefix="sgtest-rt-", dir="/tmp")
    os.chmod(d, 0o1777)
    yield d
    subprocess.run(["rm", "-rf", d], check=False)


def fake_server(where, *args, user=None):
    p = subprocess.Popen([PLAIN_PYTHON, "-c", FAKE, where, *args], stdout=subprocess.PIPE,
                         text=True, preexec_fn=user)
    line = p.stdout.readline()
    assert line.startswith("ready"), line
    return p, line.split()[1]


@pytest.mark.skipif(os.geteuid() != 0, reason="planting a socket as another user needs root")
def test_ctl_does_not_talk_to_a_socket_another_user_planted(shared_dir):
    """Without --socket or --pid, ctl took any `sluicegate-PID.ctl` of the runtime directory
    whose PID was alive: one planted there by `nobody` was sent root's `stop` (ctl said
    "stop: asked", exit 0) while the real server went on."""
    p, path = fake_server(shared_dir, user=as_nobody)
    try:
        assert os.stat(path).st_uid == pwd.getpwnam("nobody").pw_uid
        env = {"XDG_RUNTIME_DIR": shared_dir}
        code, out, err = ctl("stop", env=env)
        pid_code, _, pid_err = ctl("--pid", str(p.pid), "stop", env=env)
    finally:
        p.kill()
        p.wait()
    assert code == 1 and "no server's control socket" in err, (code, out, err)
    assert "neither root nor this user" in err
    assert pid_code == 1 and "neither root nor this user" in pid_err
    assert not os.path.exists(os.path.join(shared_dir, "asked"))  # it was never asked


@pytest.mark.skipif(os.geteuid() != 0, reason="planting a socket as another user needs root")
def test_ctl_does_not_talk_to_a_socket_named_for_another_users_process(shared_dir):
    """The socket file may be root's while the PID in its name is another user's process
    (a file left behind, its PID taken since): only a process of root's or the caller's is
    believed to be the server."""
    sleeper = subprocess.Popen(["sleep", "600"], preexec_fn=as_nobody)
    p, path = fake_server(shared_dir, os.path.join(shared_dir, f"sluicegate-{sleeper.pid}.ctl"))
    try:
        code, _, err = ctl("stop", env={"XDG_RUNTIME_DIR": shared_dir})
    finally:
        for proc in (p, sleeper):
            proc.kill()
            proc.wait()
    assert code == 1 and f"process {sleeper.pid} runs as uid" in err, err
    assert not os.path.exists(os.path.join(shared_dir, "asked"))


@pytest.mark.parametrize("command", [["status"], ["requests", "--stacks"], ["reload"],
                                     ["reopen-logs"]])
def test_ctl_prints_no_terminal_escape_a_server_sent(tmp_path, command):
    """ctl printed the server's answers raw: an answer (a request path a client chose, or a
    socket's owner) put escape sequences on the caller's terminal. They are shown escaped."""
    p, path = fake_server(str(tmp_path), str(tmp_path / "sg.ctl"))
    try:
        code, out, err = ctl("--socket", path, *command)
    finally:
        p.kill()
        p.wait()
    shown = out + err
    assert shown.strip(), (code, out, err)
    for c in shown:
        assert c.isprintable() or c == "\n", (repr(c), shown)
    assert "\\x1b]0;owned\\x07\\x1b[2J\\x9b31m" in shown


def test_a_workers_change_past_the_bound_is_refused_in_one_line(start_server, tmp_path):
    """`ctl workers -100000000000000000000` made the master's control thread queue that many
    signals (a loop without end, a log line each); a huge +N would fork N workers. Past 1024
    (the most workers a master runs) it is refused, by the client and by the server."""
    sock_path = str(tmp_path / "sg.ctl")
    srv = start_server("workers", "--workers", "2", "--control-socket", sock_path)
    code, out, err = ctl("--socket", sock_path, "workers", "-100000000000000000000")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "at most 1024" in err
    for change in (-10**20, 10**20, 1025, 1023):  # what another client may send
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(30)
            s.connect(sock_path)
            s.sendall(json.dumps({"command": "workers", "change": change}).encode() + b"\n")
            answer = json.loads(s.makefile("rb").readline())
        assert answer["ok"] is False and "1024" in answer["error"], (change, answer)
    assert ctl_json(sock_path, "status")["master"]["workers"] == 2
    assert srv.alive() and "SIGTT" not in srv.log_text()  # not one TTIN or TTOU queued


def ask(sock_path, command):
    """One command over a plain control connection, in this process; its answer."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(60)
        s.connect(sock_path)
        s.sendall(json.dumps({"command": command}).encode() + b"\n")
        return json.loads(s.makefile("rb").readline())


def dribbling_client(sock_path):
    """A control client that sends part of a command, then a space a second and never the
    newline; (its socket, the event that stops it)."""
    slow = socket.socket(socket.AF_UNIX)
    slow.connect(sock_path)
    slow.sendall(b'{"command": "status"')
    stop = threading.Event()

    def dribble():
        while not stop.wait(1.0):
            try:
                slow.sendall(b" ")
            except OSError:
                return

    threading.Thread(target=dribble, daemon=True).start()
    return slow, stop


def still_open(sock):
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    finally:
        sock.setblocking(True)


def test_a_slow_control_client_holds_only_itself(start_server, tmp_path):
    """One control client sending a byte now and then held the control socket for everyone
    (one client at a time, and a timeout per byte rather than per command): now others are
    answered while it dribbles, and it is cut off at its deadline, with the end of the stream.
    The other client is this process (a `sluicegate ctl` process took over the slow one's 5 s
    to start on a loaded machine, and the slow one was rightly cut off first); on a machine too
    slow even for that, a slow client is tried again, and a server that made the others wait
    for the slow one still fails every try."""
    sock_path = str(tmp_path / "sg.ctl")
    srv = start_server("workers", "--workers", "1", "--control-socket", sock_path)
    for _ in range(3):
        slow, stop = dribbling_client(sock_path)
        connected = time.monotonic()
        try:
            answer = ask(sock_path, "status")  # answered while the slow one is connected
            held = still_open(slow)
            inconclusive = not held and \
                time.monotonic() - connected >= control_server.CLIENT_TIMEOUT_S
            if inconclusive:  # the slow one's deadline came first: this machine was too slow
                continue
            assert held, "the slow client was closed before another was answered"
            slow.settimeout(30)
            # ConnectionResetError: closed with the last space unread (`_hang_up`).
            wait_for(lambda: slow.recv(4096) == b"", "the dribbling client to be closed", 30)
            break
        finally:
            stop.set()
            slow.close()
    else:
        pytest.fail("the other client was never answered before the slow one's deadline")
    assert answer["master"]["pid"] == srv.pid


def test_a_client_cut_off_with_bytes_unread_sees_the_answer_and_an_end_not_a_reset(
        start_server, tmp_path):
    """The control server closed a client with bytes it had not read (a command past its
    4,096-byte limit; a dribbling client's byte that came just before its deadline): the kernel
    then resets the connection, and the client read ECONNRESET where it should read the end
    of the stream. It stops the client's sending and reads what is left before it closes."""
    sock_path = str(tmp_path / "sg.ctl")
    start_server("workers", "--workers", "1", "--control-socket", sock_path)
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(sock_path)
        s.sendall(b" " * 65536)  # no newline: past the limit, the rest is never read
        got = b""
        while True:
            chunk = s.recv(4096)  # ConnectionResetError here was the defect
            if not chunk:
                break
            got += chunk
    answer = json.loads(got)
    assert answer["ok"] is False and "bad command" in answer["error"], answer
