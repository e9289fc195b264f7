"""A raw HTTP/2 client for the tests, over the `h2` library (PyPI): real sockets, frames
visible. ``H2Client(port)`` speaks h2c with prior knowledge (``tls=ssl_context``: over TLS,
ALPN ``h2``); ``request()`` opens a stream, ``responses()`` reads until the given streams are
complete (or reset), bounded by a timeout. Every event seen is kept in ``events``, so a test can
look for a GOAWAY or a RST_STREAM.
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import hyperframe.frame as frames


@dataclass
class Response:
    headers: List[Tuple[bytes, bytes]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)
    ended: bool = False
    reset: Optional[int] = None
    #: The HEADERS frame itself ended the stream (no DATA at all).
    ended_on_headers: bool = False

    @property
    def status(self) -> int:
        return int(dict(self.headers)[b":status"])

    def header(self, name: bytes) -> Optional[bytes]:
        return dict(self.headers).get(name)


class H2Client:
    def __init__(self, port: int, host: str = "127.0.0.1",
                 tls: Optional[ssl.SSLContext] = None, timeout: float = 10.0):
        sock = socket.create_connection((host, port), timeout=timeout)
        if tls is not None:
            sock = tls.wrap_socket(sock, server_hostname=host)
        self.sock = sock
        self.timeout = timeout
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding=None))
        self.conn.initiate_connection()
        self.events: List[h2.events.Event] = []
        self.responses_by_id: Dict[int, Response] = {}
        self.closed = False
        #: The library saw the server's GOAWAY and refuses frames after it (a graceful stop
        #: sends a PING and the in-flight streams' frames after it): read on frame by frame.
        self.after_goaway = False
        self.flush()

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, method: str, path: str, headers: Sequence[Tuple[str, str]] = (),
                body: Optional[bytes] = None, authority: str = "127.0.0.1",
                scheme: str = "http") -> int:
        sid = self.conn.get_next_available_stream_id()
        hdrs = [(":method", method), (":path", path), (":scheme", scheme),
                (":authority", authority)] + list(headers)
        self.conn.send_headers(sid, hdrs, end_stream=body is None)
        self.responses_by_id[sid] = Response()
        self.flush()
        if body is not None:
            self.send_body(sid, body)
        return sid

    def send_body(self, sid: int, body: bytes) -> None:
        """Send `body` within the flow-control window, reading as the server opens it; stops
        early if the server has closed the stream (it answered without reading it all)."""
        view = memoryview(body)
        deadline = time.monotonic() + self.timeout
        try:
            while view:
                room = min(self.conn.local_flow_control_window(sid),
                           self.conn.max_outbound_frame_size, len(view))
                if room <= 0:
                    answered = self.responses_by_id.get(sid)
                    if answered is not None and answered.reset is not None:
                        return  # the server reset the stream: nothing more to send
                    if time.monotonic() > deadline:
                        raise TimeoutError("the server kept its window closed")
                    self.receive_once()
                    continue
                self.conn.send_data(sid, bytes(view[:room]))
                view = view[room:]
                self.flush()
            self.conn.end_stream(sid)
        except h2.exceptions.StreamClosedError:
            pass  # the server answered (or reset the stream) before the body was all sent
        self.flush()

    def receive_once(self) -> bool:
        """One read from the socket, its events applied; False at the end of the stream."""
        try:
            data = self.sock.recv(1 << 20)
        except (ConnectionResetError, ssl.SSLError):
            data = b""
        if not data:
            self.closed = True
            return False
        if self.after_goaway:
            self._raw_frames(data)
            return True
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            if self.conn.state_machine.state != h2.connection.ConnectionState.CLOSED:
                raise
            self.after_goaway = True
            self.events.append(h2.events.ConnectionTerminated())
            self._raw_frames(b"")
            return True
        for ev in events:
            self.events.append(ev)
            r = self.responses_by_id.get(getattr(ev, "stream_id", 0) or 0)
            if isinstance(ev, h2.events.ResponseReceived) and r is not None:
                r.headers = list(ev.headers)
                if ev.stream_ended is not None:
                    r.ended = r.ended_on_headers = True
            elif isinstance(ev, h2.events.DataReceived) and r is not None:
                r.body += ev.data
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded) and r is not None:
                r.ended = True
            elif isinstance(ev, h2.events.StreamReset) and r is not None:
                r.reset = ev.error_code
                r.ended = True
        self.flush()
        return True

    def _raw_frames(self, data: bytes) -> None:
        """Frames after the library closed: HEADERS, DATA, RST_STREAM of our streams."""
        buf = self.conn.incoming_buffer
        buf.add_data(data)
        for f in buf:
            r = self.responses_by_id.get(f.stream_id)
            if r is None:
                continue
            if isinstance(f, frames.HeadersFrame):
                r.headers = list(self.conn.decoder.decode(f.data, raw=True))
            elif isinstance(f, frames.DataFrame):
                r.body += f.data
            elif isinstance(f, frames.RstStreamFrame):
                r.reset, r.ended = f.error_code, True
            if "END_STREAM" in f.flags:
                r.ended = True

    def responses(self, sids: Iterable[int]) -> List[Response]:
        """Read until every stream in `sids` has ended (or been reset)."""
        sids = list(sids)
        deadline = time.monotonic() + self.timeout
        while not all(self.responses_by_id[s].ended for s in sids):
            if time.monotonic() > deadline:
                raise TimeoutError(f"streams {sids} not complete within {self.timeout}s")
            if not self.receive_once():
                break
        return [self.responses_by_id[s] for s in sids]

    def get(self, path: str, **kw) -> Response:
        return self.responses([self.request("GET", path, **kw)])[0]

    def goaway(self) -> Optional[h2.events.ConnectionTerminated]:
        """The server's GOAWAY (its error code is unknown when it came in the same read as
        frames the library refused after it: see `after_goaway`)."""
        for ev in self.events:
            if isinstance(ev, h2.events.ConnectionTerminated):
                return ev
        return None

    def read_until_closed(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        self.sock.settimeout(timeout)
        while time.monotonic() < deadline and self.receive_once():
            pass

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
