"""Blocking apps do not stop the server.

The ``blocking`` app's ``/slow`` requests block on a gate the test opens, so "while they are in
flight" is exact, not a guess about timing: the test waits until every slow call has started
(recorded by the app), checks what must happen meanwhile, then opens the gate. Orderings are
asserted, never durations.

Covers: 20 concurrent blocked calls and a fast request answered while they are all still
blocked; idle keep-alive connections holding no thread (50 idle connections, then
--threads 1:4 still runs 4 blocked calls at once); a blocked call taken over after 3,000 quick
calls have let the watchdog slow its looks down, and after calls that computed across several
of its looks and ended by themselves. (A fixed sleep would make these tests depend
on timing; the gate makes them depend only on order.)
"""

import threading
import time
import uuid


from tests.http_util import Conn, request_bytes


class Recorder:
    """Records the order in which responses complete."""

    def __init__(self):
        self.lock = threading.Lock()
        self.order = []
        self.errors = []

    def fetch(self, port, target, label):
        try:
            with Conn.open(port) as c:
                c.send(request_bytes("GET", target))
                resp = c.read_response(timeout=30)
            with self.lock:
                self.order.append((label, resp.status, resp.body))
        except BaseException as e:  # reported by the test, not lost in the thread
            with self.lock:
                self.errors.append(f"{label}: {e!r}")

    def start(self, port, target, label) -> threading.Thread:
        t = threading.Thread(target=self.fetch, args=(port, target, label), daemon=True)
        t.start()
        return t


def test_fast_request_completes_while_20_blocking_calls_are_in_flight(servers):
    srv = servers.get("blocking", "--threads", "1:64")
    tok, gate = uuid.uuid4().hex, uuid.uuid4().hex
    rec = Recorder()
    threads = [rec.start(srv.port, f"/slow?token={tok}-{i}&gate={gate}", f"slow{i}")
               for i in range(20)]
    try:
        # All 20 app calls are running at once (each blocks until the gate opens).
        srv.wait_marks("started", count=20, prefix=tok)
        rec.fetch(srv.port, "/fast", "fast")
        assert not rec.errors, rec.errors
        assert [label for label, _, _ in rec.order] == ["fast"], \
            "the fast request did not complete while the slow ones were blocked"
    finally:
        srv.open_gate(gate)
        for t in threads:
            t.join(30)
    assert not rec.errors, rec.errors
    assert len(rec.order) == 21
    assert rec.order[0][0] == "fast"
    for label, status, body in rec.order[1:]:
        assert status == 200 and body.endswith(b"gate=open"), (label, status, body)


def test_idle_keepalive_connections_hold_no_thread(start_server):
    srv = start_server("blocking", "--threads", "1:4", "--keepalive-timeout", "60")
    idle = []
    try:
        for _ in range(50):
            c = Conn.open(srv.port)
            c.send(request_bytes("GET", "/fast"))
            assert c.read_response().body == b"fast"
            idle.append(c)
        tok, gate = uuid.uuid4().hex, uuid.uuid4().hex
        rec = Recorder()
        threads = [rec.start(srv.port, f"/slow?token={tok}-{i}&gate={gate}", f"slow{i}")
                   for i in range(4)]
        try:
            # With at most 4 threads, all 4 calls can only be running at once if none of the
            # 50 idle connections holds a thread.
            srv.wait_marks("started", count=4, prefix=tok)
            threads.append(rec.start(srv.port, "/fast", "fast"))
        finally:
            srv.open_gate(gate)
            for t in threads:
                t.join(30)
        assert not rec.errors, rec.errors
        assert sorted(label for label, _, _ in rec.order) == \
            ["fast", "slow0", "slow1", "slow2", "slow3"]
        assert all(status == 200 for _, status, _ in rec.order)
        # The idle connections are still usable.
        for c in idle[:10]:
            c.send(request_bytes("GET", "/fast"))
            assert c.read_response().body == b"fast"
    finally:
        for c in idle:
            c.close()


def assert_blocking_call_is_taken_over(srv) -> None:
    """A call that blocks (on a gate) does not hold the loop: a fast request is answered while
    it blocks, then the slow one completes."""
    tok, gate = uuid.uuid4().hex, uuid.uuid4().hex
    rec = Recorder()
    slow = rec.start(srv.port, f"/slow?token={tok}&gate={gate}", "slow")
    try:
        srv.wait_marks("started", count=1, prefix=tok)
        rec.fetch(srv.port, "/fast", "fast")
        assert not rec.errors, rec.errors
        assert [label for label, _, _ in rec.order] == ["fast"], \
            "the fast request waited for the blocked call"
    finally:
        srv.open_gate(gate)
        slow.join(30)
    assert not rec.errors, rec.errors
    assert [label for label, _, _ in rec.order] == ["fast", "slow"]


def test_blocking_call_after_sparse_calls_is_still_taken_over(start_server):
    # Quick calls 20 ms apart: rarer than one per two looks at the watchdog's longest tick, so
    # it stops ticking and sleeps between calls (sparse mode: each call wakes it). A call that
    # then blocks must still be taken over, so a fast request is answered while it blocks.
    srv = start_server("blocking")
    with Conn.open(srv.port) as c:
        for _ in range(40):
            c.send(request_bytes("GET", "/fast"))
            assert c.read_response().body == b"fast"
            time.sleep(0.02)
    assert_blocking_call_is_taken_over(srv)


def test_blocking_call_after_computing_calls_that_ended_by_themselves_is_still_taken_over(
        start_server):
    # Quick calls back the watchdog off to its longest tick; calls that compute across several
    # of its looks (20 ms each, nothing waiting behind them) end by themselves, and the watchdog
    # goes back to its long tick. A call that then blocks must still be taken over, so a fast
    # request is answered while it blocks.
    srv = start_server("blocking")
    with Conn.open(srv.port) as c:
        for i in range(3000):
            c.send(request_bytes("GET", "/spin?ms=20" if i % 1000 == 999 else "/fast"))
            assert c.read_response().body in (b"fast", b"spun")
    assert_blocking_call_is_taken_over(srv)


def test_blocking_call_after_a_long_calm_spell_is_still_taken_over(start_server):
    # Thousands of quick inline calls let the watchdog back off to its longest tick; a call that
    # then blocks must still be taken over, so a fast request is answered while it blocks.
    srv = start_server("blocking")
    with Conn.open(srv.port) as c:
        for _ in range(3000):
            c.send(request_bytes("GET", "/fast"))
            assert c.read_response().body == b"fast"
    assert_blocking_call_is_taken_over(srv)
