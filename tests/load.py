"""The one load generator of the tests: `Load`, client threads sending GET requests one after
another until stopped, each request counted as answered as expected or failed, with the reason.

Used by the fault-injection suite (tests/faults), the worker, reload and upgrade tests, the TLS
operations tests (through `connect`), the control-socket tests and the tests behind HAProxy.
"""

from __future__ import annotations

import http.client
import threading
import time
from typing import Any, Callable, List, Optional, Set

from tests.helpers import wait_for

#: What a client waits after a refused connection (nobody listens: a killed master), so that it
#: does not spin.
REFUSED_PAUSE = 0.05


class Load:
    """`clients` threads sending GET `path` (/pid) until stopped. A request succeeds when its
    status is 200 and `good(body)` holds (default: a pid's digits for /pid, any body otherwise);
    `ok` counts successes, `failed` holds each failure's time and reason, `pids` the processes
    that answered /pid. With `keep_alive` a connection carries requests until the server says
    `Connection: close` or a request fails; without it each request has a new one. `connect`
    makes each connection (plain HTTP to `host`:`port` if not given; the TLS tests pass an
    `HTTPSConnection` maker); a request unanswered for `timeout` seconds fails."""

    def __init__(self, port: int, clients: int = 4, path: str = "/pid",
                 good: Optional[Callable[[bytes], bool]] = None, keep_alive: bool = True,
                 connect: Optional[Callable[[], Any]] = None, host: str = "127.0.0.1",
                 timeout: float = 30):
        self.path, self.keep_alive = path, keep_alive
        self.good = good or (bytes.isdigit if path == "/pid" else (lambda body: True))
        self.connect = connect or (
            lambda: http.client.HTTPConnection(host, port, timeout=timeout))
        self.ok = 0
        self.failed: List[str] = []
        self.pids: Set[int] = set()
        self.lock = threading.Lock()
        self.stop_evt = threading.Event()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(clients)]

    def __enter__(self) -> "Load":
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_evt.set()
        for t in self.threads:
            t.join(30)

    def wait_for(self, n: int, timeout: float = 30) -> None:
        """Until `n` more requests succeeded (bounded)."""
        with self.lock:
            target = self.ok + n

        def served() -> bool:
            with self.lock:
                return self.ok >= target

        wait_for(served, f"{n} more requests served (load stalled?)", timeout,
                 context=lambda: f"{self.ok} ok, {len(self.failed)} failures, first "
                                 f"{self.failed[:3]}, last {self.failed[-3:]}")

    def _run(self) -> None:
        conn = None
        while not self.stop_evt.is_set():
            try:
                if conn is None:
                    conn = self.connect()
                conn.request("GET", self.path)
                r = conn.getresponse()
                body = r.read()
                if r.status != 200 or not self.good(body):
                    raise AssertionError(f"status {r.status} body {body[:80]!r}")
                with self.lock:
                    self.ok += 1
                    if self.path == "/pid":
                        self.pids.add(int(body))
                if not self.keep_alive or r.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except Exception as e:  # noqa: BLE001 - every failure is counted and shown
                with self.lock:
                    self.failed.append(f"{time.monotonic():.4f} {e!r}")
                if conn is not None:
                    conn.close()
                conn = None
                if isinstance(e, ConnectionRefusedError):
                    self.stop_evt.wait(REFUSED_PAUSE)
