"""The WSGI environ (PEP 3333), checked key by key with exact values.

The app ``echo_environ`` answers the environ as JSON (non-str values repr'd). Covers
REQUEST_METHOD, SCRIPT_NAME/PATH_INFO (percent-decoded, non-ASCII bytes tunnelled as latin-1,
``//`` kept, --root-path), QUERY_STRING raw, CONTENT_TYPE/CONTENT_LENGTH without the HTTP_
prefix, SERVER_NAME/SERVER_PORT/SERVER_PROTOCOL, REMOTE_ADDR/REMOTE_PORT, HTTP_* (repeated
headers joined with ", ", names with "_" dropped so they cannot spoof "-"), and the wsgi.* keys
with their types.
"""

import json
import random
import uuid

import pytest

from tests.http_util import Conn, chunked, request_bytes


@pytest.fixture(scope="module")
def env_server(servers):
    return servers.get("echo_environ")


@pytest.fixture(scope="module")
def rooted(servers):
    return servers.get("echo_environ", "--root-path", "/app")


def environ_for(server, raw: bytes):
    """Send one raw request; return (environ dict, client socket's local port)."""
    with Conn.open(server.port) as c:
        local_port = c.sock.getsockname()[1]
        c.send(raw)
        resp = c.read_response()
    assert resp.status == 200, resp.body[:500]
    return json.loads(resp.body), local_port


def test_basic_keys_have_exact_values(env_server):
    env, local_port = environ_for(env_server, request_bytes("GET", "/some/path?x=1"))
    assert env["REQUEST_METHOD"] == "GET"
    assert env["SCRIPT_NAME"] == ""
    assert env["PATH_INFO"] == "/some/path"
    assert env["QUERY_STRING"] == "x=1"
    assert env["SERVER_PROTOCOL"] == "HTTP/1.1"
    assert env["REMOTE_ADDR"] == "127.0.0.1"
    assert env["REMOTE_PORT"] == str(local_port)
    assert isinstance(env["SERVER_NAME"], str) and env["SERVER_NAME"]
    assert env["SERVER_PORT"] == str(env_server.port)
    assert env["HTTP_HOST"] == "localhost"


def test_server_protocol_is_exactly_http10_for_10_requests(env_server):
    env, _ = environ_for(env_server, request_bytes("GET", "/", version="HTTP/1.0"))
    assert env["SERVER_PROTOCOL"] == "HTTP/1.0"


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "PROPFIND"])
def test_request_method_is_passed_as_sent(env_server, method):
    env, _ = environ_for(env_server, request_bytes(method, "/m", body=b"x"))
    assert env["REQUEST_METHOD"] == method


def test_wsgi_keys_have_the_right_values_and_types(env_server):
    env, _ = environ_for(env_server, request_bytes("GET", "/"))
    assert env["wsgi.version"] == "(1, 0)"
    assert env["wsgi.url_scheme"] == "http"
    assert env["wsgi.multithread"] == "True"
    assert env["wsgi.multiprocess"] == "False"
    assert env["wsgi.run_once"] == "False"
    assert env["wsgi.input_terminated"] == "True"
    assert env["_types"] == {"wsgi.version": "tuple", "wsgi.url_scheme": "str",
                             "wsgi.multithread": "bool", "wsgi.multiprocess": "bool",
                             "wsgi.run_once": "bool", "wsgi.input_terminated": "bool"}
    assert env["_input_methods"] == ["__iter__", "read", "readline", "readlines"]
    assert env["_errors_methods"] == ["flush", "write", "writelines"]
    assert "wsgi.file_wrapper" in env and env["_file_wrapper_callable"] == "True"
    assert env["_key_types"] == ["str"]
    assert env["_environ_type"] == "dict"


# -- path and query --------------------------------------------------------------------------

