"""HTTP/3 under attack, over real UDP sockets with aioquic as the client (tests/h3_client.py,
and tests/h3_step_client.py where the test decides what the client sends and acknowledges):
each test names what a hostile or unlucky client does and asserts what would break if the
defence went. Run the group alone with ``./dev test -k h3_attack`` (the fault-suite rows for a
client that opens no window and for clients that stop acknowledging are in
tests/faults/test_h3_attack_faults.py).

- a client that grants a request stream no credit holds no other request of the process: the
  answer's head is parked, never waited for with the GIL held;
- a request whose DATA disagrees with its content-length, or that carries connection-specific
  fields or a pseudo-header after a regular field, is malformed (RFC 9114 §4.1.2, §4.2,
  §4.3): reset with H3_MESSAGE_ERROR, never answered 200; ``--limit-body`` holds;
- clients that stop acknowledging pin a bounded send window each, and their connections are
  closed once nothing moved for ``--write-timeout``;
- before a client's address is validated the server sends at most three times what it
  received (RFC 9000 §8.1), and a handshake under way is not counted as an open connection;
- each ``--http3-congestion`` controller starts and serves.
"""

from __future__ import annotations

import hashlib
import socket
import ssl
import http.client

import pytest

from tests.apps.http3 import pattern
from tests.h3_client import H3Client
from tests.h3_step_client import StepClient, raw_initial
from tests.helpers import wait_for
from tests.test_http3_features import Metered
from tests.test_tls import start_fails
from tests.tls_certs import TlsCerts, tls_certs  # noqa: F401  (the fixture)

APP = "http3"
H3_MESSAGE_ERROR = 0x10E
MIB = 1 << 20


def tls_options(c: TlsCerts):
    return ["--certfile", str(c.server_chain), "--keyfile", str(c.server_key), "--http3"]


def https_get(port: int, c: TlsCerts, path: str = "/", timeout: float = 60) -> tuple:
    """An HTTP/1.1 request over TLS on the same listener: (status, body)."""
    ctx = ssl.create_default_context(cafile=str(c.ca_cert))
    ctx.set_alpn_protocols(["http/1.1"])
    conn = http.client.HTTPSConnection("localhost", port, timeout=timeout, context=ctx)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


# --- a client that opens no window --------------------------------------------------------------

def stalled_answer(port: int, ca: str):
    """A connection whose request stream's window is 2 bytes: the server begins the answer's
    HEADERS frame (its first 2 bytes arrive) and can send no more of it."""
    c = StepClient(port, ca, stream_window=2)
    c.pump(lambda: c.handshake is not None)
    sid = c.request("GET", "/")
    c.pump(lambda: c.raw.get(sid, 0) >= 2)
    return c, sid


@pytest.mark.parametrize("scheduler", ["inline", "pool"])
def test_a_head_the_client_has_no_window_for_holds_no_other_request(start_server, tls_certs,
                                                                    scheduler):
    """The answer's head used to be waited for with the GIL held (up to --write-timeout): one
    HTTP/3 request from a client that grants no stream credit froze every protocol of the
    process (an HTTP/1.1 request waited 29.5 s). The head is parked now: an HTTP/1.1 request is
    answered while the stream is still stalled, and the head goes once the window opens."""
    srv = start_server(APP, *tls_options(tls_certs), "--write-timeout", "40",
                       "--scheduler", scheduler)
    c, sid = stalled_answer(srv.port, str(tls_certs.ca_cert))
    try:
        # The server has begun the head (2 bytes arrived) and cannot finish it.
        # Well within QUIC's idle timeout and --write-timeout: the stall still holds after it.
        assert https_get(srv.port, tls_certs, timeout=15) == (200, b"Hello, World!")
        c.drain()
        r = c.responses[sid]
        assert (r.status, r.reset, r.ended) == (0, None, False), "the stalled stream moved"
        c.grant(sid)
        r = c.response(sid)
        assert (r.status, bytes(r.body)) == (200, b"Hello, World!")
    finally:
        c.close()


# --- malformed requests -------------------------------------------------------------------------

def message_error(r) -> bool:
    return r.reset == H3_MESSAGE_ERROR and r.status != 200


