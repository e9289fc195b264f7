"""The app thread pool's bounds when `--threads` is `auto` (the default), chosen once the app is
loaded, from what the app holds per thread.

Most apps get 1:1024: a blocking app (sleeping, waiting on a remote service) is served with as
many threads as it has blocked calls, and admission (docs/architecture.md) keeps the ones that
compute from fighting for the GIL. One kind of app must not grow that far: one that holds a
database connection per thread and has nothing bounding them. Django is that app when its
`DATABASES` name a server database without a connection pool: each thread opens its own
connection, and a burst of 300 slow requests on 300 threads asks a stock PostgreSQL
(`max_connections = 100`, 97 usable) for 300 connections; the refused ones answer 500 (S13 in
BENCHMARKS.md). For it, `auto` means 1:48, so that even two generations of server processes
(during a reload) stay within PostgreSQL's default limit; requests beyond that wait in order
instead of failing. An app whose connections come from a bounded pool (SQLAlchemy's, Django's
`"pool"` option) waits on its pool and keeps 1:1024.

Detection reads only what the app already imported: nothing is imported on its behalf.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Optional, Tuple

#: `auto` for most apps.
GENERAL = (1, 1024)

#: `auto` for an app that holds one database connection per thread: two generations of
#: processes (a reload) at 48 each stay within PostgreSQL's 97 usable default connections.
CONNECTION_PER_THREAD = (1, 48)


def choose(given: Optional[Tuple[int, int]], workers: int = 1) -> Tuple[Tuple[int, int], str]:
    """The pool's bounds in one server process and why: the given ones, else what `auto`
    means for the loaded app. With several worker processes, the connection budget is shared
    between them."""
    if given is not None:
        return given, "--threads"
    why = connection_per_thread()
    if why:
        low, high = CONNECTION_PER_THREAD
        high = max(1, high // max(1, workers))
        per = f", {CONNECTION_PER_THREAD[1]} shared by {workers} workers" if workers > 1 else ""
        return (low, high), f"auto: {why}{per}; --threads sets it"
    return GENERAL, "auto"


def connection_per_thread() -> Optional[str]:
    """Why the loaded app holds a database connection per thread, or None."""
    return _django_connections()


def _django_connections() -> Optional[str]:
    conf = sys.modules.get("django.conf")
    if conf is None:
        return None
    try:
        settings = conf.settings
        if not settings.configured:
            return None
        databases = dict(settings.DATABASES)
    except Exception:  # an app's settings that cannot be read are not ours to report
        return None
    unpooled = []
    for alias, db in databases.items():
        engine = str(db.get("ENGINE", ""))
        if not engine or engine.endswith("sqlite3") or engine.endswith("dummy"):
            continue
        options = db.get("OPTIONS") or {}
        if options.get("pool"):  # Django 5.1+: psycopg's pool bounds the connections
            continue
        unpooled.append(alias)
    if not unpooled:
        return None
    return (f"a Django app whose database {', '.join(repr(a) for a in unpooled)} opens one "
            f"connection per thread")
