"""HTTP/2 under attack and on a bad day, over real sockets with the `h2` library as a raw client
(tests/h2_client.py): each test names what a hostile or unlucky client does and asserts what
would break if the defence went. Run the group alone with ``./dev test -k h2_attack`` (the
fault-suite rows for a stop that cuts streams and for a zero window are in
tests/faults/test_h2_attack_faults.py).

- streams that outlive ``--graceful-timeout`` are reset (RST_STREAM) after the GOAWAY, counted
  in the log, and the process exits without aborting;
- ``--limit-body`` holds for a body without a content-length: 413, the app never reads past it;
- the one Host check: ``:authority``, ``host`` and HTTP/1.1's Host refuse userinfo and spaces;
  a ``host`` that differs from ``:authority`` is malformed; CONNECT is refused; ``cookie``
  fields count toward ``--limit-headers``;
- a malformed field on one stream should reset that stream only (RFC 9113 §8.2.1); the `h2`
  crate ends the connection instead, so that test is an expected failure until it is fixed;
- a client that never opens its window holds no thread per stream.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import uuid

import h2.errors
import h2.events
import h2.settings
import pytest

from tests.h2_client import H2Client, Response
from tests.http_util import Conn

APP = "h2_attack"
CUT_CODES = (h2.errors.ErrorCodes.CANCEL, h2.errors.ErrorCodes.INTERNAL_ERROR)


def raw_client(port: int, **kw) -> H2Client:
    """A client whose library sends what it is given: no lower-casing, no checks."""
    c = H2Client(port, **kw)
    c.conn.config.validate_outbound_headers = False
    c.conn.config.normalize_outbound_headers = False
    c.conn.config.validate_inbound_headers = False
    return c


def send(c: H2Client, headers, end: bool = True) -> int:
    sid = c.conn.get_next_available_stream_id()
    c.conn.send_headers(sid, headers, end_stream=end)
    c.responses_by_id[sid] = Response()
    c.flush()
    return sid


def refused(r: Response) -> bool:
    """Answered 400 on its stream, or reset as malformed (a stream error, RFC 9113 §8.1.1)."""
    if r.headers:
        return r.status == 400
    return r.reset == h2.errors.ErrorCodes.PROTOCOL_ERROR


# --- a stop whose graceful time runs out ---------------------------------------------------------

@pytest.mark.parametrize("workers", [None, "1"], ids=["single-process", "workers"])
def test_h2_streams_past_the_graceful_timeout_are_reset_and_counted(start_server, workers):
    """Streams whose calls outlive --graceful-timeout used to get neither END_STREAM nor
    RST_STREAM (the client could not tell a cut answer from a whole one), and a single process
    aborted at exit (`Fatal Python error: Aborted`). Now each is reset after the GOAWAY, the
    stop's log line counts them, and the process exits as an HTTP/1.1 cut does."""
    opts = ["--graceful-timeout", "1"] + (["--workers", workers] if workers else [])
    srv = start_server(APP, *opts)
    c = H2Client(srv.port, timeout=30)
    tok = uuid.uuid4().hex
    try:
        silent = c.request("GET", f"/hold?name=s{tok}")
        partial = c.request("GET", f"/partial?name=p{tok}")
        srv.wait_marks("entered", 2)
        # The first block is in before the stop (the client library drops the frames that
        # share a read with the GOAWAY).
        while not c.responses_by_id[partial].body:
            assert c.receive_once()
        srv.signal(signal.SIGTERM)
        rs = c.responses([silent, partial])
    finally:
        c.close()
    assert c.goaway() is not None
    assert [r.reset for r in rs] == [h2.errors.ErrorCodes.CANCEL] * 2, rs
    assert bytes(rs[1].body) == b"first block\n"  # the DATA sent, then the reset
    code = srv.wait_exit(timeout=30)
    log = srv.log_text()
    assert "Fatal Python error" not in log and code >= 0, log[-3000:]
    assert "Shutdown cut 2 request(s)" in log, log[-3000:]
    if not workers:
        assert code == 1  # as an HTTP/1.1 request cut by the stop


# --- --limit-body without a content-length ----------------------------------------------------

def test_h2_body_without_length_past_limit_body_is_413(start_server):
    limit = 1024 * 1024
    srv = start_server(APP, "--limit-body", str(limit))
    c = H2Client(srv.port, timeout=30)
    try:
        r = c.responses([c.request("POST", "/read?step=65536", body=b"b" * (3 * limit))])[0]
        after = c.get("/")
    finally:
        c.close()
    assert r.status == 413, (r.status, bytes(r.body))
    read = [int(n) for n in srv.marks("read")]
    assert read and max(read) <= limit, read[-3:]
    assert srv.marks("read-error") == ["BodyError"]
    assert after.status == 200  # the connection goes on


