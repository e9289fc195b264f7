"""For gunicorn's access log atoms, served the same by gunicorn and sluicegate:
``?status=N`` answers with that status, ``?size=N`` with N bytes of body; every answer sets
``X-Out`` (to the query's ``out``, or ``none``) and ``Content-Type``, and reads the body;
``?sleep=S`` waits S seconds first. It sets two environ variables of its own for the log:
``X_APP_TAG`` (text with a quote) and ``x_app_count`` (a number)."""

import time

from tests.apps._state import query


def app(environ, start_response):
    q = query(environ)
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if length:
        environ["wsgi.input"].read(length)
    time.sleep(float(q.get("sleep", "0")))
    environ["X_APP_TAG"] = 'tag "%s"' % environ["PATH_INFO"]
    environ["x_app_count"] = len(q)
    status = int(q.get("status", "200"))
    body = b"x" * int(q.get("size", "5"))
    reasons = {200: "OK", 201: "Created", 404: "Not Found", 500: "Internal Server Error"}
    start_response(f"{status} {reasons.get(status, 'Other')}", [
        ("Content-Type", "text/plain; charset=utf-8"),
        ("X-Out", q.get("out", "none")),
        ("Content-Length", str(len(body))),
    ])
    return [body]
