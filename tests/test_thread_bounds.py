"""`--threads auto` (the default) chooses the pool's bounds from the loaded app: a Django app
whose database opens one connection per thread gets 1:48, so a burst cannot ask a stock
PostgreSQL for more connections than it allows; other apps, and Django apps whose
connections come from a bounded pool, get 1:1024; a given `--threads` always wins. The startup
log line says which bounds and why; the server's own counters confirm the bound in force.
"""

import http.client
import re

import pytest


def bounds(srv):
    m = re.search(r"threads (\d+):(\d+) \(([^)]*)\)", srv.log_text())
    assert m, srv.log_text()
    return (int(m.group(1)), int(m.group(2))), m.group(3)


@pytest.mark.parametrize("kind, expected", [
    ("postgresql", (1, 48)),
    ("pool", (1, 1024)),
    ("sqlite", (1, 1024)),
])
def test_auto_threads_follow_the_apps_database_connections(start_server, kind, expected):
    srv = start_server("django_db", env={"SGTEST_DJANGO_DB": kind})
    assert srv.request("GET", "/").body == b"django ok"
    got, why = bounds(srv)
    assert got == expected
    if expected == (1, 48):
        assert "one connection per thread" in why and "'default'" in why


def test_a_given_threads_option_wins_over_auto(start_server):
    srv = start_server("django_db", "--threads", "2:300", env={"SGTEST_DJANGO_DB": "postgresql"})
    assert srv.request("GET", "/").body == b"django ok"
    assert bounds(srv) == ((2, 300), "--threads")


def test_a_plain_app_gets_the_general_bounds(start_server):
    srv = start_server("hello")
    assert bounds(srv) == ((1, 1024), "auto")
