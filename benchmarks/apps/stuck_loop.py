"""The stuck-calls run's app (benchmarks/stuck_calls.py): `/loop` computes in pure Python for
60 s, the endpoint `--timeout` must end; anything else answers at once."""

import time

LOOP_SECONDS = 60.0


def app(environ, start_response):
    if environ.get("PATH_INFO") == "/loop":
        deadline = time.monotonic() + LOOP_SECONDS
        n = 0
        while time.monotonic() < deadline:
            n += 1
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