def test_more_data_than_the_content_length_is_a_message_error(start_server, tls_certs):
    """`content-length: 5` and 10 MiB of DATA was answered 200 with the 10 MiB (past
    --limit-body 1M too): the app read the whole stream."""
    srv = start_server(APP, *tls_options(tls_certs), "--limit-body", "1M")
    with H3Client(srv.port, str(tls_certs.ca_cert), timeout=60) as c:
        over = c.response(c.request("POST", "/echo", [("content-length", "5")],
                                    body=pattern(10 * MIB)))
        small = c.response(c.request("POST", "/echo", [("content-length", "5")],
                                     body=b"12345678"))
        fine = c.response(c.request("POST", "/echo", [("content-length", "5")],
                                    body=b"12345"))
    assert message_error(over), (over.status, over.reset, len(over.body))
    assert message_error(small), (small.status, small.reset, bytes(small.body))
    assert (fine.status, bytes(fine.body)) == (200, b"12345")


def test_a_stream_that_ends_short_of_its_content_length_is_a_message_error(start_server,
                                                                          tls_certs):
    """`content-length: 100` with 10 bytes and FIN was served as a whole body."""
    srv = start_server(APP, *tls_options(tls_certs))
    with H3Client(srv.port, str(tls_certs.ca_cert)) as c:
        short = c.response(c.request("POST", "/echo", [("content-length", "100")],
                                     body=b"0123456789"))
    assert message_error(short), (short.status, short.reset, bytes(short.body))


def test_a_body_without_length_past_the_limit_is_refused(start_server, tls_certs):
    srv = start_server(APP, *tls_options(tls_certs), "--limit-body", "1M")
    with H3Client(srv.port, str(tls_certs.ca_cert), timeout=60) as c:
        r = c.response(c.request("PUT", "/echo", body=pattern(10 * MIB)))
    assert r.status != 200 and len(r.body) < MIB


@pytest.mark.parametrize("field", [
    (b"transfer-encoding", b"chunked"),
    (b"connection", b"close"),
    (b"upgrade", b"h2c"),
    (b"keep-alive", b"timeout=5"),
    (b"proxy-connection", b"keep-alive"),
    (b"te", b"gzip"),
], ids=lambda f: f[0].decode())
def test_connection_specific_fields_are_malformed(start_server, tls_certs, field):
    """Each reached the environ (as HTTP_TRANSFER_ENCODING, ...); HTTP/2 resets such a
    stream (RFC 9113 §8.2.2), HTTP/3 must too (RFC 9114 §4.2)."""
    srv = start_server(APP, *tls_options(tls_certs))
    base = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"localhost"),
            (b":path", b"/environ")]
    with H3Client(srv.port, str(tls_certs.ca_cert)) as c:
        bad = c.response(c.send_raw_headers(base + [field]))
        trailers = c.response(c.send_raw_headers(base + [(b"te", b"trailers")]))
    assert message_error(bad), (bad.status, bad.reset, bytes(bad.body)[:200])
    assert trailers.status == 200 and b"HTTP_TE=trailers" in bytes(trailers.body)


def test_a_pseudo_header_after_a_regular_field_is_malformed(start_server, tls_certs):
    srv = start_server(APP, *tls_options(tls_certs))
    with H3Client(srv.port, str(tls_certs.ca_cert)) as c:
        late = c.response(c.send_raw_headers([
            (b":method", b"GET"), (b":scheme", b"https"), (b"x-a", b"1"),
            (b":authority", b"localhost"), (b":path", b"/environ")]))
        twice = c.response(c.send_raw_headers([
            (b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"localhost"),
            (b":path", b"/environ"), (b":path", b"/")]))
        fine = c.get("/")
    assert message_error(late), (late.status, late.reset)
    assert message_error(twice), (twice.status, twice.reset)
    assert fine.status == 200


# --- clients that stop acknowledging ------------------------------------------------------------

