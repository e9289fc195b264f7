"""An HTTP/3 load for the tests (tests/test_http3_lifecycle.py, tests/faults): `H3Load`, client
connections sending GET requests one after another until stopped, over aioquic (an
implementation independent of the server's), each request counted as answered 200 or failed,
with the reason. It has `Load`'s (tests/load.py) counts, so a fault-table row takes either.

Each client behaves as a browser does with a server that goes away (RFC 9114 §5.2, §4.1.1):
after a GOAWAY it sends nothing more on that connection and opens a new one; a request the
server marked as not processed (its stream reset with `H3_REQUEST_REJECTED`, or a stream at or
above the GOAWAY's id), and a connection refused (`CONNECTION_REFUSED`) before any request,
are retried, and counted (`retried`, by reason). Anything else is a failure: another reset or
close code, a connection closed under a request the server had accepted, or a request
unanswered for `timeout` seconds.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from typing import Counter, List, Optional

from aioquic.asyncio.client import connect

from tests.h3_client import Response, _config, _Protocol
from tests.helpers import wait_for
from tests.load import REFUSED_PAUSE

#: RFC 9114 §8.1, RFC 9000 §20.1.
H3_REQUEST_REJECTED = 0x10B
CONNECTION_REFUSED = 0x2


class _Refused(Exception):
    """A connection closed before any request with a code that says nothing was processed."""


class H3Load:
    """`clients` HTTP/3 connections to 127.0.0.1:`port` (verified against `ca_file`), each
    with `streams` requests in flight (GET `path`, the next one sent when one is answered),
    until stopped. `ok` counts 200 answers whose
    body `good` accepts, `failed` holds each failure (time and reason), `retried` counts the
    retries by reason, `pids` the processes that answered /pid."""

    def __init__(self, port: int, ca_file: str, clients: int = 4, path: str = "/pid",
                 timeout: float = 20, streams: int = 1):
        self.port, self.ca_file, self.path, self.timeout = port, ca_file, path, timeout
        self.ok = 0
        self.failed: List[str] = []
        self.retried: Counter[str] = collections.Counter()
        self.pids = set()
        self.lock = threading.Lock()
        self._clients, self._streams = clients, streams
        self._loop = asyncio.new_event_loop()
        self._stop: Optional[asyncio.Event] = None
        self._thread = threading.Thread(target=self._main, daemon=True, name="h3-load")

    def __enter__(self) -> "H3Load":
        self._thread.start()
        wait_for(lambda: self._stop is not None, "the load's loop", 10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(self.timeout + 30)

    def wait_for(self, n: int, timeout: float = 60) -> None:
        """Until `n` more requests succeeded (bounded)."""
        with self.lock:
            target = self.ok + n
        wait_for(lambda: self.ok >= target, f"{n} more HTTP/3 requests served", timeout,
                 context=lambda: f"{self.ok} ok, {len(self.failed)} failed "
                                 f"{self.failed[:3]}, retried {dict(self.retried)}")

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._stop = asyncio.Event()
        self._loop.run_until_complete(self._all())
        self._loop.close()

    async def _all(self) -> None:
        await asyncio.gather(*(self._client() for _ in range(self._clients)))

    def _fail(self, reason: str) -> None:
        with self.lock:
            self.failed.append(f"{time.monotonic():.4f} {reason}")

    def _retry(self, reason: str) -> None:
        with self.lock:
            self.retried[reason] += 1

    async def _client(self) -> None:
        config = _config(self.ca_file, "localhost")
        while not self._stop.is_set():
            try:
                async with connect("127.0.0.1", self.port, configuration=config,
                                   create_protocol=_Protocol, wait_connected=False) as proto:
                    await self._connection(proto)
            except _Refused as e:
                self._retry(str(e))
                await asyncio.sleep(REFUSED_PAUSE)
            except Exception as e:  # noqa: BLE001 - every failure is counted and shown
                self._fail(f"connection: {e!r}")

    async def _connection(self, proto: _Protocol) -> None:
        try:
            proto.transmit()  # `connect` sends the Initial only when it waits itself
            await asyncio.wait_for(proto.wait_connected(), self.timeout)
        except ConnectionError:
            t = proto.terminated
            if t is not None and t.error_code == CONNECTION_REFUSED:
                raise _Refused("connection refused") from None
            raise
        async def one_stream() -> None:
            while not self._stop.is_set() and not proto.h3.goaway and proto.terminated is None:
                if not await self._request(proto):
                    return
        await asyncio.gather(*(one_stream() for _ in range(self._streams)))

    async def _request(self, proto: _Protocol) -> bool:
        """One request on `proto`; whether the connection can carry another."""
        sid = proto._quic.get_next_available_stream_id()
        proto.responses[sid] = r = Response()
        proto.done[sid] = done = asyncio.Event()
        proto.h3.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"),
                                    (b":authority", b"localhost"),
                                    (b":path", self.path.encode())], end_stream=True)
        proto.transmit()
        try:
            await asyncio.wait_for(done.wait(), self.timeout)
        except asyncio.TimeoutError:
            self._fail(f"stream {sid}: no answer in {self.timeout} s")
            return False
        if r.ended and r.status == 200 and (self.path != "/pid" or bytes(r.body).isdigit()):
            with self.lock:
                self.ok += 1
                if self.path == "/pid":
                    self.pids.add(int(r.body))
            return True
        goaway = proto.control.goaway_id
        if r.reset == H3_REQUEST_REJECTED:
            self._retry("reset H3_REQUEST_REJECTED")
        elif r.reset is None and r.status == 0 and goaway is not None and sid >= goaway:
            self._retry("at or above the GOAWAY's stream")
        elif r.reset is not None:
            self._fail(f"stream {sid}: reset {r.reset:#x}")
        elif r.status == 0 and proto.terminated is not None:
            t = proto.terminated
            self._fail(f"stream {sid}: connection closed {t.error_code:#x} "
                       f"{t.reason_phrase!r} (GOAWAY {goaway})")
        else:
            self._fail(f"stream {sid}: status {r.status} body {bytes(r.body)[:40]!r}")
        return False


__all__ = ["H3Load", "H3_REQUEST_REJECTED", "CONNECTION_REFUSED"]
