"""S6/S7 app: hello world, `[b"Hello, World!"]` with Content-Length (the classic comparison)."""

BODY = b"Hello, World!"
HEADERS = [("Content-Type", "text/plain"), ("Content-Length", str(len(BODY)))]


def app(environ, start_response):
    start_response("200 OK", HEADERS)
    return [BODY]


application = app
