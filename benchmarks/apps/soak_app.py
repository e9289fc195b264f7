"""The soak's app (bench/soak.py): every kind of traffic the soak mixes.

- ``/hello``: hello world, keep-alive;
- ``/upload``: reads the body whole, answers its length and sha256;
- ``/stream``: 1 MB in 8 KiB blocks from a generator (chunked);
- ``/big``: 8 MB of ``bytes`` (clients abandon it halfway);
- ``/static/...`` is served by ``--static`` (ranges).
"""

import hashlib

BLOCK = bytes(range(256)) * 32  # 8 KiB
BIG = b"b" * (8 * 1024 * 1024)


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/upload":
        data = environ["wsgi.input"].read()
        body = f"{len(data)} {hashlib.sha256(data).hexdigest()}".encode()
    elif path == "/stream":
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return (BLOCK for _ in range(128))
    elif path == "/big":
        start_response("200 OK", [("Content-Type", "application/octet-stream"),
                                  ("Content-Length", str(len(BIG)))])
        return [bytes(BIG)]  # a fresh object each time, as a real app's would be
    else:
        body = b"Hello, World!"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
