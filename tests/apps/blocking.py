"""Apps that block their thread, to check that blocking calls do not stop the server.

- ``/slow?token=T&gate=G``: records ``T`` under mark ``started``, blocks until the test opens
  gate ``G`` (default ``slow``; bounded), records ``T`` under ``finished``, answers ``slow T``.
  A gate instead of a fixed sleep makes "while they are in flight" exact.
- ``/sleep?t=S&token=T``: records ``T`` under ``sleep-started``, sleeps S seconds (default 0.5),
  answers ``slept T``.
- ``/spin?ms=N``: computes for N milliseconds of its thread's CPU time (default 20), answers
  ``spun``.
- ``/fast``: answers ``fast`` at once.
"""

import time

from tests.apps._state import mark, query, wait_gate


def _answer(start_response, body: bytes):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def app(environ, start_response):
    path = environ["PATH_INFO"]
    q = query(environ)
    token = q.get("token", "-")
    if path == "/slow":
        mark("started", token)
        opened = wait_gate(q.get("gate", "slow"))
        mark("finished", token)
        return _answer(start_response, f"slow {token} gate={'open' if opened else 'TIMEOUT'}".encode())
    if path == "/sleep":
        mark("sleep-started", token)
        time.sleep(float(q.get("t", "0.5")))
        return _answer(start_response, f"slept {token}".encode())
    if path == "/spin":
        until = time.thread_time() + float(q.get("ms", "20")) / 1000
        while time.thread_time() < until:
            pass
        return _answer(start_response, b"spun")
    return _answer(start_response, b"fast")
