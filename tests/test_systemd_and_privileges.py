"""systemd and Unix operations, with the real tools: socket activation by
Debian's `systemd-socket-activate`, `sd_notify` messages read from a datagram socket the test
owns as `NOTIFY_SOCKET`, the user switch read back from `/proc`, unix socket permissions, and
nginx (Debian's, workers running as `www-data`) reaching a socket created `mode=660,
group=www-data`, with the control that it cannot without them.
"""

import grp
import http.client
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import struct
import sys
import tempfile

import pytest

from tests.conftest import ROOT
from tests.helpers import unless_refused, wait_for

ACTIVATE = shutil.which("systemd-socket-activate")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
IS_ROOT = os.geteuid() == 0


def _others_can_read(path):
    """Whether a user with no particular rights can read `path` (every directory above it
    searchable by others, the file readable by others)."""
    path = os.path.abspath(path)
    if not os.stat(path).st_mode & 0o004:
        return False
    parent = os.path.dirname(path)
    while True:
        if not os.stat(parent).st_mode & 0o001:
            return False
        if parent == os.path.dirname(parent):
            return True
        parent = os.path.dirname(parent)


# After the switch the server imports the app (and the core) as `nobody`.
NOBODY_CAN_READ = all(_others_can_read(p) for p in (
    os.path.join(ROOT, "tests", "apps", "whoami.py"),
    os.path.join(ROOT, "python", "sluicegate", "__init__.py")))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path="/pid", timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("GET", path)
    r = c.getresponse()
    return r.status, r.read()


def proc_ids(pid):
    """(real uid, real gid) of a process, from /proc."""
    with open(f"/proc/{pid}/status") as f:
        text = f.read()
    uid = int(re.search(r"^Uid:\s+(\d+)", text, re.M).group(1))
    gid = int(re.search(r"^Gid:\s+(\d+)", text, re.M).group(1))
    return uid, gid


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


@pytest.mark.skipif(ACTIVATE is None, reason="systemd-socket-activate not installed")
@pytest.mark.parametrize("options", [(), ("--workers", "2")])
def test_socket_activation_serves_on_the_socket_systemd_passed(start_server, options):
    port = free_port()
    cmd = [ACTIVATE, "-l", f"127.0.0.1:{port}", sys.executable, "-m", "sluicegate",
           "--bind", "127.0.0.1:0", *options, "tests.apps.workers:app"]
    # systemd-socket-activate listens first (refused until then) and starts the server on the
    # first connection: the readiness wait comes after that connection.
    srv = start_server(None, command=cmd, wait_ready=False)

    status, body = wait_for(lambda: unless_refused(lambda: get(port)),
                            "systemd-socket-activate's listening socket", timeout=30)
    assert status == 200
    # Every worker is ready once the master logs the address it was given.
    srv.wait_listening(timeout=30)
    assert ("tcp", ("127.0.0.1", port)) in srv.addresses, srv.log_text()
    served_by = int(body)
    expected = {srv.pid} if not options else set(children(srv.pid))
    assert served_by in expected
    srv.signal(signal.SIGTERM)
    srv.wait_exit(30)
    err = srv.log_text()
    assert "Using 1 socket(s) passed by systemd (LISTEN_FDS)" in err, err
    assert srv.proc.returncode == 0, err


