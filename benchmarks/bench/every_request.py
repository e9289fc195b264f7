"""Latency of every request a set of keep-alive clients sent, answered in the run or not.

Why: `wrk` reports the latency of the requests answered before its run ends. A server that serves
a few connections and leaves the others waiting (uWSGI's `--http11-socket` with 8 threads and 100
keep-alive clients: each thread keeps one connection while it sends) shows a low p99 that way,
because the requests it left waiting are never answered in the run and never counted. Measured
(S13, Django with kept connections, 100 clients, 3 s): wrk's p99 for uWSGI was 53 ms, while
clients that waited the whole run had their first answer after 3.15 s.

`run(port, path, expect, clients, seconds)`: `clients` connections, each sending `GET path`
(HTTP/1.1, keep-alive) one after another for `seconds`, then no new request; the requests still
waiting get up to `DRAIN_S` more to be answered, and count with their whole wait (those still
unanswered then count as `DRAIN_S` plus the run). Every body is compared with `expect`.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass

# How long the requests still waiting when the run ends get to be answered.
DRAIN_S = 10.0


@dataclass
class Result:
    requests: int  # answered
    wrong: int  # answered with another status or body
    p50_us: float
    p99_us: float
    max_us: float
    unanswered: int  # still waiting after DRAIN_S
    fewest: int  # the fewest requests answered on one connection during the run
    most: int


async def _client(port: int, path: str, expect: bytes, until: float, out: dict) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    try:
        while time.monotonic() < until:
            sent = time.monotonic()
            out["waiting"][id(writer)] = sent
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await reader.readexactly(length)
            del out["waiting"][id(writer)]
            out["latency"].append(time.monotonic() - sent)
            out["answers"][id(writer)] = out["answers"].get(id(writer), 0) + (time.monotonic() < until)
            if not head.startswith(b"HTTP/1.1 200") or body != expect:
                out["wrong"] += 1
    finally:
        writer.close()


async def _run(port: int, path: str, expect: bytes, clients: int, seconds: float) -> Result:
    out = {"latency": [], "waiting": {}, "answers": {}, "wrong": 0}
    until = time.monotonic() + seconds
    tasks = [asyncio.create_task(_client(port, path, expect, until, out)) for _ in range(clients)]
    done, pending = await asyncio.wait(tasks, timeout=seconds + DRAIN_S)
    for t in pending:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    unanswered = len(out["waiting"])
    lat = out["latency"] + [seconds + DRAIN_S] * unanswered
    q = statistics.quantiles(lat, n=100) if len(lat) > 1 else lat * 99
    counts = list(out["answers"].values()) + [0] * (clients - len(out["answers"]))
    return Result(len(out["latency"]), out["wrong"], q[49] * 1e6, q[98] * 1e6, max(lat) * 1e6, unanswered,
                  min(counts), max(counts))


def run(port: int, path: str, expect: bytes, clients: int, seconds: float) -> Result:
    """Run the clients against 127.0.0.1:`port` (see the module doc)."""
    return asyncio.run(_run(port, path, expect, clients, seconds))
