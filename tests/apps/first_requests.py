"""Answers at once with what the environ says (method, QUERY_STRING, body length), except
``/hold``: each marks ``held`` and waits for the gate ``hold``, then the ``HOLDERS`` of them
return together, so that their threads take the requests queued meanwhile at the same moment
(the first with a query string, the first with a body...)."""

import sys
import threading

from tests.apps._state import mark, wait_gate

HOLDERS = 8
_together = threading.Barrier(HOLDERS)

# A thread that waits for the GIL longer than this asks its holder to let it go, and the holder
# then waits until another thread took it, even when it lets the GIL go only for a moment (a
# call into C that detaches): the threads of concurrent requests take turns all the time.
sys.setswitchinterval(1e-6)


def app(environ, start_response):
    if environ["PATH_INFO"] == "/hold":
        mark("held", "started")
        wait_gate("hold")
        _together.wait(timeout=15)
    length = int(environ.get("CONTENT_LENGTH") or 0)
    got = environ["wsgi.input"].read(length) if length else b""
    body = "{} {} q={} n={} sw={}".format(
        environ["REQUEST_METHOD"], environ["PATH_INFO"], environ["QUERY_STRING"], len(got),
        environ.get("SERVER_SOFTWARE", "")).encode("latin-1")
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
