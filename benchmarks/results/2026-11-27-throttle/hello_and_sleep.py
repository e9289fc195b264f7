"""Hello world at `/`, and `/sleep`: 50 ms asleep (one call of it puts the server in dispatch
mode, by a takeover)."""
import time


def app(environ, start_response):
    if environ["PATH_INFO"] == "/sleep":
        time.sleep(0.05)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "13")])
    return [b"Hello, World!"]