@pytest.mark.parametrize("target,path_info,query", [
    ("/caf%C3%A9", "/caf\u00c3\u00a9", ""),              # UTF-8 bytes tunnelled as latin-1
    ("/a%20b/%7Euser", "/a b/~user", ""),
    ("//double//slashes/", "//double//slashes/", ""),
    ("/a%2Fb", "/a/b", ""),
    ("/q?a=1&b=%20c+d&e=%C3%A9", "/q", "a=1&b=%20c+d&e=%C3%A9"),  # query stays raw
    ("/empty-query?", "/empty-query", ""),
    ("/?only=query", "/", "only=query"),
    ("/%25percent", "/%percent", ""),
])
def test_path_info_is_percent_decoded_and_query_string_raw(env_server, target, path_info, query):
    env, _ = environ_for(env_server, request_bytes("GET", target))
    assert env["PATH_INFO"] == path_info
    assert env["QUERY_STRING"] == query


def test_absolute_form_target_gives_path_and_query(env_server):
    env, _ = environ_for(env_server, request_bytes("GET", "http://example.test/abs/p?q=1",
                                                   host="example.test"))
    assert env["PATH_INFO"] == "/abs/p"
    assert env["QUERY_STRING"] == "q=1"


@pytest.mark.parametrize("target,script_name,path_info", [
    ("/app/sub/x", "/app", "/sub/x"),
    ("/app/", "/app", "/"),
    ("/app", "/app", ""),
    ("/app/caf%C3%A9", "/app", "/caf\u00c3\u00a9"),
])
def test_root_path_becomes_script_name_and_is_stripped_from_path_info(
        rooted, target, script_name, path_info):
    env, _ = environ_for(rooted, request_bytes("GET", target + "?k=v"))
    assert env["SCRIPT_NAME"] == script_name
    assert env["PATH_INFO"] == path_info
    assert env["QUERY_STRING"] == "k=v"


# -- content headers -------------------------------------------------------------------------

def test_content_type_and_length_have_no_http_prefix(env_server):
    env, _ = environ_for(env_server, request_bytes(
        "POST", "/", headers=[("Content-Type", "text/plain; charset=utf-8")], body=b"hello"))
    assert env["CONTENT_TYPE"] == "text/plain; charset=utf-8"
    assert env["CONTENT_LENGTH"] == "5"
    assert "HTTP_CONTENT_TYPE" not in env
    assert "HTTP_CONTENT_LENGTH" not in env


def test_no_body_means_no_or_empty_content_length(env_server):
    env, _ = environ_for(env_server, request_bytes("GET", "/"))
    assert env.get("CONTENT_LENGTH", "") in ("", "0")
    assert "HTTP_CONTENT_LENGTH" not in env


def test_chunked_request_has_no_content_length(env_server):
    env, _ = environ_for(env_server, request_bytes(
        "POST", "/", headers=[("Transfer-Encoding", "chunked")], body=chunked(b"abc")))
    assert env.get("CONTENT_LENGTH", "") == ""
    assert env["wsgi.input_terminated"] == "True"


# -- HTTP_* headers --------------------------------------------------------------------------

def test_repeated_headers_are_joined_with_comma_space(env_server):
    env, _ = environ_for(env_server, request_bytes(
        "GET", "/", headers=[("X-Multi", "a"), ("Accept", "text/html"), ("X-Multi", "b"),
                             ("x-multi", "c")]))
    assert env["HTTP_X_MULTI"] == "a, b, c"
    assert env["HTTP_ACCEPT"] == "text/html"


def test_long_header_names_are_mapped_every_time(env_server):
    # Names longer than the name table keeps (47 bytes) are mapped anew on each request; a
    # short one is kept after its first request: both give their key on every request.
    long_name = "X-" + "Long-Name-" * 6
    key = "HTTP_" + long_name.upper().replace("-", "_")
    for i in range(2):
        env, _ = environ_for(env_server, request_bytes(
            "GET", "/", headers=[(long_name, f"a{i}"), ("X-Short", f"s{i}"),
                                 (long_name.lower(), "b")]))
        assert env[key] == f"a{i}, b"
        assert env["HTTP_X_SHORT"] == f"s{i}"


