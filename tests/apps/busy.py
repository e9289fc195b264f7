"""An app whose requests compute in pure Python, for the scheduler under CPU-heavy load (the
busy app behind a load balancer's health checks).

- ``/cpu?ms=N&token=T``: records ``T`` under mark ``cpu-started`` and ``T K`` under
  ``cpu-computing`` (K: how many ``/cpu`` calls compute now, this one included), computes until
  this thread has used N ms of CPU (default 40: shorter than the watchdog's wall-clock
  takeover, so only the preemption of a call that computes while others wait can get other
  requests served), records ``T`` under ``cpu-finished``, answers ``cpu T``.
- ``/hog?token=T&times=K``: records ``T`` under ``hog-started``, holds the GIL for about K × 30
  ms (default 1) in one C call (sorting a list of floats: the interpreter cannot switch
  threads inside it), records ``T`` under ``hog-finished``, answers ``hog T``. A call that waits for the GIL behind it passes the
  admission's long-call mark without computing anything.
- ``/hello``: answers ``hello`` at once (the fast route a check or a user hits).
"""

import random
import threading
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


# About 30 ms to sort on this kind of machine (measured: 300,000 take 57-61 ms).
_RNG = random.Random(7)
_HOG_LIST = [_RNG.random() for _ in range(150_000)]


_computing = 0
_computing_lock = threading.Lock()


def app(environ, start_response):
    q = query(environ)
    if environ["PATH_INFO"] == "/hog":
        token = q.get("token", "-")
        mark("hog-started", token)
        times = int(q.get("times", "1"))
        sorted(_HOG_LIST * times if times > 1 else _HOG_LIST)
        mark("hog-finished", token)
        return _answer(start_response, f"hog {token}".encode())
    if environ["PATH_INFO"] == "/cpu":
        token = q.get("token", "-")
        global _computing
        mark("cpu-started", token)
        with _computing_lock:
            _computing += 1
            mark("cpu-computing", f"{token} {_computing}")
        try:
            _compute(float(q.get("ms", "40")))
        finally:
            with _computing_lock:
                _computing -= 1
        mark("cpu-finished", token)
        return _answer(start_response, f"cpu {token}".encode())
    return _answer(start_response, b"hello")
