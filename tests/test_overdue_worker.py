"""A worker told to stop that never ends is killed by its master once its time is up
(``--drain-delay`` + ``--graceful-timeout`` and a grace of a few seconds), as gunicorn's master
kills a worker past ``graceful_timeout``: a worker that ignores the stop (here its SIGTERM
disposition set to ignore from C) is replaced by a reload and then killed, with a log line,
instead of staying for the master's whole life beside the new workers."""

import signal

from tests.helpers import wait_for
from tests.http_util import get
from tests.test_workers import children


def test_a_retired_worker_that_ignores_its_stop_is_killed_after_the_graceful_timeout(
        start_server):
    srv = start_server("ignores_term", "--workers", "1", "--graceful-timeout", "1")
    (old,) = children(srv.pid)
    r = get(srv.port, "/ignore-term")
    assert (r.status, int(r.body)) == (200, old)
    mark = srv.log_mark()
    srv.signal(signal.SIGHUP)
    srv.wait_log(r"Reload done: 1 new worker\(s\) serving", since=mark, timeout=30)
    srv.wait_log(rf"Worker {old} still running after it was told to stop "
                 r"\(--graceful-timeout 1s\): killed \(SIGKILL\)", since=mark, timeout=60)
    wait_for(lambda: old not in children(srv.pid), "the old worker to be gone", timeout=30,
             context=lambda: f"{children(srv.pid)}\n{srv.log_text()}")
    (new,) = children(srv.pid)
    assert new != old
    assert int(get(srv.port, "/").body) == new
    assert srv.alive()