def test_repeats_past_the_first_32_header_names_are_joined_too(env_server):
    # The first 32 names are tracked without asking the dict; later ones ask it.
    headers = [(f"X-H{i}", str(i)) for i in range(40)] + [("X-H35", "again"), ("X-H2", "again")]
    env, _ = environ_for(env_server, request_bytes("GET", "/", headers=headers))
    assert env["HTTP_X_H35"] == "35, again"
    assert env["HTTP_X_H2"] == "2, again"
    assert env["HTTP_X_H39"] == "39"


def test_the_environ_holds_only_what_the_request_gives(env_server):
    # The template behind every environ is made with placeholder entries and spare room;
    # none of it may show.
    env, _ = environ_for(env_server, request_bytes("GET", "/p"))
    assert not [k for k in env if k.startswith("sluicegate.")]
    for key in ("REQUEST_METHOD", "PATH_INFO", "REQUEST_URI", "RAW_URI", "SERVER_PROTOCOL",
                "REMOTE_ADDR", "REMOTE_PORT"):
        assert env[key] not in ("", None), key
    assert env["QUERY_STRING"] == ""


def test_kept_values_are_always_the_values_of_this_request(env_server):
    """Short values of repeating headers (Host, User-Agent, Accept...) and short paths are kept
    as strings between requests: each request must still see exactly its own, on one
    connection and across many, with values that differ by one byte, share a slot or not, are
    at the length limit or past it, and carry latin-1 bytes."""
    rnd = random.Random(16)
    with Conn.open(env_server.port) as c:
        for i in range(300):
            n = rnd.choice([1, 2, 7, 8, 9, 46, 47, 48, 60])
            ua = bytes(rnd.choice(b"abcXYZ0123 /.;()") for _ in range(n)).strip() or b"x"
            if i % 7 == 0:
                ua = ua[:-1] + b"\xe9"
            path = "/" + "p" * rnd.choice([0, 1, 5, 40, 46, 47, 60]) + str(i % 3)
            raw = (b"GET " + path.encode() + b" HTTP/1.1\r\nHost: h" + str(i % 5).encode()
                   + b"\r\nUser-Agent: " + ua + b"\r\nAccept: */*\r\n\r\n")
            c.send(raw)
            resp = c.read_response()
            assert resp.status == 200
            env = json.loads(resp.body)
            assert env["HTTP_USER_AGENT"] == ua.decode("latin-1"), i
            assert env["HTTP_HOST"] == f"h{i % 5}", i
            assert env["PATH_INFO"] == path and env["REQUEST_URI"] == path, i
            assert env["HTTP_ACCEPT"] == "*/*"


def test_method_protocol_and_input_are_each_requests_own(env_server):
    """The environ starts from a template per method (GET, POST, other) and protocol, holding
    those two and the empty wsgi.input: mixed requests on one connection each see
    their own."""
    cases = [("GET", "1.1", b""), ("POST", "1.1", b"abc"), ("POST", "1.1", b""),
             ("PUT", "1.1", b"xy"), ("OPTIONS", "1.1", b""), ("GET", "1.0", b""),
             ("POST", "1.0", b"z"), ("DELETE", "1.0", b""), ("GET", "1.1", b"")]
    for method, version, body in cases:
        head = f"{method} /m HTTP/{version}\r\nHost: h\r\n"
        if version == "1.0":
            head += "Connection: keep-alive\r\n"
        if body or method == "POST":
            head += f"Content-Length: {len(body)}\r\n"
        env, _ = environ_for(env_server, head.encode() + b"\r\n" + body)
        assert env["REQUEST_METHOD"] == method
        assert env["SERVER_PROTOCOL"] == f"HTTP/{version}"
        assert env.get("CONTENT_LENGTH", "") in ("", str(len(body)))


