"""Answers which of the standard library's larger modules are loaded in the process serving
it, one name a line (empty: none). A worker is a fork of its master, so the answer covers what
the master imported before forking too."""

import sys

#: Modules the server imports only for the options that need them (`--metrics-bind`, a
#: logging configuration, `worker.tmp`, `static-expires-type`).
WATCHED = ("http.client", "http.server", "email", "ssl", "socketserver", "logging.config",
           "tempfile", "mimetypes")


def app(environ, start_response):
    body = "\n".join(m for m in WATCHED if m in sys.modules).encode()
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
