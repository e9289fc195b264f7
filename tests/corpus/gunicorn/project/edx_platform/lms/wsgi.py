"""An app outside the working directory, found through `pythonpath` (as an e-learning
platform's config points gunicorn at its source tree)."""

import os


def application(environ, start_response):
    body = f"lms {environ['PATH_INFO']} pid={os.getpid()}".encode()
    start_response("200 OK", [("Content-Length", str(len(body)))])
    return [body]
