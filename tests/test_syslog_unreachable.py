"""`--log-syslog` to a syslog socket that is not there: the server starts and serves, says so
once in one line on standard error, drops the syslog records meanwhile, and reaches the socket
once it appears. Real server, real unix datagram socket bound by the test.
"""

from __future__ import annotations

import socket

from tests.helpers import wait_for


def get(server, path):
    r = server.request("GET", path)
    assert r.status == 200
    return r


def test_a_missing_syslog_socket_is_said_once_and_reached_when_it_appears(start_server,
                                                                             tmp_path):
    """With --log-syslog to a missing socket, every record (each access line among them)
    wrote a 1.5 KB `--- Logging error ---` traceback to standard error."""
    path = str(tmp_path / "log.sock")
    server = start_server("hello", "--log-syslog", "--log-syslog-to", f"unix://{path}#dgram",
                          "--log-syslog-prefix", "shop")
    for i in range(20):
        get(server, f"/before-{i}")
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(path)
    receiver.setblocking(False)
    got = []

    def arrived():
        get(server, "/after")
        try:
            while True:
                got.append(receiver.recv(65536))
        except BlockingIOError:
            pass
        return any(b"gunicorn.shop.access:" in d and b"/after" in d for d in got)

    try:
        wait_for(arrived, "an access line on the syslog socket once it is there", 30,
                 interval=0.2)
    finally:
        receiver.close()
    # The "reached again" line is written to standard error after the record it announces.
    wait_for(lambda: "reached again" in server.log_text(), "the line saying syslog is back")
    log = server.log_text()
    assert "Logging error" not in log and "Traceback" not in log, log[-3000:]
    said = [line for line in log.splitlines() if path in line]
    assert len(said) == 2, said  # down once, back once
    assert "[WARNING] syslog at" in said[0] and "dropped" in said[0]
    assert "[INFO] syslog at" in said[1] and "reached again" in said[1]
    assert server.alive()
