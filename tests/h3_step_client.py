"""An HTTP/3 client driven step by step (tests/test_http3_features.py): aioquic's sans-I/O
QUIC and HTTP/3 connection over a UDP socket in the test's own thread, so that the test
decides when each of the client's datagrams leaves.

That is what makes 0-RTT testable without timing: with `hold` set, the client's datagrams
after its first flight (its ClientHello and the 0-RTT packets) are kept back, its Finished
among them, so the server cannot complete the handshake; whatever the server answers
meanwhile, it answered to early data. `release` sends them. `raw_initial` makes a datagram
that opens a handshake and nothing more (a client that goes silent after its Initial).
`stream_window` grants the server that many bytes per request stream and no more until `grant`
(a client that opens no window): `raw` counts the stream bytes that arrived, so the test sees
the server start an answer it cannot finish.
"""

from __future__ import annotations

import socket
import time
from typing import Callable, Dict, List, Optional, Tuple

from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import HandshakeCompleted, StreamDataReceived, StreamReset
from aioquic.tls import SessionTicket

from tests.h3_client import Response


def config(ca_file: str, ticket: Optional[SessionTicket] = None,
           cert: Optional[Tuple[str, str]] = None, max_data: Optional[int] = None) -> QuicConfiguration:
    c = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name="localhost")
    if max_data is not None:
        c.max_data = max_data
    c.load_verify_locations(ca_file)
    if cert is not None:
        c.load_cert_chain(*cert)
    c.session_ticket = ticket
    return c


