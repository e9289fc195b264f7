"""start_response's exc_info rules (PEP 3333).

- ``/twice_without_exc_info``: calls start_response twice without exc_info: the second call
  must raise (the app lets it propagate, so the client gets a 500).
- ``/replace_before_sent``: start_response("200 OK", [X-First]), then, handling an exception,
  start_response("503 Replaced", [X-Second], exc_info) before anything was sent: the client
  must get the 503 with X-Second only and the body ``replaced``.
- ``/after_sent``: no Content-Length; yields a block (headers are now sent), then calls
  start_response with exc_info: the call must re-raise the original exception. The app records
  under mark ``after_sent`` whether it did (``reraised`` / ``returned``), then lets it
  propagate: the response must end truncated.
"""

import sys

from tests.apps._state import mark


class Planned(Exception):
    pass


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/twice_without_exc_info":
        start_response("200 OK", [("Content-Type", "text/plain")])
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"second start_response accepted"]
    if path == "/replace_before_sent":
        start_response("200 OK", [("Content-Type", "text/plain"), ("X-First", "1")])
        try:
            raise Planned("replace me")
        except Planned:
            start_response("503 Replaced", [("Content-Type", "text/plain"),
                                            ("Content-Length", "8"), ("X-Second", "1")],
                           sys.exc_info())
        return [b"replaced"]
    if path == "/after_sent":
        start_response("200 OK", [("Content-Type", "text/plain")])

        def gen():
            yield b"first block"
            try:
                raise Planned("after headers were sent")
            except Planned:
                try:
                    start_response("500 Too Late", [("Content-Type", "text/plain")],
                                   sys.exc_info())
                except Planned:
                    mark("after_sent", "reraised")
                    raise
                mark("after_sent", "returned")
            yield b"should never be sent"
        return gen()
    start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "0")])
    return []
