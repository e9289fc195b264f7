"""An app whose requests are logged by real uWSGI and by sluicegate alike (the same module
runs under both: `uwsgi` is uWSGI's own there, sluicegate's under --uwsgi-module here).

/missing  404 with a short body
/post     reads the request body, answers its length
other     200 with two headers; sets the log variable `userid` from ?u=
"""


def app(environ, start_response):
    import uwsgi

    path = environ["PATH_INFO"]
    query = environ.get("QUERY_STRING", "")
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
