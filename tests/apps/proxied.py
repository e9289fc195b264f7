"""For the tests behind a real nginx (test_behind_nginx.py):

- ``/env``: the environ keys a proxy may change, as JSON (HEAD: the same head, no body);
- ``/body``: reads ``wsgi.input`` whole, answers ``LENGTH SHA256``;
- ``/stream?token=T``: yields ``first T``, waits for gate ``next-T``, yields ``second T``;
- ``/file?size=N``: a regular file of N deterministic bytes through ``wsgi.file_wrapper``.
"""

import hashlib
import json
import os

from tests.apps._state import STATE_DIR, query, wait_gate

KEYS = ("REMOTE_ADDR", "REMOTE_PORT", "wsgi.url_scheme", "HTTP_HOST", "SERVER_NAME",
        "SERVER_PORT", "PATH_INFO", "QUERY_STRING", "REQUEST_URI", "REQUEST_METHOD",
        "CONTENT_LENGTH", "SERVER_PROTOCOL", "HTTP_X_FORWARDED_FOR")


def file_bytes(n):
    return bytes((i * 7 + i // 251) % 256 for i in range(n))


def app(environ, start_response):
    path = environ["PATH_INFO"]
    q = query(environ)
    if path == "/body":
        data = environ["wsgi.input"].read()
        body = f"{len(data)} {hashlib.sha256(data).hexdigest()}".encode()
    elif path == "/stream":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return _stream(q.get("token", "-"))
    elif path == "/file":
        size = int(q.get("size", "0"))
        name = os.path.join(STATE_DIR, f"file-{size}")
        if not os.path.exists(name):
            with open(name, "wb") as f:
                f.write(file_bytes(size))
        start_response("200 OK", [("Content-Type", "application/octet-stream"),
                                  ("Content-Length", str(size))])
        return environ["wsgi.file_wrapper"](open(name, "rb"))
    else:
        body = json.dumps({k: environ.get(k) for k in KEYS}).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def _stream(token):
    yield f"first {token}\n".encode()
    wait_gate("next-" + token)
    yield f"second {token}\n".encode()
