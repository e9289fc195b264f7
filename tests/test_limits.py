"""Named limits and timeouts, each with its status and the connection
closed after it.

Covers: request line too long → 414; too many header fields and a too large header section →
431; a body over --limit-body → 413 (Content-Length and chunked); the header read timeout →
408 then close, including a client trickling header bytes (each byte must not restart the
timer); the keep-alive idle timeout; the write timeout for a client that stops reading. The
defaults (8 KiB request line, 100 headers) are checked on a server started without options.
"""

import json
import re
import select
import socket
import time

import pytest

from tests.helpers import wait_for
from tests.http_util import (TIMEOUT, Closed, Conn, Truncated, assert_refused, assert_still_serving,
                              chunked, request_bytes)

LIMIT_OPTIONS = ("--limit-request-line", "1024", "--limit-header-bytes", "4096",
                 "--limit-headers", "20", "--limit-body", "1000")


@pytest.fixture(scope="module")
def limited(servers):
    return servers.get("body_reader", *LIMIT_OPTIONS)


@pytest.fixture(scope="module")
def default_server(servers):
    return servers.get("hello")


def refused(server, raw: bytes, statuses):
    """Refused with one of `statuses` and closed; then the server still answers."""
    resp = assert_refused(server.port, raw, statuses)
    assert_still_serving(server.port, "/read")
    return resp


def accepted(server, raw: bytes):
    with Conn.open(server.port) as c:
        c.send(raw)
        resp = c.read_response()
    assert resp.status == 200, f"a request within the limits got {resp.status}"
    return resp


# -- head limits -----------------------------------------------------------------------------

def test_request_line_over_limit_is_414(limited):
    refused(limited, request_bytes("GET", "/read?" + "a" * 2000), {414})


def test_request_line_under_limit_is_accepted(limited):
    accepted(limited, request_bytes("GET", "/read?" + "a" * 900))


def test_default_request_line_limit_is_414_past_8_kib(default_server):
    accepted(default_server, request_bytes("GET", "/" + "a" * 7000))
    refused(default_server, request_bytes("GET", "/" + "a" * 9000), {414})


def test_too_many_header_fields_is_431(limited):
    refused(limited, request_bytes("GET", "/read", headers=[(f"X-H{i}", "v") for i in range(30)]),
            {431})


def test_header_count_under_limit_is_accepted(limited):
    accepted(limited, request_bytes("GET", "/read", headers=[(f"X-H{i}", "v") for i in range(15)]))


def test_default_header_count_limit_is_431_past_100(default_server):
    accepted(default_server,
             request_bytes("GET", "/", headers=[(f"X-H{i}", "v") for i in range(90)]))
    refused(default_server,
            request_bytes("GET", "/", headers=[(f"X-H{i}", "v") for i in range(150)]), {431})


def test_header_section_over_byte_limit_is_431(limited):
    refused(limited, request_bytes("GET", "/read",
                                   headers=[(f"X-Big{i}", "v" * 1500) for i in range(4)]), {431})


def test_single_huge_header_is_431(limited):
    refused(limited, request_bytes("GET", "/read", headers=[("X-Huge", "v" * 10000)]), {431})


def test_header_section_never_terminated_is_refused_at_the_limit(limited):
    """A client sending an endless header section must be refused once it passes the limit,
    not buffered forever."""
    raw = b"GET /read HTTP/1.1\r\nHost: x\r\n" + b"X-Filler: " + b"f" * 20000
    refused(limited, raw, {431})


# -- body limit ------------------------------------------------------------------------------

def test_content_length_over_body_limit_is_413(limited):
    # Only the head is sent: the server must refuse from the declared length alone.
    refused(limited, request_bytes("POST", "/read", headers=[("Content-Length", "2000")]), {413})


