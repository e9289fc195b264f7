"""The fault-injection suite's table.

Every fault runs under `Load` (tests/load.py): client threads sending requests one after another over keep-alive
connections (a new connection after any failure), each request counted as answered as
expected or failed, with the reason. A test records its row (fault, requests, failed, serving
afterwards) with `record`; the table is printed at the end of the run (`pytest -q tests/faults`),
and written to `$SLUICEGATE_FAULT_TABLE` if set.

(wrk is what the issue named; a Python load counts each request and why it failed, which is
what the suite asserts, and needs nothing the tests do not install.)
"""

from __future__ import annotations

import os
from typing import List, Tuple, Union

from tests.load import Load

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
