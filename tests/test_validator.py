"""PEP 3333 conformance checked by ``wsgiref.validate.validator``.

The ``validated`` app wraps several fixture apps in the validator, which asserts that the
server's environ, wsgi.input, wsgi.errors, start_response, write() and close() calls follow
PEP 3333 (and that the apps do too). Each route must answer 200 and no AssertionError (nor an
iterator "garbage collected without being closed") may reach the error log.
"""

import json

import pytest

from tests.http_util import Conn, chunked, request_bytes


@pytest.fixture(scope="module")
def validated(servers):
    return servers.get("validated")


def assert_clean_log(server, mark):
    log = server.log_since(mark)
    for bad in ("AssertionError", "without being closed", "Traceback"):
        assert bad not in log, f"validator complained ({bad}):\n{log[-3000:]}"


@pytest.mark.parametrize("target,body", [
    ("/hello", b"path=/hello"),
    ("/chunks?n=3&size=4", b"aaaabbbbcccc"),
    ("/empty_blocks", b"abcdef"),
    ("/write_then_iter", b"one-two-three-four"),
    ("/ok?token=v", b"onetwothr"),
])
@pytest.mark.parametrize("version", ["HTTP/1.1", "HTTP/1.0"])
def test_validated_app_answers_200(validated, target, body, version):
    mark = validated.log_mark()
    with Conn.open(validated.port) as c:
        c.send(request_bytes("GET", target, version=version))
        resp = c.read_response()
    assert resp.status == 200, resp.body[:2000]
    assert resp.body == body
    assert_clean_log(validated, mark)


def test_validated_environ(validated):
    mark = validated.log_mark()
    with Conn.open(validated.port) as c:
        c.send(request_bytes("POST", "/environ?x=1", body=b"abc",
                             headers=[("Content-Type", "text/plain")]))
        resp = c.read_response()
    assert resp.status == 200, resp.body[:2000]
    assert json.loads(resp.body)["QUERY_STRING"] == "x=1"
    assert_clean_log(validated, mark)


def test_validated_exc_info_replacement(validated):
    mark = validated.log_mark()
    with Conn.open(validated.port) as c:
        c.send(request_bytes("GET", "/replace_before_sent"))
        resp = c.read_response()
    assert resp.status == 503 and resp.body == b"replaced"
    assert_clean_log(validated, mark)


@pytest.mark.parametrize("mode", ["read", "readline", "iter"])
@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_validated_input_reading(validated, mode, framing):
    body = b"first line\nsecond line\n" * 500 + b"end"
    if framing == "chunked":
        raw = request_bytes("POST", f"/body?mode={mode}",
                            headers=[("Transfer-Encoding", "chunked")], body=chunked(body, 999))
    else:
        raw = request_bytes("POST", f"/body?mode={mode}", body=body)
    mark = validated.log_mark()
    with Conn.open(validated.port) as c:
        c.send(raw)
        resp = c.read_response()
    assert resp.status == 200, resp.body[:2000]
    assert resp.body == f"len={len(body)}".encode()
    assert_clean_log(validated, mark)


def test_validated_head_request(validated):
    mark = validated.log_mark()
    with Conn.open(validated.port) as c:
        c.send(request_bytes("HEAD", "/chunks?n=2&size=2") + request_bytes("GET", "/hello"))
        assert c.read_response("HEAD").status == 200
        assert c.read_response().body == b"path=/hello"
    assert_clean_log(validated, mark)
