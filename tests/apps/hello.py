"""The smallest app: 200 with Content-Length. "/" answers ``Hello, World!``; any other path
answers ``path=<PATH_INFO>`` so tests can tell pipelined responses apart and check their order."""


def app(environ, start_response):
    path = environ["PATH_INFO"]
    body = b"Hello, World!" if path == "/" else ("path=" + path).encode("latin-1")
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
