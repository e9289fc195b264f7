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

from tests.test_workers import children, get, wait_until

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


def test_a_master_killed_with_sigkill_takes_its_workers_with_it(start_server):
    srv = start_server("workers", "--workers", "2")
    workers, port = children(srv.pid), srv.port
    assert get(port)[0] == 200
    os.kill(srv.pid, signal.SIGKILL)
    srv.wait_exit()
    try:
        wait_until(lambda: not any(running(p) for p in workers), "the workers to stop",
                   timeout=15)
    finally:
        for p in workers:  # orphans, if the test fails: they must not outlive it
            if running(p):
                os.kill(p, signal.SIGKILL)
    with socket.socket() as s:  # the port is free: a restart can bind it
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
