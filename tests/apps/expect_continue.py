"""``Expect: 100-continue``: the server must send ``100 Continue`` only when the app first reads.

- ``/read?token=T``: records T under mark ``started``, waits for gate ``read-T`` (so the test
  can check nothing was sent yet), records T under ``reading``, reads the whole body and answers
  its length and sha256 as ``len=N sha256=H``.
- ``/noread``: answers 200 ``not read`` without touching wsgi.input.
"""

import hashlib

from tests.apps._state import mark, query, wait_gate


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/read":
        token = query(environ).get("token", "-")
        mark("started", token)
        wait_gate("read-" + token)
        mark("reading", token)
        data = environ["wsgi.input"].read()
        body = f"len={len(data)} sha256={hashlib.sha256(data).hexdigest()}".encode()
    else:
        body = b"not read"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
