"""The corpus's Django-shaped project: `mysite.wsgi` means `mysite.wsgi:application`. It answers
`PATH pid=PID env=VALUE` (VALUE: the variable the query string names, as the serving process
sees it), so a check can tell which worker served and what raw_env set."""

import os


def application(environ, start_response):
    name = environ.get("QUERY_STRING", "")
    body = (f"{environ['PATH_INFO']} pid={os.getpid()}"
            f" env={os.environ.get(name, '-') if name else '-'}").encode()
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
