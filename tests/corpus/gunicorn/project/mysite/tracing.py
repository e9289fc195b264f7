"""Per-worker setup a post_fork hook imports from the project (tracing, database pools)."""

from mysite.marks import mark


def setup_tracing(worker_pid, service="mysite"):
    mark("setup_tracing", pid=worker_pid, service=service)