def test_h2_body_within_limit_body_is_read_whole(start_server):
    srv = start_server(APP, "--limit-body", "100000")
    c = H2Client(srv.port)
    try:
        r = c.responses([c.request("POST", "/read?step=4096", body=b"b" * 100000)])[0]
    finally:
        c.close()
    assert (r.status, bytes(r.body)) == (200, b"100000")


# --- Host, :authority, CONNECT, cookies ---------------------------------------------------------

BAD_HOSTS = ["good.example@evil.example", "user:pw@example.org", "a b"]


@pytest.mark.parametrize("value", BAD_HOSTS)
def test_h2_authority_and_host_get_the_http11_host_check(servers, value):
    srv = servers.get(APP)
    c = raw_client(srv.port)
    try:
        as_authority = send(c, [(":method", "GET"), (":path", "/host"), (":scheme", "http"),
                                (":authority", value)])
        as_host = send(c, [(":method", "GET"), (":path", "/host"), (":scheme", "http"),
                           ("host", value)])
        rs = c.responses([as_authority, as_host])
        fine = c.get("/host", authority="good.example")
    finally:
        c.close()
    assert all(refused(r) for r in rs), [(r.reset, r.headers, bytes(r.body)) for r in rs]
    assert (fine.status, bytes(fine.body)) == (200, b"good.example")
    # HTTP/1.1 refuses the same value.
    with Conn(socket.create_connection(("127.0.0.1", srv.port), timeout=10)) as h1:
        h1.send(f"GET /host HTTP/1.1\r\nHost: {value}\r\n\r\n".encode())
        assert h1.read_response().status == 400


def test_h2_host_that_differs_from_authority_is_malformed(servers):
    srv = servers.get(APP)
    c = raw_client(srv.port)
    try:
        differs = send(c, [(":method", "GET"), (":path", "/host"), (":scheme", "http"),
                           (":authority", "good.example"), ("host", "evil.example")])
        same = send(c, [(":method", "GET"), (":path", "/host"), (":scheme", "http"),
                        (":authority", "good.example"), ("host", "Good.Example")])
        r_differs, r_same = c.responses([differs, same])
    finally:
        c.close()
    assert refused(r_differs), (r_differs.reset, r_differs.headers, bytes(r_differs.body))
    assert r_same.status == 200 and bytes(r_same.body).lower() == b"good.example"


def test_h2_connect_is_refused(servers):
    srv = servers.get(APP)
    c = raw_client(srv.port)
    try:
        sid = send(c, [(":method", "CONNECT"), (":authority", "example.org:443")], end=False)
        r = c.responses([sid])[0]
        after = c.get("/")
    finally:
        c.close()
    assert refused(r), (r.reset, r.headers, bytes(r.body))
    assert after.status == 200
    with Conn(socket.create_connection(("127.0.0.1", srv.port), timeout=10)) as h1:
        h1.send(b"CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n")
        assert h1.read_response().status == 400


def test_h2_cookie_fields_count_toward_limit_headers(start_server):
    srv = start_server(APP, "--limit-headers", "20")
    c = H2Client(srv.port)
    try:
        many = c.get("/", headers=[("cookie", f"c{i}=v") for i in range(50)])
        few = c.get("/", headers=[("cookie", f"c{i}=v") for i in range(10)])
    finally:
        c.close()
    assert many.status == 431
    assert few.status == 200


# --- one malformed field, one stream ------------------------------------------------------------

@pytest.mark.parametrize("field", [("X-Upper", "v"), ("x-crlf", "a\r\nb"), ("x-nul", "a\x00b")],
                         ids=["uppercase-name", "cr-lf-in-value", "nul-in-value"])
def test_h2_malformed_field_resets_its_stream_only(start_server, field):
    srv = start_server(APP)
    c = raw_client(srv.port, timeout=20)
    tok = uuid.uuid4().hex
    try:
        inflight = c.request("GET", f"/hold?name={tok}")
        srv.wait_marks("entered", 1)
        bad = send(c, [(":method", "GET"), (":path", "/"), (":scheme", "http"),
                       (":authority", "x"), field])
        r_bad = c.responses([bad])[0]
        srv.open_gate(tok)
        r_inflight = c.responses([inflight])[0]
        after = c.get("/")
    finally:
        c.close()
    assert r_bad.reset == h2.errors.ErrorCodes.PROTOCOL_ERROR, (r_bad.reset, r_bad.headers)
    assert (r_inflight.status, bytes(r_inflight.body)) == (200, b"held")
    assert after.status == 200 and c.goaway() is None


