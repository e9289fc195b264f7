"""For --capture-output: each request prints ``PRINTED-BY-APP PATH`` to standard output (no
flush) and ``STDERR-BY-APP PATH`` to standard error, then answers 200 ``ok``."""

import sys


def app(environ, start_response):
    print("PRINTED-BY-APP", environ["PATH_INFO"])
    print("STDERR-BY-APP", environ["PATH_INFO"], file=sys.stderr, flush=True)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
