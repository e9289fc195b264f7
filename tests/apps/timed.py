"""For access log timings: ``/sleep?s=S`` sleeps S seconds then answers; ``/big?mb=N`` answers N
MB of ``bytes`` (fresh each time); anything else answers ``ok``."""

import time

from tests.apps._state import query


def app(environ, start_response):
    q = query(environ)
    path = environ["PATH_INFO"]
    if path == "/sleep":
        time.sleep(float(q.get("s", "0.2")))
        body = b"slept"
    elif path == "/big":
        body = b"x" * (int(q.get("mb", "1")) * 1024 * 1024)
    else:
        body = b"ok"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