def test_chunked_body_over_limit_is_413(limited):
    raw = request_bytes("POST", "/read", headers=[("Transfer-Encoding", "chunked")]) \
        + b"200\r\n" + b"x" * 512 + b"\r\n" + b"200\r\n" + b"y" * 512 + b"\r\n"
    with Conn.open(limited.port) as c:
        c.send(raw)
        resp = c.read_response()
        # Even if the app already runs when the limit is crossed, nothing was sent yet: 413.
        assert resp.status == 413, f"chunked body over the limit got {resp.status}"
        c.expect_closed()


def test_declared_huge_chunk_over_limit_is_413(limited):
    raw = request_bytes("POST", "/read", headers=[("Transfer-Encoding", "chunked")]) \
        + b"100000\r\n" + b"x" * 100
    with Conn.open(limited.port) as c:
        c.send(raw)
        resp = c.read_response()
        assert resp.status == 413, f"a declared chunk over the limit got {resp.status}"
        c.expect_closed()


def test_body_within_limit_is_accepted(limited):
    accepted(limited, request_bytes("POST", "/read", body=b"x" * 900))
    accepted(limited, request_bytes("POST", "/read", headers=[("Transfer-Encoding", "chunked")],
                                    body=chunked(b"x" * 900, 100)))


# -- timeouts --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def short_timeouts(servers):
    return servers.get("hello", "--header-timeout", "1", "--keepalive-timeout", "1")


def test_partial_head_gets_408_then_close(short_timeouts):
    with Conn.open(short_timeouts.port) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\n")
        resp = c.read_response()
        assert resp.status == 408
        c.expect_closed()


def test_connection_sending_nothing_is_closed(short_timeouts):
    with Conn.open(short_timeouts.port) as c:
        try:
            c.read_response()
        except Closed:
            return
        # A 408 is acceptable for a connection that never sent a byte; it must still close.
        c.expect_closed()


def test_trickled_header_bytes_do_not_keep_the_connection_alive(short_timeouts):
    """One byte every 0.3 s of a ~2 KB head would take 10 minutes; with --header-timeout 1 the
    server must cut the client off long before the head is complete."""
    head = request_bytes("GET", "/", headers=[("X-Trickle", "t" * 2000)])
    s = socket.create_connection(("127.0.0.1", short_timeouts.port), timeout=TIMEOUT)
    sent = 0
    closed = False
    deadline = time.monotonic() + TIMEOUT
    try:
        while sent < len(head) and time.monotonic() < deadline:
            try:
                s.sendall(head[sent:sent + 1])
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            sent += 1
            # Pace the client (not a synchronisation): wait up to 0.3 s for the server to speak.
            readable, _, _ = select.select([s], [], [], 0.3)
            if readable:
                try:
                    data = s.recv(65536)
                except ConnectionResetError:
                    data = b""
                if not data or data.startswith(b"HTTP/1.1 408") or data.startswith(b"HTTP/1.0 408"):
                    closed = True
                    break
                raise AssertionError(f"unexpected answer to a trickled head: {data[:200]!r}")
    finally:
        s.close()
    assert closed, (f"the server kept a trickling client for {TIMEOUT}s ({sent} of {len(head)} "
                    "head bytes) despite --header-timeout 1")
    assert sent < len(head)


def test_idle_keepalive_connection_is_closed_after_the_timeout(short_timeouts):
    with Conn.open(short_timeouts.port) as c:
        c.send(request_bytes("GET", "/"))
        assert c.read_response().status == 200
        # Nothing more is sent: the server closes the idle connection silently.
        c.expect_closed()


def _server_side_socket_open(server_port: int, client_port: int) -> bool:
    """Is the server's end of the connection from client_port still held by a process?
    (/proc/net/tcp lists it with inode 0 once the owning process closed it.)"""
    want_local = f":{server_port:04X}"
    want_remote = f":{client_port:04X}"
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if local.endswith(want_local) and remote.endswith(want_remote):
                return inode != "0"
    return False


