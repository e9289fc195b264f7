"""Several fixture apps, each wrapped in ``wsgiref.validate.validator``, routed by PATH_INFO
(the wrapped app sees the same PATH_INFO and answers its own route of that name).

- ``/hello``            hello.app
- ``/environ``          echo_environ.app
- ``/chunks``           streaming.app (blocks without Content-Length)
- ``/empty_blocks``     streaming.app
- ``/body``             reads wsgi.input with read(n), readline(n) and iteration (the validator
                        only allows read with a size argument) and answers the length
- ``/write_then_iter``  write_callable.app
- ``/replace_before_sent`` exc_info.app
- ``/ok``               close_tracking.app (an iterable with close())

The validator raises AssertionError (or warns with WSGIWarning) when either side breaks PEP 3333;
the tests check for 200s and that no AssertionError reached the error log.
"""

from wsgiref.validate import validator

from tests.apps import close_tracking, echo_environ, exc_info, hello, streaming, write_callable


def _body(environ, start_response):
    inp = environ["wsgi.input"]
    q = environ.get("QUERY_STRING", "")
    if q == "mode=readline":
        data = b"".join(iter(lambda: inp.readline(1000), b""))
    elif q == "mode=iter":
        data = b"".join(line for line in inp)
    else:
        data = b"".join(iter(lambda: inp.read(4096), b""))
    body = f"len={len(data)}".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


ROUTES = {
    "/hello": validator(hello.app),
    "/environ": validator(echo_environ.app),
    "/chunks": validator(streaming.app),
    "/empty_blocks": validator(streaming.app),
    "/body": validator(_body),
    "/write_then_iter": validator(write_callable.app),
    "/replace_before_sent": validator(exc_info.app),
    "/ok": validator(close_tracking.app),
}


def app(environ, start_response):
    route = ROUTES.get(environ["PATH_INFO"])
    if route is None:
        start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "0")])
        return []
    return route(environ, start_response)
