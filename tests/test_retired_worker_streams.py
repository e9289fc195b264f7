"""A worker retired by `--max-requests` and its HTTP/2 and HTTP/3 connections: each open one
hears a GOAWAY as the worker retires, its streams in flight finish, a stream opened after the
GOAWAY is not served by the retired worker, and a new connection is the replacement's.

The replacement is held in its import (tests/apps/slow_import.py) until the test lets it
finish: the master stops a retired worker once its replacement is ready, and that stop sends
a GOAWAY too; only what the worker does before it shows what retiring does.

The HTTP/2 client here is raw frames (hyperframe and hpack, which come with `h2`), as a real
client behaves after a GOAWAY: it answers the server's PING (which makes the server send its
final GOAWAY, RFC 9113 §6.8) and may still send a stream it had started. `h2`'s own state
machine refuses frames after a GOAWAY, so it cannot play that client. HTTP/3 uses aioquic
(tests/h3_client.py).
"""

from __future__ import annotations

import re
import socket
import time
from typing import Dict, List, Optional, Tuple

import hpack
import hyperframe.frame as frames

from tests.h3_client import H3Client
from tests.helpers import wait_for
from tests.test_http3_lifecycle import tls_options
from tests.test_workers import children
from tests.tls_certs import tls_certs  # noqa: F401  (the fixture)

IMPORT_HELD = "hold-imports"
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
H3_REQUEST_REJECTED = 0x10B


