"""HTTP/2's inline path (src/server/drive.rs, the one HTTP/1.1 takes too): while the scheduler
is in inline mode, the thread that drives the HTTP/2 connections runs the streams' app calls
itself, a batch per GIL take, and a call that blocks loses that role to a new thread within a tick or two. Each test
starts a private server, so that the mode is inline at its first stream. Real sockets, the
`h2` library as the client (tests/h2_client.py); overlap is shown with gates, never timing.
"""

from __future__ import annotations

import json
import os
import uuid

from tests.h2_client import H2Client


def log_lines(srv) -> list:
    return [json.loads(line) for line in srv.stdout_text().splitlines() if line.startswith("{")]


def test_fast_streams_run_inline_each_with_its_own_answer(start_server):
    srv = start_server("http2", "--access-log", "-", "--access-log-format", "json")
    conns = [H2Client(srv.port, timeout=20) for _ in range(3)]
    try:
        sent = {}
        for k, c in enumerate(conns):
            # All at once on each connection: the server reads them in one go and runs them
            # as batches.
            sent[k] = [(c.request("GET", f"/q?c={k}&i={i}"), f"c={k}&i={i}") for i in range(40)]
        for k, c in enumerate(conns):
            rs = c.responses([sid for sid, _ in sent[k]])
            assert [(r.status, bytes(r.body).decode()) for r in rs] == \
                [(200, want) for _, want in sent[k]]
            assert all(r.header(b"content-length") == str(len(w)).encode()
                       for r, (_, w) in zip(rs, sent[k]))
    finally:
        for c in conns:
            c.close()
    srv.stop()
    lines = [x for x in log_lines(srv) if x.get("protocol") == "HTTP/2"]
    assert len(lines) == 120
    # Nothing blocked: the calls ran on the HTTP/2 thread, not the pool.
    inline = sum(1 for x in lines if x["scheduler"] == "inline")
    assert inline >= 100, [x["scheduler"] for x in lines]


def test_a_blocking_stream_holds_no_fast_stream_on_its_connection_or_another(start_server):
    srv = start_server("http2")
    gate = uuid.uuid4().hex
    # Under the gate's own bound (15 s): a blocked HTTP/2 thread would fail the reads below,
    # not merely slow them.
    a = H2Client(srv.port, timeout=5)
    b = H2Client(srv.port, timeout=5)
    try:
        # The first stream runs inline (the mode is inline at the start) and blocks.
        stuck = a.request("GET", f"/gate?name={gate}")
        srv.wait_marks("entered", 1)
        # Its batch is taken over: the connections are driven on by another thread.
        same = a.get("/q?same")
        other = b.get("/q?other")
        more = [b.request("GET", f"/q?n={i}") for i in range(20)]
        assert [bytes(r.body) for r in b.responses(more)] == \
            [f"n={i}".encode() for i in range(20)]
        srv.open_gate(gate)
        through = a.responses([stuck])[0]
    finally:
        a.close()
        b.close()
    assert (same.status, bytes(same.body)) == (200, b"same")
    assert (other.status, bytes(other.body)) == (200, b"other")
    assert (through.status, bytes(through.body)) == (200, b"through the gate")


def test_inline_stream_errors_are_500_and_close_is_called(start_server):
    srv = start_server("http2")
    ok_token, fail_token = uuid.uuid4().hex, uuid.uuid4().hex
    c = H2Client(srv.port)
    try:
        boom, failing, ok, hello = c.responses([
            c.request("GET", "/boom"),
            c.request("GET", f"/closing?token={fail_token}&fail=1"),
            c.request("GET", f"/closing?token={ok_token}"),
            c.request("GET", "/"),
        ])
        again = c.get("/")
    finally:
        c.close()
    assert boom.status == 500
    assert failing.status == 500
    assert (ok.status, bytes(ok.body)) == (200, b"closing")
    assert (hello.status, bytes(hello.body)) == (200, b"Hello, World!")
    assert again.status == 200 and c.goaway() is None
    srv.wait_marks("closed", 2)
    assert sorted(srv.marks("closed")) == sorted([ok_token, fail_token])


