"""``/big?mb=N``: a fresh N MB ``bytes`` body (its memory touched, so it is resident), returned
as a one-element list; the server sends it from the object's own buffer. ``&times=K`` returns
the same object K times (a body of K × N MB that costs N MB of memory)."""

from tests.apps._state import query


def app(environ, start_response):
    q = query(environ)
    n = int(q.get("mb", "1")) * 1024 * 1024
    times = int(q.get("times", "1"))
    body = b"x" * n
    start_response("200 OK", [("Content-Type", "application/octet-stream"),
                              ("Content-Length", str(n * times))])
    return [body] * times
