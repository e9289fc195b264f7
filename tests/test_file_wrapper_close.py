"""``close()`` of a ``wsgi.file_wrapper`` (``src/wsgi/file_wrapper.rs``, called by
``call_and_drive`` in ``src/wsgi/iterable.rs`` without a bound method): the file object's own
``close()`` is called with one method call; a file-like with no ``close`` is left as it is, and
an ``AttributeError`` raised inside an existing ``close()`` is the app's error, logged, not taken
for a missing method.

The fixture app is ``tests/apps/file_wrapper.py`` (``/noclose``, ``/close_raises``).
"""

from __future__ import annotations

import re
import uuid

import pytest

from tests.apps.file_wrapper import file_bytes
from tests.http_util import Conn, request_bytes

CLOSE_ERROR = r"calling the response iterable's close\(\)"


@pytest.fixture(scope="module")
def srv(servers):
    return servers.get("file_wrapper")


def test_a_file_like_without_close_is_served_and_nothing_is_logged(srv):
    mark = srv.log_mark()
    with Conn.open(srv.port) as c:
        for _ in range(2):  # the connection stays usable: the answer ended well
            c.send(request_bytes("GET", "/noclose?size=30000"))
            resp = c.read_response()
            assert resp.status == 200 and resp.body == file_bytes(30000)
        c.send(request_bytes("GET", "/close_raises?size=10&token=-"))  # a line to wait for
        assert c.read_response().status == 200
    srv.wait_log(CLOSE_ERROR, since=mark)
    logged = srv.log_since(mark)
    assert len(re.findall(CLOSE_ERROR, logged)) == 1, \
        f"a file-like without close() was reported as an error:\n{logged}"


def test_an_attribute_error_inside_close_is_logged(srv):
    """The file's close() ran (its mark is there) and raised AttributeError: that is the app's
    error, and the log must say so (a missing `close` is told apart from it)."""
    t = uuid.uuid4().hex[:12]
    mark = srv.log_mark()
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", f"/close_raises?size=21324&token={t}"))
        resp = c.read_response()
        assert resp.status == 200 and resp.body == file_bytes(21324)
    assert srv.wait_marks("file-closed", prefix=t) == [t]
    srv.wait_log(CLOSE_ERROR, since=mark)
    srv.wait_log(r"AttributeError: close_raises", since=mark)
