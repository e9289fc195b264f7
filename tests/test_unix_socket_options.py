"""Unix listeners as uWSGI configures them (listeners.py): --socket-mode and --socket-owner
(chmod-socket, chown-socket) for every unix socket file, abstract sockets (`unix:@NAME`,
`uwsgi:unix:@NAME`), and --vacuum (the socket files and the pid file gone at exit).
"""

from __future__ import annotations

import os
import pwd
import socket
import stat
import struct
import uuid

import pytest


def _uwsgi_packet(path: str = "/pid") -> bytes:
    """One request in the uwsgi protocol, as nginx's uwsgi_pass sends it."""
    pairs = {"REQUEST_METHOD": "GET", "REQUEST_URI": path, "PATH_INFO": path,
             "QUERY_STRING": "", "SERVER_PROTOCOL": "HTTP/1.1", "SERVER_NAME": "x",
             "SERVER_PORT": "80", "HTTP_HOST": "x"}
    body = b"".join(struct.pack("<H", len(k)) + k.encode() + struct.pack("<H", len(v))
                    + v.encode() for k, v in pairs.items())
    return struct.pack("<BHB", 0, len(body), 0) + body


def _ask(address: str, data: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(address)
        s.sendall(data)
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def test_socket_mode_sets_the_permissions_of_unix_socket_files(start_server, tmp_path):
    one, two = tmp_path / "one.sock", tmp_path / "two.sock"
    start_server("whoami", "--socket-mode", "606",
                 binds=[f"unix:{one}", f"unix:{two};mode=640"])
    assert stat.S_IMODE(os.stat(one).st_mode) == 0o606
    assert stat.S_IMODE(os.stat(two).st_mode) == 0o640  # its own setting wins


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file away needs root")
def test_socket_owner_gives_the_socket_file_to_a_user_and_group(start_server, tmp_path):
    path = tmp_path / "owned.sock"
    nobody = pwd.getpwnam("nobody")
    start_server("whoami", "--socket-owner", f"nobody:{nobody.pw_gid}", binds=[f"unix:{path}"])
    st = os.stat(path)
    assert (st.st_uid, st.st_gid) == (nobody.pw_uid, nobody.pw_gid)


def test_abstract_unix_sockets_serve_http_and_uwsgi(start_server):
    http_name, uwsgi_name = f"sg-{uuid.uuid4().hex}", f"sg-{uuid.uuid4().hex}"
    srv = start_server("whoami", binds=[f"unix:@{http_name}", f"uwsgi:unix:@{uwsgi_name}"])
    assert f"Listening at: unix:@{http_name}" in srv.log_text()
    answer = _ask("\0" + http_name, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(str(srv.pid).encode())
    answer = _ask("\0" + uwsgi_name, _uwsgi_packet())
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(str(srv.pid).encode())
    assert srv.stop() == 0
    with pytest.raises(ConnectionRefusedError):  # gone with the server, no file left behind
        _ask("\0" + http_name, b"")


def test_an_abstract_name_in_use_is_refused(start_server):
    name = f"sg-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX) as holder:
        holder.bind("\0" + name)
        holder.listen()
        srv = start_server("whoami", binds=[f"unix:@{name}"], wait_ready=False)
        assert srv.wait_exit() != 0
    assert f"cannot listen on unix:@{name}: address already in use" in srv.log_text()


def test_vacuum_leaves_no_socket_file_nor_pid_file(start_server, tmp_path):
    path, pid = tmp_path / "app.sock", tmp_path / "app.pid"
    srv = start_server("whoami", "--vacuum", "--workers", "2", "--pid", str(pid),
                       binds=[f"unix:{path}"])
    assert path.exists() and pid.exists()
    assert srv.stop() == 0
    assert not path.exists() and not pid.exists()
