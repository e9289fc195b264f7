"""`--timeout` ends a stuck call, not only answers it: past the deadline the client gets its
504, and `sluicegate.RequestTimeout` is raised inside the call, so that the app unwinds (its
`finally:` runs), its thread takes the calls queued behind it, and no call is left computing.
A call inside C gets the exception when that C call returns, and the log says why it lingers.
The app is tests/apps/stuck_loop.py; each call records how it ended, so nothing here depends
on timing but the short `--timeout` itself.
"""

import os
import threading

from tests.h2_client import H2Client
from tests.helpers import status_of

CALLS = 20


def get_status(port: int, path: str) -> int:
    return status_of(port, path, timeout=150)  # the calls wait for --timeout in turn


def test_twenty_stuck_loops_are_each_answered_504_and_all_end(start_server):
    """Before, the first stuck call kept its thread for its whole 60 s and the calls queued
    behind it waited with it: one 504 in 45 s, and loops computing after their clients left."""
    srv = start_server("stuck_loop", "--timeout", "1")
    statuses = {}

    def call(i):
        statuses[i] = get_status(srv.port, f"/loop?n={i}")

    clients = [threading.Thread(target=call, args=(i,)) for i in range(CALLS)]
    for t in clients:
        t.start()
    for t in clients:
        t.join(150)
    assert statuses == {i: 504 for i in range(CALLS)}
    # Every loop ended, by the exception the server raised in it.
    ended = srv.wait_marks("loop-ended", count=CALLS, timeout=30)
    assert sorted(ended, key=int) == [str(i) for i in range(CALLS)]
    how = srv.marks("loop-how")
    assert len(how) == CALLS and all(h.endswith(" sluicegate.RequestTimeout") for h in how), how
    srv.wait_log(r"GET /loop\?n=\d+: ended by sluicegate\.RequestTimeout \(--timeout\)")
    # The threads are free: the server answers at once.
    assert get_status(srv.port, "/") == 200


def test_a_call_inside_c_is_ended_when_it_comes_back_and_the_log_says_why(start_server):
    srv = start_server("stuck_loop", "--timeout", "1")
    assert get_status(srv.port, "/fifo?n=c1") == 504
    srv.wait_log(r"GET /fifo\?n=c1 HTTP/1\.1: not ended \d+\.\ds after "
                 r"sluicegate\.RequestTimeout was raised in it \(--timeout\): it is in C code")
    assert "in wait_in_c" in srv.log_text(), "the lingering call's stack is logged"
    assert srv.marks("fifo-ended") == [], "still in C"
    # The C call returns: the exception fires, and the call ends instead of computing on.
    os.close(os.open(srv.state_path("fifo-c1"), os.O_WRONLY))
    srv.wait_marks("fifo-ended", prefix="c1", timeout=30)
    srv.wait_log(r"GET /fifo\?n=c1: ended by sluicegate\.RequestTimeout")
    assert get_status(srv.port, "/") == 200


def test_except_exception_in_the_app_lets_the_timeout_through(start_server):
    srv = start_server("stuck_loop", "--timeout", "0.5")
    assert get_status(srv.port, "/swallow?n=x1") == 504
    srv.wait_marks("swallow-ended", prefix="x1", timeout=30)
    assert srv.marks("swallowed") == [], "RequestTimeout is no Exception"


def test_a_stuck_http2_stream_is_ended_too(start_server):
    srv = start_server("stuck_loop", "--timeout", "1")
    c = H2Client(srv.port, timeout=60)
    try:
        stuck = c.request("GET", "/loop?n=h1")
        assert c.responses([stuck])[0].status == 504
        srv.wait_marks("loop-ended", prefix="h1", timeout=30)
        assert c.get("/").status == 200, "the connection and the thread serve on"
    finally:
        c.close()
    assert srv.marks("loop-how", prefix="h1") == ["h1 sluicegate.RequestTimeout"]