def test_an_inline_answer_larger_than_the_window_hands_the_connections_on(start_server):
    # The client's window (64 KiB, the h2 library's default) runs out: the inline call must
    # wait for WINDOW_UPDATE frames, which only the thread driving the connections reads, so
    # it hands that role on first (never a deadlock until --write-timeout).
    srv = start_server("http2", "--write-timeout", "30")
    c = H2Client(srv.port, timeout=20)
    try:
        big, small = c.responses([c.request("GET", "/big?n=1000000"), c.request("GET", "/q?x")])
        after = c.get("/q?after")
    finally:
        c.close()
    assert big.status == 200 and len(big.body) == 1_000_000
    assert bytes(small.body) == b"x"
    assert bytes(after.body) == b"after"


def test_health_path_over_h2_while_an_inline_stream_holds_the_gil_in_c(start_server):
    # The first stream runs inline and blocks in one C call that keeps the GIL
    # (tests/apps/gil_held.py): its batch is taken over, and the new driving thread must serve
    # without the GIL (the health path), sending app streams to the pool meanwhile.
    srv = start_server("gil_held", "--health-path", "/healthz")
    fifo = srv.state_path("hold-fifo")
    os.mkfifo(fifo)
    a = H2Client(srv.port, timeout=60)
    b = H2Client(srv.port, timeout=10)
    try:
        held = a.request("GET", "/hold")
        srv.wait_marks("hold-started", 1)
        assert b.get("/healthz").status == 200
        later = b.request("GET", "/hello")
        assert b.get("/healthz").status == 200
        assert srv.marks("hold-finished") == [], "the C call was still holding the GIL"
    finally:
        with open(fifo, "wb") as f:  # the app's own read end is open: this does not block
            f.write(b"x")
    try:
        assert bytes(a.responses([held])[0].body) == b"released"
        assert bytes(b.responses([later])[0].body) == b"hello"
    finally:
        a.close()
        b.close()


def http1(port: int):
    """A kept HTTP/1.1 connection to the server."""
    import http.client
    return http.client.HTTPConnection("127.0.0.1", port, timeout=20)


def http1_get(conn, path: str) -> tuple:
    conn.request("GET", path)
    r = conn.getresponse()
    return r.status, r.read()


def test_http1_requests_and_http2_streams_take_one_inline_path(start_server):
    """Fast calls of both protocols, interleaved on one server, each get their own answer and
    run inline on the loop's thread (one path hands out a request or a stream alike)."""
    srv = start_server("http2", "--access-log", "-", "--access-log-format", "json")
    h2c = H2Client(srv.port, timeout=20)
    h1c = http1(srv.port)
    try:
        for i in range(30):
            sids = [(h2c.request("GET", f"/q?s={i}&k={k}"), f"s={i}&k={k}") for k in range(3)]
            assert http1_get(h1c, f"/q?h={i}") == (200, f"h={i}".encode())
            rs = h2c.responses([sid for sid, _ in sids])
            assert [(r.status, bytes(r.body).decode()) for r in rs] == [(200, w) for _, w in sids]
    finally:
        h2c.close()
        h1c.close()
    srv.stop()
    lines = log_lines(srv)
    by_protocol = {}
    for x in lines:
        by_protocol.setdefault(x.get("protocol"), []).append(x["scheduler"])
    assert len(by_protocol["HTTP/2"]) == 90 and len(by_protocol["HTTP/1.1"]) == 30
    for protocol, schedulers in by_protocol.items():
        assert schedulers.count("inline") >= 0.8 * len(schedulers), (protocol, schedulers)


def test_an_http1_call_blocked_inline_is_taken_over_and_http2_streams_go_on(start_server):
    """An HTTP/1.1 call that blocks on the loop's thread loses the loop to another thread,
    which serves HTTP/2 streams meanwhile: one watchdog and one hand-over for both."""
    srv = start_server("http2")
    gate = uuid.uuid4().hex
    stuck = http1(srv.port)
    c = H2Client(srv.port, timeout=5)
    try:
        stuck.request("GET", f"/gate?name={gate}")
        srv.wait_marks("entered", 1)
        more = [c.request("GET", f"/q?n={i}") for i in range(20)]
        assert [bytes(r.body) for r in c.responses(more)] == \
            [f"n={i}".encode() for i in range(20)]
        srv.open_gate(gate)
        r = stuck.getresponse()
        assert (r.status, r.read()) == (200, b"through the gate")
    finally:
        stuck.close()
        c.close()
