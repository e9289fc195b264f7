"""A uwsgi request packet as nginx's `uwsgi_pass` sends it (modifier 0: a WSGI request), for
tests that talk to a `uwsgi:` listener without nginx: `packet(vars, body)`, and `nginx_vars`,
the variables of nginx's `uwsgi_params` for a GET."""

import socket
import struct
from typing import List, Tuple

Vars = List[Tuple[bytes, bytes]]


def packet(variables: Vars, body: bytes = b"") -> bytes:
    data = b"".join(struct.pack("<H", len(k)) + k + struct.pack("<H", len(v)) + v
                    for k, v in variables)
    return struct.pack("<BHB", 0, len(data), 0) + data + body


def nginx_vars(path: bytes = b"/", host: bytes = b"example.org",
               remote_addr: bytes = b"203.0.113.9") -> Vars:
    return [(b"QUERY_STRING", b""), (b"REQUEST_METHOD", b"GET"), (b"CONTENT_TYPE", b""),
            (b"CONTENT_LENGTH", b""), (b"REQUEST_URI", path), (b"PATH_INFO", path),
            (b"SERVER_PROTOCOL", b"HTTP/1.1"), (b"REQUEST_SCHEME", b"http"),
            (b"REMOTE_ADDR", remote_addr), (b"REMOTE_PORT", b"50123"),
            (b"SERVER_PORT", b"80"), (b"SERVER_NAME", b"example.org"), (b"HTTP_HOST", host)]


def exchange(address, variables: Vars, family=socket.AF_INET, timeout: float = 10.0) -> bytes:
    """Send one packet on a new connection and read the answer until the server closes."""
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(address)
        s.sendall(packet(variables))
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk
