"""gunicorn's server hooks, for tests/test_hooks.py (`--hooks tests.apps.hooks`): each hook
appends one line to the file $SGTEST_HOOKS_FILE (it outlives the server's state directory, so
on_exit can be read): ``NAME PID`` then what it was given (the server's pid,
the worker's pid, the request's method and path, the response's status). The hook named in
$SGTEST_HOOK_RAISES raises instead, after recording its line.
"""

import os



def _record(name, *fields):
    with open(os.environ["SGTEST_HOOKS_FILE"], "a") as f:
        f.write(" ".join([name, str(os.getpid())] + [str(x) for x in fields]) + "\n")
    if os.environ.get("SGTEST_HOOK_RAISES") == name:
        raise RuntimeError(f"{name} was told to fail")


def on_starting(server):
    _record("on_starting", server.pid)


def when_ready(server):
    _record("when_ready", server.pid, server.num_workers)


def on_reload(server):
    _record("on_reload", server.pid)


def post_fork(server, worker):
    _record("post_fork", server.pid, worker.pid)


def post_worker_init(worker):
    _record("post_worker_init", worker.ppid, worker.pid)


def worker_exit(server, worker):
    _record("worker_exit", server.pid, worker.pid)


def child_exit(server, worker):
    _record("child_exit", server.pid, worker.pid)


def pre_request(worker, req):
    headers = dict(req.headers)
    _record("pre_request", worker.pid, req.method, req.path, req.query,
            headers.get("X-TOKEN", "-"))


def post_request(worker, req, environ, resp):
    _record("post_request", worker.pid, req.method, req.path, resp.status_code)


def on_exit(server):
    _record("on_exit", server.pid)
