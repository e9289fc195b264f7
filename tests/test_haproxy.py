"""A busy server marked DOWN by its load balancer (regression, fixed in eea04a9), reproduced
with a real HAProxy (Debian's package): health checks every 100 ms with `fall 2` and a 300 ms
check timeout, while sixteen clients keep CPU-bound requests running through HAProxy. A healthy
but busy server must never be marked DOWN, and no client may see HAProxy's 503. Checked on an
app route and on the server's own health path. Counts come from HAProxy's `show stat`, not
from timing.
"""

import threading

import pytest

from tests import haproxy_util
from tests.http_util import Conn, request_bytes

pytestmark = pytest.mark.skipif(not haproxy_util.available(), reason="haproxy not installed")

CLIENTS = 16
REQUESTS_EACH = 8
LONG_MS = 40


@pytest.mark.parametrize("check,options", [
    ("/hello", ()),
    ("/healthz", ("--health-path", "/healthz")),
], ids=["app-route-check", "health-path-check"])
def test_busy_server_stays_up_behind_haproxy(start_server, check, options):
    srv = start_server("busy", *options)  # the scheduler's defaults
    proxy = haproxy_util.HAProxy(srv.port, check)
    failures = []

    def client(i: int) -> None:
        try:
            with Conn.open(proxy.port) as c:
                for j in range(REQUESTS_EACH):
                    token = f"c{i}r{j}"
                    c.send(request_bytes("GET", f"/cpu?ms={LONG_MS}&token={token}"))
                    resp = c.read_response()
                    if resp.status != 200 or resp.body != f"cpu {token}".encode():
                        failures.append((token, resp.status, resp.body[:80]))
        except Exception as e:  # a reset from HAProxy is a failed request too
            failures.append((f"c{i}", "exception", repr(e)))

    try:
        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        stats = proxy.stats()
        app, front = stats["app"], stats["FRONTEND"]
        assert failures == [], f"{len(failures)} failed client requests: {failures[:5]}"
        assert int(app["chkdown"] or 0) == 0, (
            f"HAProxy marked the busy server DOWN {app['chkdown']} times "
            f"({app['chkfail']} failed checks)")
        assert int(front["hrsp_5xx"] or 0) == 0
        assert app["status"] == "UP"
    finally:
        proxy.stop()
