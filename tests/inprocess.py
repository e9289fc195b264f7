"""A server started inside the test process, with the pool scheduler, for tests that read its
pool's statistics or what it leaves behind when it stops (descriptors, the app).

``start_pool_server(app, **options)`` binds 127.0.0.1 on a free port, runs the server on a
daemon thread and waits for its pool to run; it returns ``(server, port, thread)``. The caller
stops it with ``server.shutdown()`` and joins the thread (conftest's ``pool_server`` fixture
does both at teardown).
"""

from __future__ import annotations

import threading

from tests.helpers import wait_for


def start_pool_server(app, **options):
    """Start a server for ``app`` (options as ``serve()`` takes them); returns
    ``(server, port, thread)``."""
    from sluicegate.listeners import bind_all
    from sluicegate.resolution import resolve
    from sluicegate.single import SingleServer

    cfg = resolve({"app": app, "bind": "127.0.0.1:0", "scheduler": "pool", **options})
    sockets = bind_all(cfg.bind, cfg.backlog)
    sup = SingleServer(app, cfg, sockets, app_name="pool-test")
    t = threading.Thread(target=sup.run, daemon=True)
    t.start()
    wait_for(lambda: sup._server is not None, "the server to be created", timeout=10,
             interval=0.01)
    wait_for(lambda: "max_runnable" in sup._server.stats, "the server to run (its pool)",
             timeout=10, interval=0.01)
    return sup, sockets[0].port, t
