"""For the tests of `--timeout` ending a stuck call (`sluicegate.RequestTimeout`):

- ``/loop?n=I``: computes in pure Python for up to 60 s; its ``finally:`` records ``I`` under
  ``loop-ended``, and how it ended (the exception's name) under ``loop-how``;
- ``/fifo?n=I``: waits in one C call, where Python cannot raise (opening the FIFO ``fifo-I`` in
  the state directory, until the test opens it for writing), then computes as ``/loop`` does;
  records ``I`` under ``fifo-ended`` in its ``finally:``;
- ``/swallow?n=I``: computes, and catches what is raised with ``except Exception`` (which
  ``RequestTimeout``, a BaseException, passes through); records ``I`` under ``swallow-ended``;
- anything else: 200 ``ok`` at once.
"""

import os
import time

from tests.apps._state import STATE_DIR, mark, query

LOOP_SECONDS = 60.0


def compute():
    deadline = time.monotonic() + LOOP_SECONDS
    n = 0
    while time.monotonic() < deadline:
        n += 1
    return n


def wait_in_c(fifo):
    """Block in one C call (opening a FIFO for reading) until the test opens it for writing."""
    os.close(os.open(fifo, os.O_RDONLY))


def app(environ, start_response):
    path = environ["PATH_INFO"]
    n = query(environ).get("n", "-")
    if path == "/loop":
        try:
            compute()
        except BaseException as e:
            mark("loop-how", f"{n} {type(e).__module__}.{type(e).__name__}")
            raise
        finally:
            mark("loop-ended", n)
    elif path == "/fifo":
        fifo = os.path.join(STATE_DIR, "fifo-" + n)
        os.mkfifo(fifo)
        try:
            wait_in_c(fifo)
            compute()
        finally:
            mark("fifo-ended", n)
    elif path == "/swallow":
        try:
            try:
                compute()
            except Exception:
                mark("swallowed", n)
        finally:
            mark("swallow-ended", n)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]
