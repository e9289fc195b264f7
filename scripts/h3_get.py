"""Fetch a URL over HTTP/3 with aioquic (`requirements-dev.txt`) and print the exchange: where
curl is built without HTTP/3 (Debian's is), this shows what a QUIC client gets from
`--http3`. The QUIC connection is aioquic's, independent of the server's quinn and h3.

    .venv/bin/python scripts/h3_get.py https://localhost:8443/ --ca tls/ca.pem [-v]

`-v` adds the QUIC connection's own events (handshake, ALPN, the TLS cipher suite). Exit
status 0 when the answer's status is below 400.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from urllib.parse import urlsplit

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import HandshakeCompleted


class _Client(QuicConnectionProtocol):
    verbose = False  # set before the connection is made: its handshake is reported as it ends

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.done = asyncio.get_running_loop().create_future()
        self.status = 0

    def quic_event_received(self, event) -> None:
        if isinstance(event, HandshakeCompleted) and self.verbose:
            print(f"* QUIC handshake done: ALPN {event.alpn_protocol}, "
                  f"session resumed {event.session_resumed}, early data {event.early_data_accepted}")
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                for name, value in ev.headers:
                    if name == b":status":
                        self.status = int(value)
                        print(f"< HTTP/3 {value.decode()}")
                    else:
                        print(f"< {name.decode()}: {value.decode()}")
                print("<")
            elif isinstance(ev, DataReceived):
                sys.stdout.write(ev.data.decode("utf-8", "replace"))
            if getattr(ev, "stream_ended", False) and not self.done.done():
                self.done.set_result(None)


async def fetch(url: str, ca: str | None, verbose: bool, insecure: bool) -> int:
    u = urlsplit(url)
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    if ca:
        config.load_verify_locations(ca)
    if insecure:
        import ssl
        config.verify_mode = ssl.CERT_NONE
    port = u.port or 443
    _Client.verbose = verbose
    async with connect(u.hostname, port, configuration=config, create_protocol=_Client) as c:
        path = (u.path or "/") + (f"?{u.query}" if u.query else "")
        headers = [(b":method", b"GET"), (b":scheme", b"https"),
                   (b":authority", u.netloc.encode()), (b":path", path.encode()),
                   (b"user-agent", b"aioquic h3_get.py")]
        print(f"> GET {path} HTTP/3")
        print(f"> :authority: {u.netloc}")
        sid = c._quic.get_next_available_stream_id()
        c.h3.send_headers(sid, headers, end_stream=True)
        c.transmit()
        await asyncio.wait_for(c.done, 20)
        return c.status


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--ca", help="the CA file that signed the server's certificate")
    ap.add_argument("-k", "--insecure", action="store_true", help="do not verify the certificate")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    status = asyncio.run(fetch(a.url, a.ca, a.verbose, a.insecure))
    return 0 if 0 < status < 400 else 1


if __name__ == "__main__":
    sys.exit(main())
