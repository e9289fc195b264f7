"""A busy app must not starve short requests, health checks or static files.

Calls that compute in pure Python used to run inline one after another on the event loop's
thread, so a short request (or a load balancer's check) that arrived behind sixteen of them
waited for all sixteen. Now a call that has computed for a switch interval while other work
waits is taken over like a blocked one: the loop moves on, the call goes on as a pool call, and
the short request reaches the interpreter within a few switch intervals. The health path
(`--health-path`) and static files are answered by the loop itself, never by Python.

These tests assert the order in which requests complete and the server's own counters, not
wall-clock thresholds. (HAProxy in front of the same load: tests/test_haproxy.py.)
"""

import threading

import pytest

from tests.http_util import Conn, request_bytes

LONG_CALLS = 16
LONG_MS = 40  # each: well under the 50 ms wall-clock takeover of a call that computes alone


def _start_long_calls(srv, finished: list, lock: threading.Lock):
    """Send LONG_CALLS CPU-bound requests on their own connections; each thread appends its
    token to `finished` when its answer is complete."""
    def one(token: str) -> None:
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", f"/cpu?ms={LONG_MS}&token={token}"))
            resp = c.read_response()
        assert resp.body == f"cpu {token}".encode()
        with lock:
            finished.append(token)

    threads = [threading.Thread(target=one, args=(f"long{i}",)) for i in range(LONG_CALLS)]
    for t in threads:
        t.start()
    return threads


@pytest.mark.parametrize("probe,options,expect", [
    ("/hello", (), b"hello"),
    ("/healthz", ("--health-path", "/healthz"), b"OK\n"),
], ids=["app-route", "health-path"])
def test_a_short_request_overtakes_long_cpu_bound_calls(start_server, probe, options, expect):
    """Regression (eea04a9): a short request queued behind CPU-bound inline calls was answered
    only after all of them (FIFO on the loop's thread), so checks missed their timeout."""
    srv = start_server("busy", *options)
    finished: list = []
    lock = threading.Lock()
    threads = _start_long_calls(srv, finished, lock)
    try:
        srv.wait_marks("cpu-started", 1)  # the first long call holds the interpreter
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", probe))
            resp = c.read_response()
        with lock:
            done_before = len(finished)
        assert resp.status == 200 and resp.body == expect
        assert done_before <= LONG_CALLS // 2, (
            f"the short request was answered after {done_before} of {LONG_CALLS} long calls")
    finally:
        for t in threads:
            t.join(30)
    assert len(finished) == LONG_CALLS, "every long call completes too"


def test_a_call_taken_over_for_computing_keeps_its_routes_next_calls_behind_it(start_server):
    """An inline call that computes while another request waits is taken over (the loop moves
    to another thread) and goes on outside the pool. It still holds the interpreter like a
    long pool call, so the pool counts it as one and marks its route long: the waiting call
    to the same route queues behind it, in the long class, instead of computing beside it.
    Two computing calls make every fast request wait for the GIL among both (measured on a
    fresh server, `bench.s12_startup`: probes of 30-190 ms, none over 30 ms after)."""
    srv = start_server("busy")
    results = {}

    def cpu(token: str, ms: int) -> None:
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", f"/cpu?ms={ms}&token={token}"))
            results[token] = c.read_response().body

    first = threading.Thread(target=cpu, args=("first", 300))
    first.start()
    srv.wait_marks("cpu-started", prefix="first")  # inline, on the loop's thread
    second = threading.Thread(target=cpu, args=("second", 20))
    second.start()
    with Conn.open(srv.port) as c:  # the loop serves on: the first call was taken over
        c.send(request_bytes("GET", "/hello"))
        assert c.read_response().body == b"hello"
    first.join(30)
    second.join(30)
    assert results == {"first": b"cpu first", "second": b"cpu second"}
    assert srv.marks("cpu-computing") == ["first 1", "second 1"], (
        "the second call computed beside the first")


def test_static_files_are_served_while_the_app_computes(start_server, tmp_path):
    (tmp_path / "f.txt").write_bytes(b"static while busy\n")
    srv = start_server("busy", "--static", f"/static={tmp_path}")
    finished: list = []
    lock = threading.Lock()
    threads = _start_long_calls(srv, finished, lock)
    try:
        srv.wait_marks("cpu-started", 1)
        with Conn.open(srv.port) as c:
            c.send(request_bytes("GET", "/static/f.txt"))
            resp = c.read_response()
        with lock:
            done_before = len(finished)
        assert resp.body == b"static while busy\n"
        assert done_before <= LONG_CALLS // 2
    finally:
        for t in threads:
            t.join(30)
