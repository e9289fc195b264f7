"""An app that leaks: every ``/leak`` keeps 4 MiB more for the life of its process, and answers
its pid; ``/pid`` answers the pid without leaking."""

import os

_kept = []


def app(environ, start_response):
    if environ["PATH_INFO"] == "/leak":
        _kept.append(bytearray(4 * 1024 * 1024))
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Length", str(len(body)))])
    return [body]
