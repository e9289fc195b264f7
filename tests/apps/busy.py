"""An app whose requests compute in pure Python, for the scheduler under CPU-heavy load (the
busy app behind a load balancer's health checks).

- ``/cpu?ms=N&token=T``: records ``T`` under mark ``cpu-started``, computes until this thread
  has used N ms of CPU (default 40: shorter than the watchdog's wall-clock takeover, so only
  the preemption of a call that computes while others wait can get other requests served),
  records ``T`` under ``cpu-finished``, answers ``cpu T``.
- ``/hello``: answers ``hello`` at once (the fast route a check or a user hits).
"""

import time

from tests.apps._state import mark, query


def _answer(start_response, body: bytes):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def _compute(ms: float) -> int:
    end = time.thread_time() + ms / 1000.0
    n = 0
    while time.thread_time() < end:
        for i in range(200):
            n += i * i
    return n


def app(environ, start_response):
    q = query(environ)
    if environ["PATH_INFO"] == "/cpu":
        token = q.get("token", "-")
        mark("cpu-started", token)
        _compute(float(q.get("ms", "40")))
        mark("cpu-finished", token)
        return _answer(start_response, f"cpu {token}".encode())
    return _answer(start_response, b"hello")
