"""The same header list passed again: each server thread keeps the last status and header list
it converted and gives the same objects the same head without converting them again
(src/wsgi/app_head.rs, `Seen`). What the client gets must always be what the app passed at
this call: a list changed in place between calls (an item replaced, one appended), a value made
invalid in the same list, and another status with the same list each show at once. Every
request goes on one keep-alive connection, so that one thread (the loop's, inline) serves them
all and the kept head is the one tried each time."""

import pytest

from tests.http_util import Conn, assert_still_serving, request_bytes


@pytest.fixture
def kept(servers):
    srv = servers.get("kept_headers")
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/reset"))
        assert c.read_response().status == 200
    return srv


def ask(c, path):
    c.send(request_bytes("GET", path))
    return c.read_response()


def test_a_list_changed_in_place_is_seen_at_once(kept):
    with Conn.open(kept.port) as c:
        for _ in range(3):
            r = ask(c, "/")
            assert r.status == 200 and r.header_all("X-Kept") == ["one"] and r.body == b"kept"
        r = ask(c, "/set/two")
        assert r.header_all("X-Kept") == ["two"], r.raw_head
        r = ask(c, "/")
        assert r.header_all("X-Kept") == ["two"], r.raw_head
        r = ask(c, "/add/three")
        assert r.header_all("X-Added") == ["three"], r.raw_head
        r = ask(c, "/")
        assert r.header_all("X-Kept") == ["two"] and r.header_all("X-Added") == ["three"], r.raw_head


def test_a_value_made_invalid_in_the_same_list_is_refused(kept):
    with Conn.open(kept.port) as c:
        for _ in range(3):
            assert ask(c, "/").status == 200
    with Conn.open(kept.port) as c:
        r = ask(c, "/bad")
        assert r.status == 500, r.raw_head
        assert b"X-Injected" not in r.raw_head
    assert_still_serving(kept.port, "/reset", b"kept")


def test_another_status_with_the_same_list_is_sent(kept):
    with Conn.open(kept.port) as c:
        for _ in range(3):
            assert ask(c, "/").status == 200
        r = ask(c, "/status/203")
        assert r.status == 203, r.raw_head
        assert r.header_all("X-Kept") == ["one"]
        assert ask(c, "/").status == 200
