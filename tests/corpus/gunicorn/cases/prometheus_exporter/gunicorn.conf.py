import os

from prometheus_client import multiprocess

from mysite.marks import mark

bind = f"{os.environ['HOST']}:{os.environ['PORT']}"
workers = 2
raw_env = ["PROMETHEUS_MULTIPROC_DIR=prometheus_tmp"]


def when_ready(server):
    mark("when_ready", pid=server.pid)


def child_exit(server, worker):
    multiprocess.mark_process_dead(worker.pid, "prometheus_tmp")
    mark("child_exit", pid=worker.pid)
