"""For --timeout tests: app calls that get stuck until the test lets them go.

- ``/hang?token=T``: records ``T`` under ``hang-started``, then waits in
  ``wait_for_the_database`` (a name the logged stack must show) until gate ``release-T``, as a
  call stuck in C code would (the ``RequestTimeout`` --timeout raises is waited through); then
  answers 200, or raises with ``&then=raise``.
- ``/stream?token=T``: sends a first block (the head goes with it), then waits the same way.
- ``/read-body?token=T``: reads the request body whole; records how the read ended.
- ``/pid``: the serving process's pid, at once.
"""

import os

from sluicegate import RequestTimeout
from tests.apps._state import mark, query, wait_gate


def wait_for_the_database(token):
    """Wait for gate ``release-T`` as a call stuck in C would: a ``sluicegate.RequestTimeout``
    raised in it (``--timeout`` ends a call that runs Python) is recorded under ``interrupted``
    and waited through, so the call stays stuck until the test lets it go."""
    try:
        wait_gate("release-" + token, timeout=120)
    except RequestTimeout:
        mark("interrupted", token)
        wait_gate("release-" + token, timeout=120)


def app(environ, start_response):
    path = environ["PATH_INFO"]
    q = query(environ)
    token = q.get("token", "-")
    if path == "/hang":
        mark("hang-started", token)
        wait_for_the_database(token)
        mark("hang-returned", token)
        if q.get("then") == "raise":
            raise RuntimeError("late failure after the timeout")
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [f"late answer from {os.getpid()}".encode()]
    if path == "/stream":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return _stream(token)
    if path == "/read-body":
        mark("read-started", token)
        try:
            data = environ["wsgi.input"].read()
            mark("read-ended", f"{token} ok {len(data)}")
        except Exception as e:  # the read fails once the server gives up on the call
            mark("read-ended", f"{token} {type(e).__name__}")
            raise
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"read"]
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def _stream(token):
    yield b"first block"
    mark("hang-started", token)
    wait_for_the_database(token)
    yield b"never seen"
