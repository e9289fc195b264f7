"""An HTTP/3 client for the tests (tests/test_http3.py): aioquic's QUIC and HTTP/3 stack, an
implementation independent of the server's (quinn and h3), driven from the test's thread.

One `H3Client` is one QUIC connection, its asyncio loop on a thread of its own: `request`
opens a request stream and returns its id at once (several may be in flight on the
connection), `response` waits (bounded) for that stream's whole answer. The connection's end
(the server's close, with its reason) and a GOAWAY from the server (with its stream id) are
recorded.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, FrameType, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.buffer import Buffer, BufferReadError
from aioquic.quic.events import ConnectionTerminated, QuicEvent, StreamDataReceived, StreamReset

Headers = Sequence[Tuple[str, str]]


@dataclass
class Response:
    status: int = 0
    headers: List[Tuple[bytes, bytes]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)
    #: Interim (1xx) statuses received before the final head.
    interim: List[int] = field(default_factory=list)
    ended: bool = False
    #: The stream was reset by the server (its error code).
    reset: Optional[int] = None

    def header(self, name: bytes) -> Optional[bytes]:
        for n, v in self.headers:
            if n == name:
                return v
        return None


class _H3(H3Connection):
    """aioquic's HTTP/3 connection, which skips a GOAWAY on the control stream and keeps
    nothing of it: here its arrival is remembered (the frame's type is checked as its header
    is parsed)."""

    goaway = False
    #: HEAD requests' streams: their answers' Content-Length is the GET's, with no content
    #: (RFC 9110 §9.3.2), which aioquic takes for a framing error and closes the connection.
    head_streams: set

    def _check_content_length(self, stream) -> None:
        if stream.stream_id not in self.head_streams:
            super()._check_content_length(stream)

    def _check_control_frame_type(self, frame_type: int) -> None:
        if frame_type == FrameType.GOAWAY:
            self.goaway = True
        super()._check_control_frame_type(frame_type)


class ControlReader:
    """The server's control stream read beside aioquic (which discards a GOAWAY's payload):
    the stream id of each GOAWAY, the last in `goaway_id`."""

    def __init__(self) -> None:
        self.raw: Dict[int, bytes] = {}
        self.control: Optional[int] = None
        self.goaway_id: Optional[int] = None

    def feed(self, stream_id: int, data: bytes) -> None:
        if stream_id % 4 != 3 or (self.control is not None and stream_id != self.control):
            return
        raw = self.raw.get(stream_id, b"") + data
        buf = Buffer(data=raw)
        try:
            if buf.pull_uint_var() != 0:  # not the control stream
                self.raw.pop(stream_id, None)
                return
        except BufferReadError:
            self.raw[stream_id] = raw
            return
        self.control = stream_id
        at = buf.tell()
        while True:
            try:
                ftype, size = buf.pull_uint_var(), buf.pull_uint_var()
                payload = buf.pull_bytes(size)
            except BufferReadError:
                break
            at = buf.tell()
            if ftype == FrameType.GOAWAY:
                self.goaway_id = Buffer(data=payload).pull_uint_var()
        # Keep the stream-type byte in front of what is not parsed yet.
        self.raw[stream_id] = b"\x00" + raw[at:]


class _Protocol(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = _H3(self._quic)
        self.h3.head_streams = set()
        self.responses: Dict[int, Response] = {}
        self.done: Dict[int, asyncio.Event] = {}
        self.terminated: Optional[ConnectionTerminated] = None
        self.control = ControlReader()

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, StreamDataReceived):
            self.control.feed(event.stream_id, event.data)
        if isinstance(event, ConnectionTerminated):
            self.terminated = event
            for ev in self.done.values():
                ev.set()
        if isinstance(event, StreamReset) and event.stream_id in self.responses:
            self.responses[event.stream_id].reset = event.error_code
            self.done[event.stream_id].set()
        for h3_event in self.h3.handle_event(event):
            self._h3_event(h3_event)

    def _h3_event(self, ev) -> None:
        sid = getattr(ev, "stream_id", None)
        if sid not in self.responses:
            return
        r = self.responses[sid]
        if isinstance(ev, HeadersReceived):
            fields = list(ev.headers)
            status = next((int(v) for n, v in fields if n == b":status"), 0)
            if 100 <= status < 200:
                r.interim.append(status)
            elif r.status == 0:
                r.status = status
                r.headers = [(n, v) for n, v in fields if not n.startswith(b":")]
        elif isinstance(ev, DataReceived):
            r.body += ev.data
        if getattr(ev, "stream_ended", False):
            r.ended = True
            self.done[sid].set()


def _config(ca_file: str, server_name: str) -> QuicConfiguration:
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN,
                               server_name=server_name, max_data=64 << 20,
                               max_stream_data=16 << 20)
    config.load_verify_locations(ca_file)
    return config


class H3Client:
    """One HTTP/3 connection to 127.0.0.1:`port` (UDP), verified against `ca_file`."""

    def __init__(self, port: int, ca_file: str, timeout: float = 20.0,
                 server_name: str = "localhost"):
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="h3-client")
        self._thread.start()
        self._closing: Optional[asyncio.Event] = None
        self._ready: "asyncio.Future[_Protocol]" = self._call(
            self._open(port, _config(ca_file, server_name)), wait=False)
        self.proto: _Protocol = self._ready.result(timeout)

    def _call(self, coro, wait: bool = True):
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result(self.timeout) if wait else fut

    async def _open(self, port: int, config: QuicConfiguration) -> _Protocol:
        ready: "asyncio.Future[_Protocol]" = self._loop.create_future()
        self._closing = asyncio.Event()

        async def hold():
            try:
                async with connect("127.0.0.1", port, configuration=config,
                                   create_protocol=_Protocol, wait_connected=True) as proto:
                    ready.set_result(proto)
                    await self._closing.wait()
            except BaseException as e:  # the handshake failed: the test hears of it
                if not ready.done():
                    ready.set_exception(e)

        self._holder = asyncio.ensure_future(hold())
        return await ready

    # -- requests -------------------------------------------------------------------------
    async def _request(self, method: str, path: str, headers: Headers, body: Optional[bytes],
                       authority: str) -> int:
        p = self.proto
        sid = p._quic.get_next_available_stream_id()
        p.responses[sid] = Response()
        p.done[sid] = asyncio.Event()
        fields = [(b":method", method.encode()), (b":scheme", b"https"),
                  (b":authority", authority.encode()), (b":path", path.encode())]
        fields += [(n.lower().encode(), v.encode()) for n, v in headers]
        if method == "HEAD":
            p.h3.head_streams.add(sid)
        p.h3.send_headers(sid, fields, end_stream=body is None)
        if body is not None:
            p.h3.send_data(sid, body, end_stream=True)
        p.transmit()
        return sid

    def request(self, method: str, path: str, headers: Headers = (),
                body: Optional[bytes] = None, authority: str = "localhost") -> int:
        """Open a request stream; its id."""
        return self._call(self._request(method, path, headers, body, authority))

    async def _wait(self, sid: int) -> Response:
        await self.proto.done[sid].wait()
        return self.proto.responses[sid]

    def response(self, sid: int) -> Response:
        """The stream's whole answer (or its reset), waiting at most the client's timeout."""
        return self._call(asyncio.wait_for(self._wait(sid), self.timeout))

    def get(self, path: str, headers: Headers = ()) -> Response:
        return self.response(self.request("GET", path, headers))

    def send_raw_headers(self, fields: List[Tuple[bytes, bytes]]) -> int:
        """A request stream with exactly these fields (pseudo-headers included)."""
        async def send() -> int:
            p = self.proto
            sid = p._quic.get_next_available_stream_id()
            p.responses[sid] = Response()
            p.done[sid] = asyncio.Event()
            p.h3.send_headers(sid, fields, end_stream=True)
            p.transmit()
            return sid
        return self._call(send())

    @property
    def goaway(self) -> bool:
        return self.proto.h3.goaway

    @property
    def goaway_id(self) -> Optional[int]:
        """The stream id of the server's last GOAWAY: the first request it will not serve."""
        return self.proto.control.goaway_id

    @property
    def terminated(self) -> Optional[ConnectionTerminated]:
        return self.proto.terminated

    def close(self) -> None:
        async def shut():
            if self._closing is not None:
                self._closing.set()
            try:
                await asyncio.wait_for(self._holder, 5)
            except Exception:
                pass
        try:
            self._call(shut())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    def __enter__(self) -> "H3Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["H3Client", "Response", "FrameType"]
