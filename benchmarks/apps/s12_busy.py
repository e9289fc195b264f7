"""S12 app: a busy app behind a load balancer. `/cpu?ms=N` computes in pure Python for N ms of
this thread's CPU (the request that keeps the server busy); `/hello` answers at once (the fast
route a user, or a health check on an app route, hits). Static files and the health path are
the server's own (its static feature; sluicegate's `--health-path`)."""

import time
from urllib.parse import parse_qs

HELLO = b"hello"


def _compute(ms: float) -> None:
    end = time.thread_time() + ms / 1000.0
    n = 0
    while time.thread_time() < end:
        for i in range(200):
            n += i * i


def app(environ, start_response):
    if environ.get("PATH_INFO") == "/cpu":
        q = parse_qs(environ.get("QUERY_STRING", ""))
        _compute(float(q.get("ms", ["30"])[0]))
        body = b"cpu"
    else:
        body = HELLO
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
