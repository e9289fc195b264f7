"""Helpers for fixture apps to tell the test what happened and to wait for the test.

State lives in files under $SGTEST_STATE_DIR (a private directory per server process, made by
tests/conftest.py):

- ``mark(name, line)`` appends a line to ``mark-NAME`` (the test reads it with
  ``server.marks(name)`` / ``server.wait_marks(name, count)``);
- ``wait_gate(name)`` blocks until the test creates ``gate-NAME`` (``server.open_gate(name)``),
  bounded so a broken test never wedges a server thread forever.
"""

import os
import tempfile
import threading
from urllib.parse import parse_qs

from tests.helpers import WaitTimeout, wait_for

STATE_DIR = os.environ.get("SGTEST_STATE_DIR") or tempfile.gettempdir()
GATE_TIMEOUT = 15.0
_lock = threading.Lock()


def mark(name: str, line: str = "") -> None:
    with _lock:
        with open(os.path.join(STATE_DIR, "mark-" + name), "a") as f:
            f.write(line + "\n")


def wait_gate(name: str, timeout: float = GATE_TIMEOUT) -> bool:
    path = os.path.join(STATE_DIR, "gate-" + name)
    try:
        wait_for(lambda: os.path.exists(path), f"the gate {name!r}", timeout, interval=0.01)
    except WaitTimeout:
        return False
    return True


def query(environ) -> dict:
    """The query string as a dict of first values."""
    return {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