def test_write_timeout_closes_a_connection_whose_client_stopped_reading(start_server):
    srv = start_server("streaming", "--write-timeout", "1")
    size = 50 * 1024 * 1024
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(TIMEOUT)
    s.connect(("127.0.0.1", srv.port))
    client_port = s.getsockname()[1]
    c = Conn(s)
    try:
        c.send(request_bytes("GET", f"/big?size={size}"))
        # The response head proves the server accepted the connection and is writing.
        assert c.read_head().status == 200
        assert _server_side_socket_open(srv.port, client_port), \
            "cannot find the server's end of the connection in /proc/net/tcp"
        # The client reads nothing. The server must give up on it: wait (bounded) until the
        # server process no longer holds its end of the connection.
        def let_go() -> bool:
            if not _server_side_socket_open(srv.port, client_port):
                return True
            # Meanwhile other clients are served.
            with Conn.open(srv.port) as other:
                other.send(request_bytes("GET", "/with_length?n=1&size=5"))
                assert other.read_response().body == b"aaaaa"
            return False

        wait_for(let_go, "the server to let go of a connection whose client stopped reading "
                 "(--write-timeout 1)", TIMEOUT, interval=0.1)
        # Draining what was already in flight ends in EOF/reset well before the 50 MB.
        with pytest.raises((Truncated, Closed)):
            c.read_response()
    finally:
        c.close()
    assert srv.alive()
    with Conn.open(srv.port) as other:
        other.send(request_bytes("GET", "/with_length?n=1&size=5"))
        assert other.read_response().body == b"aaaaa"


# -- read timeout and drain limit ------------------------------------------------------------

@pytest.mark.parametrize("declared", [1000, 1_000_000], ids=["small-body", "large-body"])
def test_read_timeout_gives_the_app_an_error_for_a_stalled_body(start_server, declared):
    """The client sends 500 bytes of its declared body and then nothing, keeping the connection
    open: after --read-timeout the app's read must fail instead of blocking forever. (Small
    bodies may be buffered by the I/O layer before the app runs; the timeout applies there
    too.)"""
    srv = start_server("body_reader", "--read-timeout", "1")
    line = re.compile(r"body_reader token=stalled outcome=(\w+)")
    with Conn.open(srv.port) as c:
        c.send(request_bytes("POST", "/read", headers=[("Content-Length", str(declared)),
                                                       ("X-Token", "stalled")]) + b"x" * 500)
        # Either the app's read fails (and the app logs it), or the server gives up on the
        # request itself (an error status or a close) without the app seeing a complete body.
        def something_happened() -> bool:
            m = line.search(srv.log_text())
            if m:
                assert m.group(1) == "error", "the app read a stalled body as complete"
                return True
            return bool(c.buf) or c.is_closed_now(0.1)  # is_closed_now waits 0.1 s itself

        wait_for(something_happened, "the app's read to fail or the server to answer or close "
                 "after the body stalled (--read-timeout 1)", TIMEOUT, interval=0)
        try:
            resp = c.read_response()
        except (Closed, Truncated):
            return
        assert resp.status >= 400, f"a stalled request got {resp.status}"


def test_unread_body_over_max_drain_closes_the_connection(start_server):
    """hello never reads the body. A body within --max-drain is skipped and the connection
    reused; one larger than it is not drained: the connection closes after the response."""
    srv = start_server("hello", "--max-drain", "1000")
    with Conn.open(srv.port) as c:
        c.send(request_bytes("POST", "/small", body=b"s" * 500) + request_bytes("GET", "/next"))
        assert c.read_response().body == b"path=/small"
        assert c.read_response().body == b"path=/next"
    with Conn.open(srv.port) as c:
        c.send(request_bytes("POST", "/large", body=b"L" * 100000))
        resp = c.read_response()
        assert resp.status == 200 and resp.body == b"path=/large"
        c.expect_closed()


