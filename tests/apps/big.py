"""``/big?mb=N``: a fresh N MB ``bytes`` body (its memory touched, so it is resident), returned
as a one-element list; the server sends it from the object's own buffer."""

from tests.apps._state import query


def app(environ, start_response):
    n = int(query(environ).get("mb", "1")) * 1024 * 1024
    body = b"x" * n
    start_response("200 OK", [("Content-Type", "application/octet-stream"),
                              ("Content-Length", str(n))])
    return [body]
