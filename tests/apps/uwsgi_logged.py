"""An app whose requests are logged by real uWSGI and by sluicegate alike (the same module
runs under both: `uwsgi` is uWSGI's own there, sluicegate's under --uwsgi-module here).

/missing  404 with a short body
/post     reads the request body, answers its length
/late     a generator body that sets the log variable `userid` from ?u= while it is iterated,
          and `late` in its close()
other     200 with two headers; sets the log variable `userid` from ?u=
"""


def app(environ, start_response):
    import uwsgi

    path = environ["PATH_INFO"]
    query = environ.get("QUERY_STRING", "")
    if path == "/late":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return _late(query[2:])
    if query.startswith("u="):
        uwsgi.set_logvar("userid", query[2:])
    if path == "/missing":
        body = b"not here"
        start_response("404 Not Found", [("Content-Type", "text/plain"),
                                         ("Content-Length", str(len(body)))])
        return [body]
    if path == "/post":
        n = int(environ.get("CONTENT_LENGTH") or 0)
        body = str(len(environ["wsgi.input"].read(n))).encode()
    else:
        body = b"hello, uwsgi log\n"
    start_response("200 OK", [("Content-Type", "text/plain"), ("X-Served-By", "test"),
                              ("Content-Length", str(len(body)))])
    return [body]


class _late:
    """A body whose iteration and close() run after the app returned."""

    def __init__(self, user):
        self.user = user

    def __iter__(self):
        import uwsgi

        yield b"late "
        uwsgi.set_logvar("userid", self.user)
        yield b"body\n"

    def close(self):
        import uwsgi

        uwsgi.set_logvar("late", "closed")
