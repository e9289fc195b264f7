"""The fault-injection suite's load and its table.

Every fault runs under `Load`: client threads sending requests one after another over keep-alive
connections (a new connection after any failure), each request counted as answered as
expected or failed, with the reason. A test records its row (fault, requests, failed, serving
afterwards) with `record`; the table is printed at the end of the run (`pytest -q tests/faults`),
and written to `$SLUICEGATE_FAULT_TABLE` if set.

(wrk is what the issue named; a Python load counts each request and why it failed, which is
what the suite asserts, and needs nothing the tests do not install.)
"""

from __future__ import annotations

import http.client
import os
import threading
import time
from typing import Callable, List, Tuple, Union

from tests.helpers import wait_for

ROWS: List[Tuple[str, int, int, str, Union[bool, str]]] = []


def record(fault: str, load: "Load", allowed: str, serving: Union[bool, str]) -> None:
    """One row of the table: the fault, the load's counts, what the test allows, and whether
    the server served afterwards (or, for a fault that ends it, a word on how it ended)."""
    ROWS.append((fault, load.ok + len(load.failed), len(load.failed), allowed, serving))


def pytest_terminal_summary(terminalreporter) -> None:
    if not ROWS:
        return
    lines = ["| fault | requests | failed | allowed | serving afterwards |",
             "|---|---:|---:|---|---|"]
    for fault, total, failed, allowed, serving in ROWS:
        after = serving if isinstance(serving, str) else "yes" if serving else "NO"
        lines.append(f"| {fault} | {total} | {failed} | {allowed} | {after} |")
    terminalreporter.write_sep("-", "fault injection")
    for line in lines:
        terminalreporter.write_line(line)
    out = os.environ.get("SLUICEGATE_FAULT_TABLE")
    if out:
        with open(out, "w") as f:
            f.write("\n".join(lines) + "\n")


class Load:
    """`clients` threads sending GET `path` until stopped; a request succeeds when its status
    is 200 and `good(body)` holds. `failed` holds each failure's reason; a request unanswered
    for `timeout` seconds fails with `timed out`."""

    def __init__(self, port: int, clients: int = 4, path: str = "/pid",
                 good: Callable[[bytes], bool] = bytes.isdigit, host: str = "127.0.0.1",
                 timeout: float = 30):
        self.port, self.path, self.good, self.host = port, path, good, host
        self.timeout = timeout
        self.ok = 0
        self.failed: List[str] = []
        self.lock = threading.Lock()
        self.stop_evt = threading.Event()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(clients)]

    def __enter__(self) -> "Load":
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
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

        wait_for(served, f"{n} more requests served", timeout,
                 context=lambda: f"{self.ok} ok, failures {self.failed[-5:]}")

    def _run(self) -> None:
        conn = None
        while not self.stop_evt.is_set():
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
                conn.request("GET", self.path)
                r = conn.getresponse()
                body = r.read()
                if r.status != 200 or not self.good(body):
                    raise AssertionError(f"status {r.status} body {body[:80]!r}")
                with self.lock:
                    self.ok += 1
                if r.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except Exception as e:  # noqa: BLE001 - every failure is counted and shown
                with self.lock:
                    self.failed.append(f"{time.monotonic():.4f} {e!r}")
                if conn is not None:
                    conn.close()
                conn = None
                if isinstance(e, ConnectionRefusedError):
                    self.stop_evt.wait(0.05)  # nobody listens (a killed master): do not spin