def test_header_with_underscore_is_dropped_and_cannot_spoof_dash(env_server):
    env, _ = environ_for(env_server, request_bytes(
        "GET", "/", headers=[("X-Foo", "real"), ("X_Foo", "spoof"), ("X_Bar", "spoof")]))
    assert env["HTTP_X_FOO"] == "real"
    assert "HTTP_X_BAR" not in env
    assert "spoof" not in json.dumps(env)


def test_header_names_are_uppercased_with_dashes_as_underscores(env_server):
    env, _ = environ_for(env_server, request_bytes(
        "GET", "/", headers=[("x-lower-case", "1"), ("X-MiXeD-Case", "2")]))
    assert env["HTTP_X_LOWER_CASE"] == "1"
    assert env["HTTP_X_MIXED_CASE"] == "2"


def test_header_values_are_trimmed_and_keep_inner_whitespace(env_server):
    env, _ = environ_for(env_server, b"GET / HTTP/1.1\r\nHost: h\r\nX-Pad: \t padded  value \t\r\n"
                                     b"X-Empty:\r\n\r\n")
    assert env["HTTP_X_PAD"] == "padded  value"
    assert env["HTTP_X_EMPTY"] == ""


def test_non_ascii_header_bytes_are_tunnelled_as_latin1(env_server):
    env, _ = environ_for(env_server, b"GET / HTTP/1.1\r\nHost: h\r\nX-Latin: caf\xc3\xa9\r\n\r\n")
    assert env["HTTP_X_LATIN"] == "caf\u00c3\u00a9"


def test_only_header_names_from_a_fixed_list_are_interned(env_server):
    # An interned str is immortal on CPython 3.12: a client sending ever new header names must
    # not make the server keep each one for good. Common names are interned (apps look them up).
    name = "X-Once-" + uuid.uuid4().hex
    key = "HTTP_" + name.upper().replace("-", "_")
    env, _ = environ_for(env_server, request_bytes(
        "GET", "/", headers=[(name, "1"), ("User-Agent", "test"), ("Cookie", "a=1")]))
    assert env[key] == "1" and env["HTTP_COOKIE"] == "a=1"
    assert key not in env["_interned"], env["_interned"]
    assert "HTTP_USER_AGENT" in env["_interned"] and "HTTP_COOKIE" in env["_interned"]


def test_environ_is_fresh_for_each_request_on_a_connection(env_server):
    with Conn.open(env_server.port) as c:
        c.send(request_bytes("GET", "/one?a=1", headers=[("X-Only-First", "1")]))
        first = json.loads(c.read_response().body)
        c.send(request_bytes("GET", "/two"))
        second = json.loads(c.read_response().body)
    assert first["HTTP_X_ONLY_FIRST"] == "1" and "HTTP_X_ONLY_FIRST" not in second
    assert second["PATH_INFO"] == "/two" and second["QUERY_STRING"] == ""
    assert first["REMOTE_PORT"] == second["REMOTE_PORT"]


@pytest.mark.parametrize("target,host,name,port,path", [
    ("http://other/echo?a=1", "other", "other", "80", "/echo"),
    ("http://other:8081/echo", "other:8081", "other", "8081", "/echo"),
    ("https://[::1]:9443/x", "[::1]:9443", "[::1]", "9443", "/x"),
    ("https://secure.example", "secure.example", "secure.example", "443", "/"),
])
def test_absolute_form_target_host_wins_over_the_host_header(env_server, target, host, name,
                                                              port, path):
    """Regression (8ee7c8d): for `GET http://other/echo` with `Host: x` the app saw `x`;
    RFC 9112 §3.2.2 makes the target's authority the host and the Host header ignored."""
    raw = f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    env, _ = environ_for(env_server, raw)
    assert (env["HTTP_HOST"], env["SERVER_NAME"], env["SERVER_PORT"]) == (host, name, port)
    assert env["PATH_INFO"] == path
