"""A minimal HTTP/1.1 client over a raw socket, for the time-per-fetch scenarios (S1, S2's 1 GiB
file, S3, S8).

Owns the client side of "time per request, body verified". Why not http.client: its chunked
decoder costs Python work per chunk, so a server that sends 2.5 MB in 19,532 chunks of 128 bytes
would be timed mostly on the client. Here the body is read with recv_into() into a preallocated
buffer (Content-Length) or collected raw until the last-chunk marker (chunked), and decoded only
after the clock has stopped. The connection is kept alive between fetches when the server allows.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field

RECV = 1 << 18  # 256 KiB per recv: few Python-level calls even for 1 GiB
BIG_BODY = 1 << 20
HEAD_LIMIT = 64 * 1024
LAST_CHUNK = b"\r\n0\r\n\r\n"  # text and binary payloads here never contain it (text has no CR)


class HttpError(Exception):
    """The server's answer was not a complete HTTP response (reset, truncated, timed out)."""


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes
    seconds: float  # from the first request byte sent to the last response byte received
    wire_bytes: int  # head + body as sent (chunk framing included)
    framing: str  # "length", "chunked" or "close"
    will_close: bool
    notes: list[str] = field(default_factory=list)


def _decode_chunked(raw: bytes | bytearray) -> bytes:
    out = []
    pos = 0
    mv = memoryview(raw)
    while True:
        end = raw.index(b"\r\n", pos)
        size = int(bytes(raw[pos:end]).split(b";")[0], 16)
        pos = end + 2
        if size == 0:
            return b"".join(out)
        out.append(bytes(mv[pos : pos + size]))
        pos += size + 2


class Connection:
    """One client connection to 127.0.0.1:port; reconnects if the server closed it."""

    def __init__(self, port: int, timeout: float = 30.0):
        self.port = port
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self.connects = 0
        self._big: bytearray | None = None  # reused receive buffer for large bodies

    def _body_buffer(self, n: int) -> memoryview | bytearray:
        """A buffer for an n-byte body. Large ones reuse one pre-faulted buffer: allocating and
        first-touching 64 MiB costs the client ~15 ms per fetch, 1 GiB several hundred ms, which
        would be timed as the server's. The view is valid until this connection's next request."""
        if n <= BIG_BODY:
            return bytearray(n)
        if self._big is None or len(self._big) < n:
            self._big = bytearray(n)
            self._big[::4096] = bytes(len(range(0, n, 4096)))  # touch every page once, now
        return memoryview(self._big)[:n]

    def _ensure(self) -> socket.socket:
        if self.sock is None:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sock = s
            self.connects += 1
        return self.sock

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def request(self, method: str, path: str, body: bytes | None = None, chunked: bool = False,
                headers: dict[str, str] | None = None, keep_body: bool = True) -> Response:
        """Send one request and read the whole response. Raises HttpError on a broken answer."""
        head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}"]
        for k, v in (headers or {}).items():
            head.append(f"{k}: {v}")
        payload = b""
        if body is not None and chunked:
            head.append("Transfer-Encoding: chunked")
            payload = _encode_chunked(body)
        elif body is not None:
            head.append(f"Content-Length: {len(body)}")
            payload = body
        wire = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        sock = self._ensure()
        sender = None
        t0 = time.perf_counter()
        try:
            if len(payload) > 1 << 20:
                # A big upload goes out from a thread so that an early answer (413, 411) is read.
                sock.sendall(wire)
                errors: list[BaseException] = []
                sender = threading.Thread(target=_send_all, args=(sock, payload, errors), daemon=True)
                sender.start()
            else:
                sock.sendall(wire + payload)
            resp = self._read_response(sock, method, t0, keep_body)
        except (OSError, ValueError) as e:
            self.close()
            raise HttpError(f"{type(e).__name__}: {e}") from None
        finally:
            if sender is not None:
                sender.join(timeout=self.timeout)
        if resp.will_close:
            self.close()
        return resp

    def _read_response(self, sock: socket.socket, method: str, t0: float, keep_body: bool) -> Response:
        buf = bytearray()
        while True:
            idx = buf.find(b"\r\n\r\n")
            if idx >= 0:
                break
            if len(buf) > HEAD_LIMIT:
                raise HttpError("response head too large")
            data = sock.recv(RECV)
            if not data:
                raise HttpError("connection closed before a response head" if not buf else "truncated head")
            buf += data
        head = bytes(buf[:idx]).decode("latin-1").split("\r\n")
        rest = buf[idx + 4 :]
        parts = head[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise HttpError(f"bad status line {head[0][:80]!r}")
        version, status = parts[0], int(parts[1])
        headers: dict[str, str] = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            key = k.strip().lower()
            headers[key] = f"{headers[key]}, {v.strip()}" if key in headers else v.strip()
        conn_hdr = headers.get("connection", "").lower()
        will_close = "close" in conn_hdr or (version == "HTTP/1.0" and "keep-alive" not in conn_hdr)
        head_len = idx + 4
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return Response(status, headers, b"", time.perf_counter() - t0, head_len, "length", will_close)
        if "chunked" in headers.get("transfer-encoding", "").lower():
            raw = bytearray(rest)
            while not (raw.endswith(LAST_CHUNK) or raw == b"0\r\n\r\n"):
                data = sock.recv(RECV)
                if not data:
                    raise HttpError(f"chunked body truncated after {len(raw)} bytes (status {status})")
                raw += data
            seconds = time.perf_counter() - t0
            body = _decode_chunked(raw) if keep_body else b""
            return Response(status, headers, body, seconds, head_len + len(raw), "chunked", will_close)
        if "content-length" in headers:
            n = int(headers["content-length"])
            body_buf = self._body_buffer(n)
            got = min(len(rest), n)
            body_buf[:got] = rest[:got]
            mv = memoryview(body_buf)
            while got < n:
                k = sock.recv_into(mv[got:], min(RECV * 4, n - got))
                if k == 0:
                    raise HttpError(f"body truncated at {got} of {n} bytes (status {status})")
                got += k
            seconds = time.perf_counter() - t0
            return Response(status, headers, body_buf if keep_body else b"", seconds, head_len + n,
                            "length", will_close)
        # Neither: the body ends when the server closes.
        raw = bytearray(rest)
        while data := sock.recv(RECV):
            raw += data
        seconds = time.perf_counter() - t0
        return Response(status, headers, bytes(raw), seconds, head_len + len(raw), "close", True)


def _send_all(sock: socket.socket, payload: bytes, errors: list[BaseException]) -> None:
    try:
        sock.sendall(payload)
    except OSError as e:  # the server answered early and closed: the response says why
        errors.append(e)


def _encode_chunked(body: bytes, size: int = 65536) -> bytes:
    parts = []
    for i in range(0, len(body), size):
        piece = body[i : i + size]
        parts.append(b"%x\r\n" % len(piece))
        parts.append(piece)
        parts.append(b"\r\n")
    parts.append(b"0\r\n\r\n")
    return b"".join(parts)


def get(port: int, path: str, timeout: float = 10.0) -> Response:
    """One GET on a fresh connection (probes, verification fetches)."""
    with Connection(port, timeout) as c:
        return c.request("GET", path)