def rss_peak(pid: int) -> int:
    """The process's peak resident set (VmHWM), bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def silent_downloads(port: int, ca: str, n: int) -> list:
    """`n` connections, each downloading 64 MiB with wide windows, then never acknowledging
    again (their sockets stay open and unread)."""
    clients = []
    for _ in range(n):
        c = StepClient(port, ca, stream_window=256 * MIB, max_data=1 << 30)
        c.pump(lambda: c.handshake is not None)
        sid = c.request("GET", f"/big?n={64 * MIB}")
        c.pump(lambda: c.raw.get(sid, 0) > 0)
        clients.append(c)
    return clients


#: The server's bound on what it keeps unacknowledged per HTTP/3 connection and per process
#: (src/io/h3/config.rs, SEND_WINDOW and SEND_WINDOW_PER_PROCESS), and its bound on the rest
#: a stalled download holds (the app thread's block in hand and quinn's frames: generously).
SEND_WINDOW = 4 * MIB
SEND_WINDOW_PER_PROCESS = 64 * MIB
STALLED_EXTRA = 2 * MIB


def test_clients_that_stop_acknowledging_pin_a_bounded_window_and_are_closed(start_server,
                                                                            tls_certs):
    """Each such connection pinned quinn's default send window, about 11.7 MiB (60 of them
    took the process from 32 to 732 MiB), and stayed until QUIC's idle timeout. The send
    window is bounded per connection and per process, and a connection whose acknowledgements
    stopped for --write-timeout is closed."""
    n = 8
    m = Metered(start_server, APP, *tls_options(tls_certs), "--write-timeout", "3",
                "--threads", f"{n + 2}")
    ca = str(tls_certs.ca_cert)
    with H3Client(m.srv.port, ca) as warm:
        assert warm.get("/").status == 200
        assert warm.get(f"/big?n={4 * MIB}").status == 200
    before = rss_peak(m.srv.pid)
    clients = silent_downloads(m.srv.port, ca, n)
    try:
        wait_for(lambda: m.connections("open") == 0, "the silent connections' close",
                 timeout=25)
    finally:
        for c in clients:
            c.sock.close()
    grown = rss_peak(m.srv.pid) - before
    bound = min(n * SEND_WINDOW, SEND_WINDOW_PER_PROCESS) + n * STALLED_EXTRA + 16 * MIB
    assert grown <= bound, f"peak RSS grew {grown / MIB:.1f} MiB, bound {bound / MIB:.1f}"
    with H3Client(m.srv.port, ca) as c:
        assert c.get("/").status == 200


# --- before address validation -------------------------------------------------------------------

def test_the_first_flight_is_at_most_three_times_the_initial(start_server, tls_certs):
    """Before the client's address is validated the server sent 3,822 bytes for a 1,200-byte
    Initial (3.19x; RFC 9000 §8.1 allows 3x): its first flight, then two full-size probes at
    the loss timer although less than a datagram of the budget was left (quinn-proto lets a
    whole datagram go while any budget is left; src/io/h3/amplification.rs holds it)."""
    m = Metered(start_server, APP, *tls_options(tls_certs), "--header-timeout", "2")
    sock, sent = raw_initial(m.srv.port, str(tls_certs.ca_cert))
    got = 0
    try:
        sock.settimeout(0.2)

        def take() -> bool:
            nonlocal got
            try:
                while True:
                    got += len(sock.recv(65536))
            except socket.timeout:
                pass
            return m.event("handshake_timeout") == 1
        wait_for(take, "the handshake's timeout")
        take()
    finally:
        sock.close()
    received = sum(len(d) for d in sent)
    assert 0 < got <= 3 * received, f"{got} bytes sent for {received}"


def test_a_handshake_under_way_is_not_an_open_connection(start_server, tls_certs):
    """`http3_connections{state="open"}` counted 64 half-open handshakes: a client silent
    after its Initial is a handshake, not an open connection."""
    m = Metered(start_server, APP, *tls_options(tls_certs))
    sock, _ = raw_initial(m.srv.port, str(tls_certs.ca_cert))
    try:
        wait_for(lambda: m.connections("handshake") == 1, "the handshake under way")
        assert m.connections("open") == 0
    finally:
        sock.close()
    with H3Client(m.srv.port, str(tls_certs.ca_cert)) as c:
        assert c.get("/").status == 200
        assert m.connections("open") == 1


# --- congestion control ----------------------------------------------------------------------------

@pytest.mark.parametrize("controller", ["cubic", "newreno", "bbr"])
def test_each_congestion_controller_starts_and_serves(start_server, tls_certs, controller):
    srv = start_server(APP, *tls_options(tls_certs), "--http3-congestion", controller)
    with H3Client(srv.port, str(tls_certs.ca_cert), timeout=60) as c:
        r = c.get(f"/pattern?n={4 * MIB}")
    assert r.status == 200
    assert hashlib.sha256(bytes(r.body)).digest() == hashlib.sha256(pattern(4 * MIB)).digest()


def test_an_unknown_congestion_controller_is_refused(tls_certs):
    line = start_fails(*tls_options(tls_certs), "--http3-congestion", "vegas")
    assert "--http3-congestion" in line and "bbr" in line