class StepClient:
    """One QUIC connection to 127.0.0.1:`port`; `pump` moves it until a condition holds."""

    def __init__(self, port: int, ca_file: str, ticket: Optional[SessionTicket] = None,
                 hold: bool = False, cert: Optional[Tuple[str, str]] = None,
                 stream_window: Optional[int] = None, max_data: Optional[int] = None):
        self.addr = ("127.0.0.1", port)
        self.tickets: List[SessionTicket] = []
        self.quic = QuicConnection(configuration=config(ca_file, ticket, cert, max_data),
                                   session_ticket_handler=self.tickets.append)
        #: Stream bytes received, by stream (before HTTP/3 parses them).
        self.raw: Dict[int, int] = {}
        if stream_window is not None:
            self._shut_windows(stream_window)
        self.h3 = H3Connection(self.quic)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.connect(self.addr)
        self.hold = hold
        self.held: List[bytes] = []
        self.sent_first_flight = False
        #: The datagrams of the first flight, as sent (for a replay).
        self.first_flight: List[bytes] = []
        self.handshake: Optional[HandshakeCompleted] = None
        self.responses: Dict[int, Response] = {}
        self.quic.connect(self.addr, now=time.time())

    def _shut_windows(self, window: int) -> None:
        """Request streams get `window` bytes of credit, raised only for streams `grant`ed."""
        self.granted: set = set()
        self.quic._local_max_stream_data_bidi_local = window
        raise_limits = self.quic._write_stream_limits

        def only_granted(builder, space, stream):
            if stream.stream_id in self.granted or stream.stream_id % 4 != 0:
                raise_limits(builder, space, stream)
        self.quic._write_stream_limits = only_granted

    def grant(self, sid: int, window: int = 16 << 20) -> None:
        """Open stream `sid`'s window (a MAX_STREAM_DATA frame goes with the next flush)."""
        self.granted.add(sid)
        self.quic._streams[sid].max_stream_data_local = window
        self.flush()

    def drain(self) -> None:
        """Take in the datagrams that already arrived, without waiting for more."""
        self.sock.settimeout(0)
        while True:
            try:
                data = self.sock.recv(65536)
            except (BlockingIOError, socket.timeout):
                break
            self.quic.receive_datagram(data, self.addr, now=time.time())
            self._events()

    # -- I/O --------------------------------------------------------------------------------
    def flush(self) -> None:
        """Send what the connection has to send; with `hold`, only the first flight goes."""
        for data, _ in self.quic.datagrams_to_send(now=time.time()):
            if self.hold and self.sent_first_flight:
                self.held.append(data)
            else:
                self.sock.send(data)
                if not self.sent_first_flight:
                    self.first_flight.append(data)
        self.sent_first_flight = True

    def release(self) -> None:
        """Send the datagrams held back, and from now on everything."""
        self.hold = False
        for data in self.held:
            self.sock.send(data)
        self.held.clear()
        self.flush()

    def pump(self, until: Callable[[], bool], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not until():
            timer = self.quic.get_timer()
            if timer is not None and time.time() >= timer:
                self.quic.handle_timer(now=time.time())
                self._events()
            self.flush()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the connection did not get there in time")
            # `until` may look at the server (its metrics): looked at again at least this often.
            wait = min(left, 0.05)
            if timer is not None:
                wait = min(wait, max(timer - time.time(), 0.001))
            self.sock.settimeout(wait)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            self.quic.receive_datagram(data, self.addr, now=time.time())
            self._events()

    def _events(self) -> None:
        while (ev := self.quic.next_event()) is not None:
            if isinstance(ev, HandshakeCompleted):
                self.handshake = ev
            if isinstance(ev, StreamDataReceived):
                self.raw[ev.stream_id] = self.raw.get(ev.stream_id, 0) + len(ev.data)
            if isinstance(ev, StreamReset) and ev.stream_id in self.responses:
                self.responses[ev.stream_id].reset = ev.error_code
                self.responses[ev.stream_id].ended = True
            for h in self.h3.handle_event(ev):
                self._h3_event(h)

    def _h3_event(self, ev) -> None:
        r = self.responses.get(getattr(ev, "stream_id", None))
        if r is None:
            return
        if isinstance(ev, HeadersReceived) and r.status == 0:
            r.status = next(int(v) for n, v in ev.headers if n == b":status")
            r.headers = [(n, v) for n, v in ev.headers if not n.startswith(b":")]
        elif isinstance(ev, DataReceived):
            r.body += ev.data
        if getattr(ev, "stream_ended", False):
            r.ended = True

    # -- requests ---------------------------------------------------------------------------
    def request(self, method: str, path: str, body: Optional[bytes] = None,
                send: bool = True) -> int:
        """Open a request stream and send it (in 0-RTT if the handshake is not done yet);
        with `send` False it leaves with the next request's."""
        sid = self.quic.get_next_available_stream_id()
        self.responses[sid] = Response()
        self.h3.send_headers(sid, [(b":method", method.encode()), (b":scheme", b"https"),
                                   (b":authority", b"localhost"), (b":path", path.encode())],
                             end_stream=body is None)
        if body is not None:
            self.h3.send_data(sid, body, end_stream=True)
        if send:
            self.flush()
        return sid

    def response(self, sid: int, timeout: float = 20.0) -> Response:
        self.pump(lambda: self.responses[sid].ended, timeout)
        return self.responses[sid]

    def close(self) -> None:
        self.hold = False
        self.quic.close()
        self.flush()
        self.sock.close()

    def __enter__(self) -> "StepClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def ticket_from(port: int, ca_file: str) -> SessionTicket:
    """A session ticket: one whole connection, one request, until the server's ticket came."""
    with StepClient(port, ca_file) as c:
        assert c.response(c.request("GET", "/")).status == 200
        c.pump(lambda: bool(c.tickets))
        return c.tickets[-1]


def raw_initial(port: int, ca_file: str) -> Tuple[socket.socket, List[bytes]]:
    """A client's first flight (its Initial with the ClientHello), sent from a socket that
    then says nothing more: the server's handshake waits for the rest."""
    quic = QuicConnection(configuration=config(ca_file))
    addr = ("127.0.0.1", port)
    quic.connect(addr, now=time.time())
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.connect(addr)
    sent = [data for data, _ in quic.datagrams_to_send(now=time.time())]
    for data in sent:
        sock.send(data)
    return sock, sent
