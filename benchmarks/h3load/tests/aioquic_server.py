"""A small HTTP/3 server on aioquic, to check h3load against an independent implementation.

Routes: `/hello` (13 bytes), `/bytes/N` (N bytes of a fixed pattern), `/sleep` (waits 0.1 s, then
`HelloWorld`), `/sleeping-max` (the most `/sleep` requests ever waiting at once), `/flaky/N` (N bytes, every third answer with one byte changed: a wrong answer
h3load must count), `/status/N` (that status, empty body), POST `/sha256` (the hex SHA-256 of
the request body). Any other path: 404.

    python aioquic_server.py --cert cert.pem --key key.pem --port 4433
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools

from aioquic.asyncio import QuicConnectionProtocol, serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated

PATTERN = bytes(range(256)) * 4096  # 1 MiB
FLAKY = itertools.count()
SLEEPING = {"now": 0, "max": 0}


def pattern(n: int) -> bytes:
    reps, rest = divmod(n, len(PATTERN))
    return PATTERN * reps + PATTERN[:rest]


class H3Server(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3: H3Connection | None = None
        self.requests: dict[int, tuple[str, str, bytearray]] = {}

    def quic_event_received(self, event) -> None:
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                h = dict(ev.headers)
                self.requests[ev.stream_id] = (h[b":method"].decode(), h[b":path"].decode(), bytearray())
                if ev.stream_ended:
                    self.answer(ev.stream_id)
            elif isinstance(ev, DataReceived) and ev.stream_id in self.requests:
                self.requests[ev.stream_id][2].extend(ev.data)
                if ev.stream_ended:
                    self.answer(ev.stream_id)

    def answer(self, sid: int) -> None:
        method, path, body = self.requests.pop(sid)
        if path == "/sleep":
            SLEEPING["now"] += 1
            SLEEPING["max"] = max(SLEEPING["max"], SLEEPING["now"])
            asyncio.get_running_loop().call_later(0.1, self.wake, sid)
            return
        status, out = 200, b""
        if path == "/hello":
            out = b"Hello, World!"
        elif path.startswith("/bytes/"):
            out = pattern(int(path[7:]))
        elif path.startswith("/flaky/"):
            out = bytearray(pattern(int(path[7:])))
            if next(FLAKY) % 3 == 2:
                out[len(out) // 2] ^= 0xFF
            out = bytes(out)
        elif path == "/sleeping-max":
            out = str(SLEEPING["max"]).encode()
        elif path.startswith("/status/"):
            status = int(path[8:])
        elif path == "/sha256" and method == "POST":
            out = hashlib.sha256(body).hexdigest().encode()
        else:
            status = 404
        self.send(sid, status, out)

    def wake(self, sid: int) -> None:
        SLEEPING["now"] -= 1
        self.send(sid, 200, b"HelloWorld")

    def send(self, sid: int, status: int, body: bytes) -> None:
        self.h3.send_headers(sid, [(b":status", str(status).encode()),
                                   (b"content-length", str(len(body)).encode())])
        self.h3.send_data(sid, body, end_stream=True)
        self.transmit()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=4433)
    a = ap.parse_args()
    cfg = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, max_datagram_frame_size=None)
    cfg.load_cert_chain(a.cert, a.key)
    await serve(a.host, a.port, configuration=cfg, create_protocol=H3Server)
    print("ready", flush=True)
    await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main())