def test_running_out_of_descriptors_is_logged_once_per_episode(start_server):
    """Regression (8b050ec): at the file-descriptor limit the accept loop logged one line per
    retry (hundreds in seconds); now one line when accepting pauses and one when it resumes,
    and the clients queued meanwhile are all served."""
    srv = start_server("hello", "--header-timeout", "1", nofile=64)
    # A request head left incomplete: its 408 comes 1 s later, several sweeps (each of which
    # retries accepting) after the descriptors run out below.
    control = Conn.open(srv.port)
    control.send(b"GET / HTTP/1.1\r\n")
    clients = []
    try:
        for i in range(90):
            c = Conn.open(srv.port)
            c.send(request_bytes("GET", f"/n{i}"))
            clients.append(c)
        srv.wait_log(r"out of file descriptors")
        assert control.read_response().status == 408
        for c in clients[:60]:  # frees every descriptor the served ones held
            c.close()
        for i, c in enumerate(clients[60:], start=60):
            assert c.read_response().body == f"path=/n{i}".encode()
        srv.wait_log(r"accepting again after \d+ attempt")
        assert srv.log_text().count("out of file descriptors") == 1, srv.log_text()[-3000:]
    finally:
        control.close()
        for c in clients:
            c.close()



def test_a_response_that_cannot_drain_the_body_says_connection_close(start_server):
    """Regression (24f7f74): the answer sent before closing on an undrainable request
    body must say so (RFC 9112 §9.6), not promise a keep-alive the server will not keep."""
    srv = start_server("hello", "--max-drain", "1000")
    with Conn.open(srv.port) as c:
        c.send(request_bytes("POST", "/large", body=b"L" * 100000))
        resp = c.read_response()
        assert resp.status == 200 and resp.has_token("Connection", "close")
        c.expect_closed()
    with Conn.open(srv.port) as c:  # a small one is drained: the connection is kept
        c.send(request_bytes("POST", "/small", body=b"s" * 500))
        resp = c.read_response()
        assert not resp.has_token("Connection", "close")
    # Chunked and unread: its length is unknown, so no promise either.
    with Conn.open(srv.port) as c:
        c.send(b"POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"100000\r\n" + b"c" * 1000)
        resp = c.read_response()
        assert resp.status == 200 and resp.has_token("Connection", "close")


def _trickle(port, body_len, chunk, pause, total_chunks, token):
    """POST a body of body_len bytes, `chunk` bytes every `pause` seconds (at most
    total_chunks of them), then read whatever answer comes."""
    c = Conn.open(port)
    c.send(f"POST /read HTTP/1.1\r\nHost: x\r\nX-Token: {token}\r\n"
           f"Content-Length: {body_len}\r\n\r\n".encode())
    for _ in range(total_chunks):
        try:
            c.send(b"x" * chunk)
        except OSError:
            break  # the server gave up on us: the answer is waiting
        if select.select([c.sock], [], [], pause)[0]:
            break
    try:
        return c.read_response()
    finally:
        c.close()


def test_a_body_sent_one_byte_at_a_time_is_cut_by_the_minimum_rate(start_server):
    """Regression (24f7f74): each byte counted as progress, so a body sent at a byte
    every 0.2 s held its thread forever. With --min-body-rate 100 (after the 5 s grace) the
    app's read raises TimeoutError and the client gets 408."""
    srv = start_server("body_reader", "--min-body-rate", "100", "--read-timeout", "30")
    resp = _trickle(srv.port, 200000, 1, 0.2, 200, "slow1")
    assert resp.status == 408
    srv.wait_log(r"body_reader token=slow1 outcome=error type=TimeoutError")
    srv.wait_log(r"came too slowly")


def test_a_body_timeout_bounds_the_whole_body(start_server):
    srv = start_server("body_reader", "--body-timeout", "1", "--min-body-rate", "0")
    resp = _trickle(srv.port, 10_000_000, 65536, 0.2, 400, "total1")
    assert resp.status == 408
    srv.wait_log(r"body_reader token=total1 outcome=error type=TimeoutError")


def test_a_body_at_a_fair_pace_is_not_cut(start_server):
    srv = start_server("body_reader", "--min-body-rate", "1000")
    resp = _trickle(srv.port, 200000, 20000, 0.05, 10, "fair1")
    assert resp.status == 200 and json.loads(resp.body)["len"] == 200000
