"""Two apps for uWSGI's `mount`s (and a third for `module` beside them): each answers its name,
SCRIPT_NAME and PATH_INFO as `NAME SCRIPT_NAME PATH_INFO`, so a test sees which app got a
request and with which paths, under sluicegate-uwsgi and real uWSGI alike."""


def _named(name):
    def app(environ, start_response):
        body = f"{name} {environ.get('SCRIPT_NAME', '')!r} {environ['PATH_INFO']!r}".encode()
        start_response("200 OK", [("Content-Type", "text/plain"),
                                  ("Content-Length", str(len(body)))])
        return [body]
    return app


app_a = _named("a")
app_b = _named("b")
app_root = _named("root")