class NotifySocket:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sg-notify-")
        self.path = os.path.join(self.dir, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(30)
        self.messages = []

    def wait_for(self, field):
        """Messages until one with `field` (bounded by the socket timeout); returns it."""
        while True:
            msg = self.sock.recv(4096).decode()
            self.messages.append(msg)
            if field in msg.split("\n"):
                return msg

    def close(self):
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.mark.parametrize("options", [(), ("--workers", "2")])
def test_sd_notify_ready_reloading_stopping(start_server, options):
    notify = NotifySocket()
    try:
        srv = start_server("workers", *options, env={"NOTIFY_SOCKET": notify.path})
        ready = notify.wait_for("READY=1")
        assert "STATUS=serving" in ready
        if options:
            srv.signal(signal.SIGHUP)
            reloading = notify.wait_for("RELOADING=1")
            assert re.search(r"^MONOTONIC_USEC=\d+$", reloading, re.M)
            notify.wait_for("READY=1")
        srv.signal(signal.SIGTERM)
        notify.wait_for("STOPPING=1")
        assert srv.wait_exit() == 0
        # Only the master speaks: one READY at start (and one after the reload), not one per worker.
        readies = sum("READY=1" in m.split("\n") for m in notify.messages)
        assert readies == (2 if options else 1), notify.messages
    finally:
        notify.close()


@pytest.mark.skipif(not IS_ROOT or not NOBODY_CAN_READ,
                    reason="switching user needs root, and a work tree that nobody may read")
@pytest.mark.parametrize("options", [(), ("--workers", "2"), ("--workers", "2", "--preload")])
def test_user_and_group_are_dropped_before_the_app_runs(start_server, options):
    nobody = pwd.getpwnam("nobody")
    nogroup = grp.getgrnam("nogroup")
    srv = start_server("whoami", "--user", "nobody", "--group", "nogroup", *options)
    status, body = get(srv.port)
    assert status == 200
    assert proc_ids(int(body)) == (nobody.pw_uid, nogroup.gr_gid)
    # The process that imports the app switches; a master that does not (no --preload) keeps
    # the starting user, as gunicorn's does, so that USR2 can start a new master.
    imports_the_app = "--workers" not in options or "--preload" in options
    master = (nobody.pw_uid, nogroup.gr_gid) if imports_the_app else (0, 0)
    assert proc_ids(srv.pid) == master


def test_umask_applies_to_the_unix_socket_file(start_server, tmp_path):
    path = str(tmp_path / "u.sock")
    start_server("workers", "--umask", "077", binds=[f"unix:{path}"])
    assert os.stat(path).st_mode & 0o777 == 0o700


@pytest.mark.skipif(not IS_ROOT, reason="changing a socket's group needs root")
def test_unix_socket_mode_and_group(start_server, tmp_path):
    path = str(tmp_path / "g.sock")
    start_server("workers", binds=[f"unix:{path};mode=660;group=www-data"])
    st = os.stat(path)
    assert st.st_mode & 0o777 == 0o660
    assert st.st_gid == grp.getgrnam("www-data").gr_gid


def test_bad_unix_socket_settings_are_one_line_errors():
    r = subprocess.run([sys.executable, "-m", "sluicegate", "--bind", "unix:/tmp/x.sock;mode=999",
                        "tests.apps.workers:app"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().startswith("sluicegate: error:") and "mode=999" in r.stderr


def _nginx(tmp_path, sock_path):
    """nginx (master as root, workers as www-data) proxying to the unix socket; its port."""
    port = free_port()
    conf = tmp_path / "nginx.conf"
    conf.write_text(f"""
user www-data;
worker_processes 1;
daemon off;
pid {tmp_path}/nginx.pid;
error_log {tmp_path}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {tmp_path}/body;
    proxy_temp_path {tmp_path}/proxy;
    fastcgi_temp_path {tmp_path}/fastcgi;
    uwsgi_temp_path {tmp_path}/uwsgi;
    scgi_temp_path {tmp_path}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{ proxy_pass http://unix:{sock_path}:; }}
    }}
}}
""")
    proc = subprocess.Popen([NGINX, "-c", str(conf)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)

    def accepts():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    try:
        wait_for(accepts, "nginx's listening socket", timeout=10)
    except AssertionError:
        proc.kill()
        raise
    return proc, port


@pytest.mark.skipif(not IS_ROOT or not os.path.exists(NGINX), reason="needs root and nginx")
@pytest.mark.parametrize("settings, expected", [(";mode=660;group=www-data", 200), ("", 502)])
def test_nginx_as_www_data_reaches_a_socket_made_for_it(start_server, tmp_path, settings,
                                                        expected):
    # A directory www-data may traverse, as /run/app would be.
    sock_dir = tempfile.mkdtemp(prefix="sg-nginx-")
    os.chmod(sock_dir, 0o755)
    path = os.path.join(sock_dir, "app.sock")
    start_server("workers", "--umask", "077", binds=[f"unix:{path}{settings}"])
    proc, port = _nginx(tmp_path, path)
    try:
        status, _ = get(port)
        assert status == expected
    finally:
        proc.send_signal(signal.SIGQUIT)
        proc.wait(15)
        shutil.rmtree(sock_dir, ignore_errors=True)


def _senders_messages(sock, until, timeout=30):
    """(sender pid, fields) of the datagrams on `sock` (SO_PASSCRED set) until one whose fields
    satisfy `until`; all of them, in order."""
    got = []
    sock.settimeout(timeout)
    creds_size = socket.CMSG_SPACE(struct.calcsize("3i"))
    while True:
        data, anc, _, _ = sock.recvmsg(4096, creds_size)
        pid = next(struct.unpack("3i", d)[0] for level, kind, d in anc
                   if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS)
        fields = data.decode().split("\n")
        got.append((pid, fields))
        if until(pid, fields):
            return got


def test_usr2s_new_master_names_itself_mainpid_and_the_old_one_does_not_say_stopping(
        start_server, tmp_path):
    """Regression: under `Type=notify`, USR2's new master said `READY=1` from a pid systemd did
    not know and never `MAINPID=`, and the old master said `STOPPING=1` when the operator
    stopped it: systemd would take the service for stopped and stop the new master with it.
    The new master now says `MAINPID=<its pid>` with its `READY=1` (sd_notify(3)); the old one,
    stopped while the new one serves, says no `STOPPING=1`. Read from a real datagram socket,
    each message's sender known from its credentials."""
    path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    sock.bind(path)
    new_master = None
    try:
        srv = start_server("workers", "--workers", "1", env={"NOTIFY_SOCKET": path})
        first = _senders_messages(sock, lambda pid, f: "READY=1" in f)
        assert first[-1][0] == srv.pid
        assert not any(f.startswith("MAINPID=") for _, fields in first for f in fields), first
        srv.signal(signal.SIGUSR2)
        upgrade = _senders_messages(sock, lambda pid, f: "READY=1" in f and pid != srv.pid)
        new_master, fields = upgrade[-1]
        assert f"MAINPID={new_master}" in fields, upgrade
        assert new_master in children(srv.pid)  # the new master, started by the old one
        assert get(srv.port)[0] == 200
        srv.signal(signal.SIGTERM)  # the operator stops the old master
        assert srv.wait_exit() == 0, srv.log_text()
        # Whatever the old master said after the new one's READY=1, not STOPPING=1. The new
        # master's own stop then says it: a marker that every earlier datagram was read.
        os.kill(new_master, signal.SIGTERM)
        rest = _senders_messages(sock, lambda pid, f: pid == new_master and "STOPPING=1" in f)
        assert not any("STOPPING=1" in fields for pid, fields in rest if pid == srv.pid), rest
        wait_for(lambda: not os.path.exists(f"/proc/{new_master}") or _zombie(new_master),
                 "the new master to end")
        new_master = None
    finally:
        if new_master is not None:
            os.kill(new_master, signal.SIGKILL)
        sock.close()


def _zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