class RawH2:
    """One h2c connection with prior knowledge, frame by frame: SETTINGS and PING answered as
    any client answers them; heads, bodies, resets and GOAWAYs recorded by stream."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.encoder, self.decoder = hpack.Encoder(), hpack.Decoder()
        self.buf = b""
        self.heads: Dict[int, Dict[bytes, bytes]] = {}
        self.bodies: Dict[int, bytes] = {}
        self.ended: set = set()
        self.resets: Dict[int, int] = {}
        #: (last stream id, error code) of each GOAWAY, in order.
        self.goaways: List[Tuple[int, int]] = []
        self.closed = False
        self.send(PREFACE + frames.SettingsFrame(0).serialize())

    def send(self, data: bytes) -> None:
        """Send, unless the server has closed (what it sent before is still read)."""
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def request(self, sid: int, path: str) -> None:
        block = self.encoder.encode([(":method", "GET"), (":path", path), (":scheme", "http"),
                                     (":authority", "127.0.0.1")])
        self.send(frames.HeadersFrame(sid, block, flags=["END_HEADERS", "END_STREAM"]).serialize())

    def _frame(self) -> Optional[frames.Frame]:
        """The next frame; None if none came within a second, or the server closed."""
        while True:
            if len(self.buf) >= 9:
                f, length = frames.Frame.parse_frame_header(memoryview(self.buf[:9]))
                if len(self.buf) >= 9 + length:
                    f.parse_body(memoryview(self.buf[9:9 + length]))
                    self.buf = self.buf[9 + length:]
                    return f
            self.sock.settimeout(1.0)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                return None
            except ConnectionResetError:
                data = b""
            if not data:
                self.closed = True
                return None
            self.buf += data

    def read(self) -> bool:
        """Read and answer one frame, if one comes within a second; False once the server
        closed."""
        f = self._frame()
        if f is None:
            return not self.closed
        if isinstance(f, frames.SettingsFrame) and "ACK" not in f.flags:
            self.send(frames.SettingsFrame(0, flags=["ACK"]).serialize())
        elif isinstance(f, frames.PingFrame) and "ACK" not in f.flags:
            self.send(frames.PingFrame(0, opaque_data=f.opaque_data, flags=["ACK"]).serialize())
        elif isinstance(f, frames.HeadersFrame):
            self.heads[f.stream_id] = dict(self.decoder.decode(f.data, raw=True))
        elif isinstance(f, frames.DataFrame):
            self.bodies[f.stream_id] = self.bodies.get(f.stream_id, b"") + f.data
        elif isinstance(f, frames.RstStreamFrame):
            self.resets[f.stream_id] = f.error_code
            self.ended.add(f.stream_id)
        elif isinstance(f, frames.GoAwayFrame):
            self.goaways.append((f.last_stream_id, f.error_code))
        if "END_STREAM" in f.flags:
            self.ended.add(f.stream_id)
        return True

    def read_until(self, done, what: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, f"no {what} within {timeout}s"
            if not self.read():
                assert done(), f"the server closed before {what}"

    def close(self) -> None:
        self.sock.close()


def hold_replacements(srv) -> set:
    """From now on a new worker waits in its import until `srv.open_gate("imports")`; the
    workers there now."""
    srv.wait_marks("importing", 1, timeout=30)
    srv.state_path(IMPORT_HELD).write_text("")
    return set(children(srv.pid))


def replacement_serving(srv, first: set) -> None:
    """Let the held replacement finish its import, and wait until the master has it ready."""
    srv.wait_marks("importing", 2, timeout=30)
    srv.open_gate("imports")
    wait_for(lambda: len(re.findall(r"Worker \d+ ready", srv.log_text())) >= 2,
             "the replacement worker ready", 30)
    assert set(children(srv.pid)) - first


def test_a_retired_worker_sends_goaway_on_its_http2_connections(start_server):
    """A worker retired by --max-requests went on serving new streams on the HTTP/2
    connections open on it, with no GOAWAY, until its replacement was ready and the master
    stopped it (a replacement slow to boot left it serving them all that time). Now the
    request that reaches the limit brings a GOAWAY on the connection (its final one naming
    the streams accepted), the stream in flight finishes, a stream sent after it is not
    served, the connection closes, and a new connection is served by the replacement."""
    srv = start_server("slow_import", "--workers", "1", "--max-requests", "2")
    first = hold_replacements(srv)
    c = RawH2(srv.port)
    try:
        c.request(1, "/gate?name=held")  # the first request, held in flight
        srv.wait_marks("entered", 1)
        c.request(3, "/")  # the second: it reaches the limit
        c.read_until(lambda: 3 in c.ended, "the answer to the request that reaches the limit")
        assert c.heads[3][b":status"] == b"200"
        retired = int(c.bodies[3])
        c.read_until(lambda: c.goaways, "GOAWAY from the retired worker")
        # The PING after the first GOAWAY was answered: the final GOAWAY names stream 3.
        c.read_until(lambda: c.goaways[-1][0] != 2**31 - 1, "the final GOAWAY")
        assert c.goaways[-1] == (3, 0), c.goaways
        c.request(5, "/")  # past the GOAWAY's last stream
        srv.open_gate("held")
        c.read_until(lambda: 1 in c.ended, "the answer to the stream in flight")
        assert c.heads[1][b":status"] == b"200" and int(c.bodies[1]) == retired
        c.read_until(lambda: c.closed, "the connection's close")
        assert 5 not in c.heads, "a stream past the GOAWAY was served by the retired worker"
    finally:
        c.close()
    replacement_serving(srv, first)
    fresh = RawH2(srv.port)
    try:
        fresh.request(1, "/")
        fresh.read_until(lambda: 1 in fresh.ended, "an answer on a new connection")
        assert int(fresh.bodies[1]) != retired and int(fresh.bodies[1]) in children(srv.pid)
    finally:
        fresh.close()


def test_a_retired_worker_sends_goaway_on_its_http3_connections(start_server, tls_certs):
    """As over HTTP/2: a worker retired by --max-requests served new request streams on its
    open HTTP/3 connections until its replacement was ready. Now they hear an H3 GOAWAY
    naming the first stream not served, a request sent after it is rejected
    (`H3_REQUEST_REJECTED`, which a client sends again elsewhere), the one in flight is
    answered, and the connection closes."""
    srv = start_server("slow_import", *tls_options(tls_certs), "--workers", "1",
                       "--max-requests", "2")
    first = hold_replacements(srv)
    with H3Client(srv.port, str(tls_certs.ca_cert), timeout=30) as c:
        held = c.request("GET", "/gate?name=held3")
        srv.wait_marks("entered", 1)
        last = c.request("GET", "/")
        r = c.response(last)
        assert r.status == 200
        retired = int(r.body)
        wait_for(lambda: c.goaway_id is not None, "an H3 GOAWAY from the retired worker", 10)
        assert c.goaway_id == last + 4
        late = c.request("GET", "/")
        rejected = c.response(late)
        assert rejected.status == 0 and rejected.reset == H3_REQUEST_REJECTED, rejected
        srv.open_gate("held3")
        answered = c.response(held)
        assert answered.status == 200 and int(answered.body) == retired
        wait_for(lambda: c.terminated is not None, "the connection's close", 15)
    replacement_serving(srv, first)
    with H3Client(srv.port, str(tls_certs.ca_cert), timeout=30) as fresh:
        pid = int(fresh.get("/").body)
    assert pid != retired and pid in children(srv.pid)
