"""Answers with one module-level header list, the same objects every time (as health checks and
hello worlds do), which the path can change between requests: `/` answers with it; `/set/V`
replaces its second tuple with ("X-Kept", V) (in place: the same list object); `/add/V`
appends ("X-Added", V); `/bad` puts a value with CR LF in it; `/status/S` answers with the same
list and the status `S OK`; `/reset` puts it back as it was."""

BODY = b"kept"
FIRST = [("Content-Type", "text/plain"), ("X-Kept", "one"), ("Content-Length", str(len(BODY)))]
HEADERS = list(FIRST)
STATUS = "200 OK"


def app(environ, start_response):
    path = environ["PATH_INFO"]
    status = STATUS
    if path.startswith("/set/"):
        HEADERS[1] = ("X-Kept", path[len("/set/"):])
    elif path.startswith("/add/"):
        HEADERS.append(("X-Added", path[len("/add/"):]))
    elif path == "/bad":
        HEADERS[1] = ("X-Kept", "bad\r\nX-Injected: yes")
    elif path.startswith("/status/"):
        status = path[len("/status/"):] + " OK"
    elif path == "/reset":
        HEADERS[:] = FIRST
    start_response(status, HEADERS)
    return [BODY]
