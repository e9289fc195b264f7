"""The PROXY protocol on a listener, from raw sockets: v1 and v2 headers
give the connection its real client; a missing, malformed or untrusted header closes the
connection without an answer. Through a real HAProxy: test_behind_haproxy.py.
"""

import json
import socket
import struct

import pytest

V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
GET = b"GET /e HTTP/1.1\r\nHost: x\r\n\r\n"


def v2_ipv6(src, dst, sport, dport, tlvs=b""):
    addrs = socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst)
    addrs += struct.pack("!HH", sport, dport)
    body = addrs + tlvs
    return V2_SIGNATURE + bytes([0x21, 0x21]) + struct.pack("!H", len(body)) + body


def v2_ipv4(src, dst, sport, dport):
    body = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!HH", sport, dport)
    return V2_SIGNATURE + bytes([0x21, 0x11]) + struct.pack("!H", len(body)) + body


def exchange(port, data: bytes) -> bytes:
    """Send `data`, read until the server closes or one response's body is in."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk
            head, sep, body = out.partition(b"\r\n\r\n")
            if sep and b"Content-Length:" in head:
                n = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                if len(body) >= n:
                    return out


def environ(raw: bytes) -> dict:
    return json.loads(raw.partition(b"\r\n\r\n")[2])


@pytest.fixture(scope="module")
def proxied(servers):
    return servers.get("echo_environ", "--access-log", "-", "--bind", "proxy:127.0.0.1:0",
                       "--forwarded-for-ips", "127.0.0.1,::1,unix")


def proxied_port(srv):
    return srv.addresses[1][1][1]


def test_v1_gives_the_client_address_and_port(proxied):
    env = environ(exchange(proxied_port(proxied),
                           b"PROXY TCP4 203.0.113.7 127.0.0.1 40123 80\r\n" + GET))
    assert (env["REMOTE_ADDR"], env["REMOTE_PORT"]) == ("203.0.113.7", "40123")
    proxied.wait_log(r'^203\.0\.113\.7 - - .*"GET /e HTTP/1\.1" 200', stream="stdout")
    env = environ(exchange(proxied_port(proxied),
                           b"PROXY TCP6 2001:db8::5 ::1 5555 80\r\n" + GET))
    assert (env["REMOTE_ADDR"], env["REMOTE_PORT"]) == ("2001:db8::5", "5555")


def test_v2_ipv4_ipv6_with_tlvs_and_keep_alive(proxied):
    alpn_tlv = b"\x01" + struct.pack("!H", 8) + b"http/1.1"
    hdr = v2_ipv6("2001:db8::9", "2001:db8::1", 61000, 443, alpn_tlv)
    with socket.create_connection(("127.0.0.1", proxied_port(proxied)), timeout=10) as s:
        s.sendall(hdr + GET)
        f = s.makefile("rb")
        for _ in range(2):  # the second request on the same connection keeps the address
            status = f.readline()
            assert status.startswith(b"HTTP/1.1 200"), status
            length = 0
            while (line := f.readline()) != b"\r\n":
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            env = json.loads(f.read(length))
            assert (env["REMOTE_ADDR"], env["REMOTE_PORT"]) == ("2001:db8::9", "61000")
            s.sendall(GET)
    env = environ(exchange(proxied_port(proxied), v2_ipv4("198.51.100.3", "10.0.0.1", 1234, 80)
                           + GET))
    assert env["REMOTE_ADDR"] == "198.51.100.3"


def test_unknown_and_local_keep_the_peer(proxied):
    env = environ(exchange(proxied_port(proxied), b"PROXY UNKNOWN\r\n" + GET))
    assert env["REMOTE_ADDR"] == "127.0.0.1"
    local = V2_SIGNATURE + bytes([0x20, 0x00]) + b"\x00\x00"
    env = environ(exchange(proxied_port(proxied), local + GET))
    assert env["REMOTE_ADDR"] == "127.0.0.1"


@pytest.mark.parametrize("bad", [
    GET,                                                      # no header at all
    b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n" + GET,                 # no CR
    b"PROXY TCP4 1.2.3.999 5.6.7.8 1 2\r\n" + GET,             # bad address
    b"PROXY TCP4 1.2.3.4 5.6.7.8 99999 2\r\n" + GET,           # bad port
    b"PROXY TCP4 ::1 ::1 1 2\r\n" + GET,                       # family mismatch
    b"PROXY " + b"X" * 200 + b"\r\n" + GET,                    # too long
    V2_SIGNATURE + bytes([0x31, 0x11]) + b"\x00\x0c" + b"\x00" * 12 + GET,  # version 3
    V2_SIGNATURE + bytes([0x21, 0x12]) + b"\x00\x0c" + b"\x00" * 12 + GET,  # datagram
    V2_SIGNATURE + bytes([0x21, 0x11]) + b"\x00\x04" + b"\x00" * 4 + GET,   # short block
    V2_SIGNATURE + bytes([0x21, 0x11]) + b"\x00\x10" + b"\x00" * 12 + b"\x01\x00\x09x" + GET,
])
def test_a_bad_header_closes_the_connection_without_an_answer(proxied, bad):
    assert exchange(proxied_port(proxied), bad) == b""
    # The plain listener beside it is unaffected.
    assert exchange(proxied.port, GET).startswith(b"HTTP/1.1 200")


def test_only_trusted_peers_may_send_one(servers):
    srv = servers.get("echo_environ", "--forwarded-allow-ips", "10.0.0.1", "--proxy-protocol")
    assert exchange(srv.port, b"PROXY TCP4 203.0.113.7 127.0.0.1 40123 80\r\n" + GET) == b""


def test_the_global_option_and_a_header_that_never_completes(servers):
    srv = servers.get("echo_environ", "--proxy-protocol", "--header-timeout", "1")
    env = environ(exchange(srv.port, b"PROXY TCP4 203.0.113.8 127.0.0.1 1 80\r\n" + GET))
    assert env["REMOTE_ADDR"] == "203.0.113.8"
    # Half a header, then silence: the header timeout ends it (never a hang).
    out = exchange(srv.port, b"PROXY TCP4 203.0")
    assert out == b"" or out.startswith(b"HTTP/1.1 408 ")


SPOOFED = (b"GET /e HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 6.6.6.6\r\n"
           b"X-Forwarded-Proto: https\r\nX-Forwarded-Host: evil.example\r\n\r\n")


def v2_af_unix():
    body = b"/tmp/a".ljust(108, b"\x00") + b"/tmp/b".ljust(108, b"\x00")
    return V2_SIGNATURE + bytes([0x21, 0x31]) + struct.pack("!H", len(body)) + body


@pytest.mark.parametrize("header", [
    b"PROXY UNKNOWN\r\n",                                     # v1, no address
    V2_SIGNATURE + bytes([0x20, 0x00]) + b"\x00\x00",         # v2 LOCAL
    v2_af_unix(),                                             # v2 AF_UNIX
], ids=["v1-unknown", "v2-local", "v2-af-unix"])
def test_after_a_proxy_header_naming_no_client_its_forwarding_headers_are_not_believed(
        proxied, header):
    """The PROXY header's sender (the trusted proxy, 127.0.0.1) vouched for the connection, not
    for whoever wrote the requests behind it: their own X-Forwarded-* are ignored. (Before the
    trust decision moved into proto, the peer stayed 127.0.0.1 and they were believed:
    REMOTE_ADDR=6.6.6.6, https, evil.example.)"""
    env = environ(exchange(proxied_port(proxied), header + SPOOFED))
    assert (env["REMOTE_ADDR"], env["wsgi.url_scheme"], env["HTTP_HOST"]) == \
        ("127.0.0.1", "http", "x")


def test_a_trusted_client_named_by_a_proxy_header_is_still_believed(proxied):
    """The control: a PROXY header naming a hop that is itself trusted (127.0.0.1) keeps its
    forwarding headers, as the same headers straight from 127.0.0.1 are."""
    named = b"PROXY TCP4 127.0.0.1 127.0.0.1 40000 80\r\n"
    env = environ(exchange(proxied_port(proxied), named + SPOOFED))
    assert (env["REMOTE_ADDR"], env["wsgi.url_scheme"], env["HTTP_HOST"]) == \
        ("6.6.6.6", "https", "evil.example")
    env = environ(exchange(proxied.port, SPOOFED))
    assert env["REMOTE_ADDR"] == "6.6.6.6"


def test_proxy_allow_ips_trusts_the_sender_of_a_proxy_header_on_its_own(servers):
    """gunicorn's --proxy-allow-from: who may send a PROXY header, apart from whose forwarding
    headers are believed. 127.0.0.1 may send one here, but its X-Forwarded-For is not read."""
    srv = servers.get("echo_environ", "--forwarded-allow-ips", "10.0.0.1", "--proxy-protocol",
                      "--proxy-allow-from", "127.0.0.1")
    env = environ(exchange(srv.port, b"PROXY TCP4 203.0.113.7 127.0.0.1 40123 80\r\n"
                           b"GET /e HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.100.1\r\n\r\n"))
    assert env["REMOTE_ADDR"] == "203.0.113.7"
    assert env["HTTP_X_FORWARDED_FOR"] == "198.51.100.1"  # passed on, not believed
    other = servers.get("echo_environ", "--forwarded-allow-ips", "127.0.0.1", "--proxy-protocol",
                        "--proxy-allow-ips", "10.0.0.1")
    assert exchange(other.port, b"PROXY TCP4 203.0.113.7 127.0.0.1 40123 80\r\n" + GET) == b""