# --- a client that never opens its window -------------------------------------------------------

def thread_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


class ThreadPeak:
    """The most threads the process had, sampled in the background while in the block."""

    def __init__(self, pid: int):
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            try:
                self.peak = max(self.peak, thread_count(self.pid))
            except OSError:
                return

    def __enter__(self) -> "ThreadPeak":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)


def zero_window_clients(port: int, connections: int, streams: int, path: str = "/") -> list:
    """`connections` clients announcing SETTINGS_INITIAL_WINDOW_SIZE 0, each with `streams`
    GET `path` in flight, read until every stream has its head (the app answered them all:
    HEADERS take no window, the DATA waits for the window that never opens)."""
    clients = []
    for _ in range(connections):
        c = H2Client(port, timeout=30)
        c.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        c.flush()
        sids = [c.request("GET", path) for _ in range(streams)]
        clients.append((c, sids))
    deadline = time.monotonic() + ANSWERED_WITHIN
    for c, sids in clients:
        while not all(c.responses_by_id[s].headers or c.responses_by_id[s].ended for s in sids):
            assert time.monotonic() < deadline, "the app did not answer every stream"
            assert c.receive_once(), "the connection closed before every stream was answered"
    return clients


#: A bound on the wait, not a speed check: with a thread held per stream for the write
#: timeout, 1,200 streams on 4 threads take 15 minutes.
ANSWERED_WITHIN = 60
THREADS_MAX = 4
#: The threads the process keeps besides the pool's (main, loop, watchdogs, the HTTP/2 driver
#: and its watchdog...) are measured on the running server; this much more is allowed for a
#: driving thread handed on while its old one leaves.
SLACK = 2


@pytest.mark.parametrize("options, threads_max", [
    (["--scheduler", "adaptive", "--threads", f"1:{THREADS_MAX}"], THREADS_MAX),
    (["--scheduler", "inline", "--threads", f"1:{THREADS_MAX}"], THREADS_MAX),
    (["--scheduler", "pool", "--threads", f"1:{THREADS_MAX}"], THREADS_MAX),
    ([], 1024),
    (["--threads", "1:64"], 64),
    (["--scheduler", "pool"], 1024),
], ids=["adaptive", "inline", "pool", "defaults", "threads-1-64", "pool-default-threads"])
def test_h2_zero_window_streams_hold_no_thread(start_server, options, threads_max):
    """A client announcing a zero window used to take one thread per stream for the write
    timeout, whatever --threads said (1,207 threads for 12 x 100 streams; on the pool an
    unrelated request waited the whole timeout). Now the answers wait in the I/O layer: the
    thread count stays within --threads plus the server's own threads, an unrelated request is
    answered meanwhile, and each connection is closed after the write timeout."""
    srv = start_server(APP, *options, "--write-timeout", "3")
    warm = H2Client(srv.port)
    try:
        assert warm.get("/").status == 200
    finally:
        warm.close()
    service = thread_count(srv.pid)
    with ThreadPeak(srv.pid) as peak:
        clients = zero_window_clients(srv.port, connections=12, streams=100)
        unrelated = H2Client(srv.port)
        try:
            r = unrelated.get("/host", authority="unrelated.example")
        finally:
            unrelated.close()
    assert (r.status, bytes(r.body)) == (200, b"unrelated.example")
    assert peak.peak <= service + threads_max + SLACK, (peak.peak, service)
    # Nothing of the bodies went out (the window never opened), and after the write timeout
    # each connection is closed.
    for c, sids in clients:
        c.read_until_closed(timeout=30)
        assert c.closed, "a connection that never opened its window is still open"
        assert all(not c.responses_by_id[s].body for s in sids)
        c.close()
    assert srv.alive()


def answers_a_ping(c: H2Client) -> bool:
    """Whether the connection is still open: the server acknowledges a PING on it."""
    c.conn.ping(b"sg-alive")
    c.flush()
    while not any(isinstance(ev, h2.events.PingAckReceived) for ev in c.events):
        if not c.receive_once() or c.after_goaway:
            return False
    return True


#: Long enough that no stalled stream is reset, nor its connection closed, while a test runs:
#: what a test gets meanwhile, it got from a thread that was free.
LONG_WRITE_TIMEOUT = "600"


