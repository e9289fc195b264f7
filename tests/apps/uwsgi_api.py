"""An app written for uWSGI: it imports `uwsgi` and `uwsgidecorators` at import time (so it
loads only under --uwsgi-module) and answers what the module tells it.

/        JSON: worker_id(), numproc, masterpid(), opt, version, hostname, this pid, the
         worker ids @postfork functions saw run in this process before the first request, and
         [request_id(), total_requests()]
/logvar  sets the log variables `user` (from ?u=) and `route` with uwsgi.set_logvar
/cache   calls uwsgi.cache_get (not supported): the error's text
/reload  calls uwsgi.reload()
"""

import json
import os

import uwsgi
from uwsgidecorators import postfork

POSTFORK = []


@postfork
def _started():
    POSTFORK.append(uwsgi.worker_id())


def _text(v):
    if isinstance(v, list):
        return [_text(x) for x in v]
    return v.decode() if isinstance(v, bytes) else v


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/logvar":
        uwsgi.set_logvar("user", environ.get("QUERY_STRING", "")[2:])
        uwsgi.set_logvar("route", "logvar")
        body = b"ok"
    elif path == "/cache":
        try:
            uwsgi.cache_get("x")
            body = b"no error"
        except Exception as e:
            body = f"{type(e).__name__}: {e}".encode()
    elif path == "/reload":
        body = json.dumps(uwsgi.reload()).encode()
    else:
        body = json.dumps({
            "worker_id": uwsgi.worker_id(), "numproc": uwsgi.numproc,
            "masterpid": uwsgi.masterpid(), "opt": {k: _text(v) for k, v in uwsgi.opt.items()},
            "version": uwsgi.version.decode(), "hostname": uwsgi.hostname.decode(),
            "pid": os.getpid(), "postfork": POSTFORK,
            "requests": [uwsgi.request_id(), uwsgi.total_requests()],
        }).encode()
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
