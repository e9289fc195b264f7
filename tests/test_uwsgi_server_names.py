"""SERVER_NAME and SERVER_PORT of a uwsgi request are nginx's own variables, request by request,
whatever came before on the same listener. The environ builder keeps, per template, a copy that
has the last name and port a proxy sent (`src/wsgi/environ.rs`: `proxied_template`), so that
each request's copy carries them: a request with another name or port, or with none, must not
get the kept ones, and each method and protocol (each its own template) gets its own."""

import json

from tests.uwsgi_packet import exchange, nginx_vars


def environ_of(srv, variables):
    answer = exchange((srv.host, srv.port), variables)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), answer[:300]
    return json.loads(body)


def with_names(name, port, method=b"GET", protocol=b"HTTP/1.1", client_port=b"50123"):
    """nginx's variables for a request to server `name` on `port` (None: not sent; b"": sent
    empty, as nginx does for a server block without `server_name`)."""
    out = []
    for k, v in nginx_vars():
        if (k == b"SERVER_NAME" and name is None) or (k == b"SERVER_PORT" and port is None):
            continue
        v = {b"SERVER_NAME": name, b"SERVER_PORT": port, b"REQUEST_METHOD": method,
             b"SERVER_PROTOCOL": protocol, b"REMOTE_PORT": client_port}.get(k, v)
        out.append((k, v))
    return out


def test_uwsgi_server_name_and_port_are_each_requests_own(start_server):
    srv = start_server("echo_environ", binds=["uwsgi:127.0.0.1:0"])
    own = environ_of(srv, with_names(None, None))
    first = environ_of(srv, with_names(b"a.example", b"8080"))
    assert (first["SERVER_NAME"], first["SERVER_PORT"]) == ("a.example", "8080")
    assert (first["REMOTE_ADDR"], first["REMOTE_PORT"]) == ("203.0.113.9", "50123")
    again = environ_of(srv, with_names(b"a.example", b"8080", client_port=b"50124"))
    assert (again["SERVER_NAME"], again["SERVER_PORT"], again["REMOTE_PORT"]) == (
        "a.example", "8080", "50124")
    # The same keys, in the same order, as the first request with these names.
    assert list(again) == list(first)
    for name, port in [(b"b.example", b"8080"), (b"a.example", b"8081"), (b"a.example", b"8080")]:
        env = environ_of(srv, with_names(name, port))
        assert (env["SERVER_NAME"], env["SERVER_PORT"]) == (name.decode(), port.decode())
    # An empty name (nginx's without `server_name`) names no server: the listener's stays,
    # with the port sent; and a name without a port.
    for name, port in [(b"", b"8082"), (b"", b"8083"), (b"d.example", None), (b"", b"8082")]:
        env = environ_of(srv, with_names(name, port))
        assert env["SERVER_NAME"] == (name.decode() or own["SERVER_NAME"])
        assert env["SERVER_PORT"] == (port.decode() if port else own["SERVER_PORT"])
    # Without the two variables: the listener's own, not the last ones kept.
    none = environ_of(srv, with_names(None, None))
    assert (none["SERVER_NAME"], none["SERVER_PORT"]) == (own["SERVER_NAME"], own["SERVER_PORT"])
    # Another method or protocol starts from another template: the names are its request's.
    for method, protocol in [(b"POST", b"HTTP/1.1"), (b"GET", b"HTTP/1.0"),
                             (b"PUT", b"HTTP/1.1"), (b"DELETE", b"HTTP/1.0")]:
        env = environ_of(srv, with_names(b"c.example", b"9090", method, protocol))
        assert (env["SERVER_NAME"], env["SERVER_PORT"]) == ("c.example", "9090")
        assert (env["REQUEST_METHOD"], env["SERVER_PROTOCOL"]) == (method.decode(),
                                                                  protocol.decode())
        none = environ_of(srv, with_names(None, None, method, protocol))
        assert (none["SERVER_NAME"], none["SERVER_PORT"]) == (own["SERVER_NAME"],
                                                              own["SERVER_PORT"])
