"""`--statsd-host` that cannot be reached at start, and prefixes and tags beyond ASCII: as in
gunicorn, the server starts and serves and the metrics are dropped (said once), and it sends
them once the receiver is there; a non-ASCII `--statsd-prefix` or `--dogstatsd-tags` goes out
as UTF-8, from the master and the workers alike. Real servers, real datagram sockets.
"""

from __future__ import annotations

import socket

import pytest

from tests.helpers import wait_for


def get(server, path="/"):
    r = server.request("GET", path)
    assert r.status == 200
    return r


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_a_statsd_host_that_does_not_resolve_does_not_stop_the_start(start_server, workers):
    """An unresolvable --statsd-host stopped the start: exit 1 with a Python traceback."""
    server = start_server("hello", "--statsd-host", "no-such-host.invalid:8125", *workers)
    for _ in range(3):
        get(server)
    log = server.log_text()
    assert "Traceback" not in log, log
    said = [line for line in log.splitlines() if "no-such-host.invalid" in line]
    assert len(said) == 1 and "dropped" in said[0], said
    assert server.alive()


def test_a_missing_statsd_unix_socket_is_reached_once_it_is_there(start_server, tmp_path):
    """A --statsd-host unix:PATH where nothing listened yet stopped the start (exit 1, a
    traceback); now the server starts, and the metrics flow once a receiver binds PATH."""
    path = str(tmp_path / "statsd.sock")
    server = start_server("hello", "--statsd-host", f"unix:{path}")
    get(server, "/before")
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
        return any(b"gunicorn.requests:1|c" in d for d in got)

    try:
        wait_for(arrived, "request metrics on the unix socket once it is bound", 30,
                 interval=0.2)
    finally:
        receiver.close()
    log = server.log_text()
    assert "Traceback" not in log and len([ln for ln in log.splitlines() if path in ln]) == 1


def test_non_ascii_prefix_and_tags_go_out_as_utf8(start_server):
    """A non-ASCII --statsd-prefix or --dogstatsd-tags crashed the master with
    UnicodeEncodeError after "Listening at" (its workers gauge was encoded as ASCII)."""
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(10)
    try:
        server = start_server("hello", "--workers", "2", "--statsd-host",
                              f"127.0.0.1:{receiver.getsockname()[1]}",
                              "--statsd-prefix", "café", "--dogstatsd-tags", "owner:zoë")
        get(server)
        lines = []
        while not (any("gunicorn.workers" in ln for ln in lines)
                   and any("gunicorn.requests" in ln for ln in lines)):
            lines += receiver.recv(65536).decode("utf-8").split("\n")
    finally:
        receiver.close()
    assert "café.gunicorn.workers:2|g|#owner:zoë" in lines, lines
    assert "café.gunicorn.requests:1|c|@1.0|#owner:zoë" in lines, lines
    get(server)
    assert server.alive() and "UnicodeEncodeError" not in server.log_text()