@pytest.mark.parametrize("options, threads_max", [
    ([], 1024),
    (["--threads", "1:64"], 64),
    (["--scheduler", "pool"], 1024),
    (["--scheduler", "pool", "--threads", f"1:{THREADS_MAX}"], THREADS_MAX),
], ids=["defaults", "threads-1-64", "pool", "pool-threads-1-4"])
def test_h2_zero_window_streams_leave_threads_for_other_requests(start_server, options,
                                                                 threads_max):
    """With 12 connections x 100 streams held at a zero window, the thread count stays within
    --threads and an unrelated request on another connection is answered while every one of
    those connections is still open (each acknowledges a PING after the answer, and no write
    timeout could have fired): a thread was free for it, not handed back by a timeout."""
    srv = start_server(APP, *options, "--write-timeout", LONG_WRITE_TIMEOUT)
    warm = H2Client(srv.port)
    try:
        assert warm.get("/").status == 200
    finally:
        warm.close()
    service = thread_count(srv.pid)
    with ThreadPeak(srv.pid) as peak:
        clients = zero_window_clients(srv.port, connections=12, streams=100)
        unrelated = H2Client(srv.port, timeout=60)
        try:
            r = unrelated.get("/host", authority="unrelated.example")
        finally:
            unrelated.close()
    assert (r.status, bytes(r.body)) == (200, b"unrelated.example")
    assert peak.peak <= service + threads_max + SLACK, (peak.peak, service)
    try:
        assert all(answers_a_ping(c) for c, _ in clients), "a stalled connection was closed"
        assert all(not c.responses_by_id[s].body for c, sids in clients for s in sids)
    finally:
        for c, _ in clients:
            c.close()
    assert srv.alive()


@pytest.mark.parametrize("scheduler", ["adaptive", "inline", "pool"])
def test_h2_zero_window_big_answers_leave_a_thread_for_other_requests(start_server, scheduler):
    """Answers larger than what a connection parks (--write-high-water) used to wait on their
    threads: 10 connections x 8 answers of 1 MB at a zero window took every pool thread, and an
    unrelated request waited for the write timeout. Now the last thread of --threads never
    waits so: past that, answers park within the server's bound, and past that their streams
    are reset (CANCEL, logged). The write timeout is long: the unrelated answer comes while
    every stalled connection is still open."""
    srv = start_server(APP, "--threads", f"1:{THREADS_MAX}", "--scheduler", scheduler,
                       "--write-timeout", LONG_WRITE_TIMEOUT)
    warm = H2Client(srv.port)
    try:
        assert warm.get("/").status == 200
    finally:
        warm.close()
    service = thread_count(srv.pid)
    with ThreadPeak(srv.pid) as peak:
        clients = zero_window_clients(srv.port, connections=10, streams=8, path="/big?n=1000000")
        unrelated = H2Client(srv.port, timeout=60)
        try:
            r = unrelated.get("/host", authority="unrelated.example")
        finally:
            unrelated.close()
    assert (r.status, bytes(r.body)) == (200, b"unrelated.example")
    assert peak.peak <= service + THREADS_MAX + SLACK, (peak.peak, service)
    try:
        assert all(answers_a_ping(c) for c, _ in clients), "a stalled connection was closed"
        resets = [c.responses_by_id[s].reset for c, sids in clients for s in sids]
    finally:
        for c, _ in clients:
            c.close()
    # 80 MB asked, 64 MiB parked at most: some streams were reset.
    assert h2.errors.ErrorCodes.CANCEL in resets
    srv.wait_log(r"HTTP/2 answer\(s\) reset \(CANCEL\)")
    assert srv.alive()


@pytest.mark.parametrize("scheduler", ["adaptive", "inline"])
def test_h2_zero_window_past_the_parking_bounds_stays_within_threads(start_server, scheduler):
    """Answers larger than what the I/O layer holds per connection (--write-high-water) wait on
    a thread again; an inline call that must wait hands the HTTP/2 thread's role on to a new
    thread. Those threads used to be one per waiting call (97 threads for 30 connections with
    --threads 1:4); now they count within --threads, and a call that would go past it is reset
    instead of waiting."""
    srv = start_server(APP, "--threads", f"1:{THREADS_MAX}", "--scheduler", scheduler,
                       "--write-timeout", "3", "--write-high-water", "256K")
    warm = H2Client(srv.port)
    try:
        assert warm.get("/").status == 200
    finally:
        warm.close()
    service = thread_count(srv.pid)
    with ThreadPeak(srv.pid) as peak:
        clients = zero_window_clients(srv.port, connections=10, streams=3, path="/big?n=1000000")
    for c, _ in clients:
        c.close()
    assert peak.peak <= service + THREADS_MAX + SLACK, (peak.peak, service)
    assert srv.alive()
