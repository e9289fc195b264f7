#!/usr/bin/env python3

import os
import sys

from mysite.marks import mark

loglevel = "info"
bind = f"{os.environ['HOST']}:{os.environ['PORT']}"
worker_tmp_dir = "/dev/shm"
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", 1000))
max_requests_jitter = int(os.environ.get("GUNICORN_MAX_REQUESTS_JITTER", 50))


def on_starting(server):
    print(
        """
\x1b[1;34m ANALYTICS \x1b[0m
 Web server starting
""",
        flush=True,
    )


def when_ready(server):
    mark("when_ready", pid=server.pid, workers=server.num_workers,
         address=[list(a) if isinstance(a, tuple) else a for a in server.address])


def post_worker_init(worker):
    # per-worker metrics exporter, as analytics platforms start one
    mark("post_worker_init", pid=worker.pid, age=worker.age)


def worker_exit(server, worker):
    mark("worker_exit", pid=worker.pid)
