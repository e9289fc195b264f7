"""For worker-process tests: ``/pid`` answers the serving process's pid; ``/sleep?t=S&token=T``
records ``T`` under mark ``sleep-started``, sleeps S seconds, answers ``slept T by PID``.
"""

import os
import time

from tests.apps._state import mark, query


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/sleep":
        q = query(environ)
        token = q.get("token", "-")
        mark("sleep-started", token)
        time.sleep(float(q.get("t", "0.5")))
        body = f"slept {token} by {os.getpid()}".encode()
    else:
        body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
