"""Raw-socket HTTP/1.x client helpers shared by every test module.

The tests that check framing and bad input must see exactly the bytes the server sends, so they
do not use http.client: they send raw bytes with ``sendall`` and parse the answer here. One
parser, used everywhere:

- ``Conn``: a connected socket plus a receive buffer. ``read_response()`` reads exactly one
  response, honouring its framing (Content-Length, chunked, close-delimited, HEAD and
  1xx/204/304 without body), and raises ``Truncated`` when the peer closes in the middle of it
  (so a response cut short never looks complete). ``expect_closed()`` asserts the server closes
  the connection (EOF or reset) within a bounded wait and sent nothing more.
- ``exchange()``: connect, send bytes, read one response, optionally assert close.

Every wait is bounded by ``TIMEOUT`` seconds (generous: the machine is shared), and a timeout
fails with a message saying what was being waited for (``WaitTimeout``; ``TIMEOUT``,
``WaitTimeout`` and ``wait_for`` are the ones of ``tests/helpers.py``, importable from here too).
"""

from __future__ import annotations

import errno
import socket
import time
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from tests.helpers import TIMEOUT, WaitTimeout, wait_for  # noqa: F401 (re-exported)

HOST = "127.0.0.1"


class Truncated(AssertionError):
    """The server closed the connection in the middle of a response."""

    def __init__(self, msg: str, partial: bytes = b""):
        super().__init__(msg)
        self.partial = partial


class Closed(AssertionError):
    """The server closed the connection before sending any byte of a response."""


@dataclass
class Response:
    version: str
    status: int
    reason: str
    headers: List[Tuple[str, str]]
    body: bytes = b""
    # How the body was delimited: "length", "chunked", "close" or "none".
    framing: str = "none"
    trailers: List[Tuple[str, str]] = field(default_factory=list)
    # The exact bytes of the status line and header section (including the blank line).
    raw_head: bytes = b""
    # For chunked bodies: the sizes of the data chunks as sent (not including the last 0 chunk).
    chunk_sizes: List[int] = field(default_factory=list)

    def header(self, name: str) -> Optional[str]:
        """First value of header `name` (case-insensitive), or None."""
        for n, v in self.headers:
            if n.lower() == name.lower():
                return v
        return None

    def header_all(self, name: str) -> List[str]:
        return [v for n, v in self.headers if n.lower() == name.lower()]

    def has_token(self, name: str, token: str) -> bool:
        """Does a comma-separated header (e.g. Connection) contain `token`?"""
        for v in self.header_all(name):
            if token.lower() in [t.strip().lower() for t in v.split(",")]:
                return True
        return False


class Conn:
    """A raw client connection with a receive buffer."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = b""
        self.eof = False
        self.sock.settimeout(TIMEOUT)

    # -- lifecycle ---------------------------------------------------------------------------
    @classmethod
    def open(cls, port: int, host: str = HOST, timeout: float = TIMEOUT) -> "Conn":
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect((host, port))
        return cls(s)

    @classmethod
    def open_unix(cls, path: str) -> "Conn":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(TIMEOUT)
        s.connect(path)
        return cls(s)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> "Conn":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- sending -----------------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def shutdown_write(self) -> None:
        self.sock.shutdown(socket.SHUT_WR)

    # -- receiving ---------------------------------------------------------------------------
    def _fill(self, deadline: float, what: str) -> bool:
        """Receive more bytes into the buffer. False on EOF (or reset). Raises WaitTimeout at
        the deadline."""
        if self.eof:
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeout(f"timed out after {TIMEOUT}s waiting for {what}; got so far: "
                              f"{self.buf[:300]!r}")
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise WaitTimeout(f"timed out waiting for {what}; got so far: {self.buf[:300]!r}")
        except ConnectionResetError:
            self.eof = True
            return False
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def _read_line(self, deadline: float, what: str) -> Optional[bytes]:
        """One CRLF-terminated line without the CRLF, or None on EOF before a full line."""
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            if not self._fill(deadline, what):
                return None

    def _read_exact(self, n: int, deadline: float, what: str) -> Optional[bytes]:
        while len(self.buf) < n:
            if not self._fill(deadline, what):
                return None
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_head(self, timeout: float = TIMEOUT) -> Response:
        """Read a status line and header section (no body)."""
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in self.buf:
            if not self._fill(deadline, "a response head"):
                if self.buf:
                    raise Truncated(f"connection closed inside a response head: {self.buf!r}",
                                    self.buf)
                raise Closed("connection closed before any byte of a response")
        end = self.buf.index(b"\r\n\r\n") + 4
        raw, self.buf = self.buf[:end], self.buf[end:]
        lines = raw[:-4].split(b"\r\n")
        status_line = lines[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        assert len(parts) >= 2 and parts[0].startswith("HTTP/"), f"bad status line {status_line!r}"
        assert parts[1].isdigit() and len(parts[1]) == 3, f"bad status code in {status_line!r}"
        headers = []
        for line in lines[1:]:
            assert b":" in line, f"bad response header line {line!r}"
            name, _, value = line.partition(b":")
            assert name == name.strip() and name, f"bad response header name in {line!r}"
            headers.append((name.decode("latin-1"), value.strip().decode("latin-1")))
        return Response(version=parts[0], status=int(parts[1]),
                        reason=parts[2] if len(parts) > 2 else "", headers=headers, raw_head=raw)

    def read_response(self, method: str = "GET", timeout: float = TIMEOUT,
                      skip_interim: bool = True) -> Response:
        """Read exactly one response (by default skipping 1xx interim responses), honouring its
        framing. Raises Truncated if the connection closes inside it, Closed if it closes before
        the first byte."""
        deadline = time.monotonic() + timeout
        while True:
            resp = self.read_head(max(0.0, deadline - time.monotonic()))
            if 100 <= resp.status < 200:
                assert resp.status != 101, "unexpected 101 Switching Protocols"
                if skip_interim:
                    continue
                return resp
            break
        return self.read_body(resp, method, max(0.0, deadline - time.monotonic()))

    def read_body(self, resp: Response, method: str = "GET", timeout: float = TIMEOUT) -> Response:
        """Read the body of a response whose head `read_head()` returned (so a test can look at
        the connection between head and body), honouring its framing; fills ``resp.body`` and
        ``resp.framing`` and returns `resp`. Raises Truncated as read_response does."""
        deadline = time.monotonic() + timeout
        te = ",".join(resp.header_all("Transfer-Encoding")).lower()
        cls = resp.header_all("Content-Length")
        if method.upper() == "HEAD" or resp.status in (204, 304):
            resp.framing = "none"
            return resp
        if te:
            assert te.replace(" ", "").split(",")[-1] == "chunked", \
                f"response Transfer-Encoding not ending in chunked: {te!r}"
            assert not cls, "response has both Transfer-Encoding and Content-Length"
            resp.framing = "chunked"
            self._read_chunked(resp, deadline)
            return resp
        if cls:
            assert len(set(cls)) == 1, f"response has differing Content-Length values: {cls}"
            n = int(cls[0])
            resp.framing = "length"
            body = self._read_exact(n, deadline, f"a {n}-byte body")
            if body is None:
                raise Truncated(f"connection closed after {len(self.buf)} of {n} body bytes",
                                self.buf)
            resp.body = body
            return resp
        # Close-delimited.
        resp.framing = "close"
        while self._fill(deadline, "a close-delimited body to end"):
            pass
        resp.body, self.buf = self.buf, b""
        return resp

    def _read_chunked(self, resp: Response, deadline: float) -> None:
        body = []
        while True:
            line = self._read_line(deadline, "a chunk-size line")
            if line is None:
                raise Truncated("connection closed before the last chunk (chunked body "
                                f"truncated after {sum(map(len, body))} bytes)", b"".join(body))
            size_s = line.split(b";", 1)[0].strip()
            assert size_s and all(c in b"0123456789abcdefABCDEF" for c in size_s), \
                f"bad chunk size line from server: {line!r}"
            size = int(size_s, 16)
            if size == 0:
                break
            resp.chunk_sizes.append(size)
            data = self._read_exact(size + 2, deadline, f"a {size}-byte chunk")
            if data is None:
                raise Truncated("connection closed inside a chunk", b"".join(body) + self.buf)
            assert data[-2:] == b"\r\n", f"chunk data not followed by CRLF: {data[-10:]!r}"
            body.append(data[:-2])
        resp.body = b"".join(body)
        # Trailer section, ended by an empty line.
        while True:
            line = self._read_line(deadline, "the end of the chunked trailer section")
            if line is None:
                raise Truncated("connection closed inside the chunked trailer section",
                                resp.body)
            if line == b"":
                return
            name, _, value = line.partition(b":")
            resp.trailers.append((name.decode("latin-1"), value.strip().decode("latin-1")))

    def read_exact_into(self, n: int, sink, timeout: float = TIMEOUT) -> None:
        """Pass exactly `n` body bytes (what is buffered first, then what arrives) to
        ``sink(piece)`` without keeping them: for bodies too large to hold, or to grow ``buf``
        for (``buf += data`` copies the whole buffer on every recv). Raises Truncated on EOF,
        WaitTimeout at the deadline."""
        deadline = time.monotonic() + timeout
        got = 0
        if self.buf:
            piece, self.buf = self.buf[:n], self.buf[n:]
            got = len(piece)
            sink(piece)
        while got < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeout(f"timed out after {timeout}s with {got} of {n} body bytes")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(min(1 << 20, n - got))
            except socket.timeout:
                raise WaitTimeout(f"timed out after {timeout}s with {got} of {n} body bytes")
            except ConnectionResetError:
                data = b""
            if not data:
                self.eof = True
                raise Truncated(f"connection closed after {got} of {n} body bytes")
            got += len(data)
            sink(data)

    def recv_at_least(self, n: int, timeout: float = TIMEOUT) -> None:
        """Receive until at least `n` bytes are buffered (fails on EOF or timeout)."""
        deadline = time.monotonic() + timeout
        while len(self.buf) < n:
            if not self._fill(deadline, f"{n} buffered bytes"):
                raise Truncated(f"connection closed after {len(self.buf)} of {n} bytes",
                                self.buf)

    def read_until_close(self, timeout: float = TIMEOUT) -> bytes:
        """All bytes until the server closes the connection (EOF or reset)."""
        deadline = time.monotonic() + timeout
        while self._fill(deadline, "the server to close the connection"):
            pass
        data, self.buf = self.buf, b""
        return data

    def expect_closed(self, timeout: float = TIMEOUT) -> None:
        """Assert the server closes the connection within `timeout` and sends nothing more."""
        extra = self.read_until_close(timeout)
        assert extra == b"", f"server sent more bytes before closing: {extra[:300]!r}"

    def is_closed_now(self, wait: float = 0.3) -> bool:
        """Non-asserting probe: has the server closed the connection (EOF/reset seen within
        `wait` seconds)? Used only where either outcome is legal."""
        if self.eof:
            return True
        if self.buf:
            return False
        self.sock.settimeout(wait)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        except ConnectionResetError:
            self.eof = True
            return True
        if not data:
            self.eof = True
            return True
        self.buf += data
        return False

    def nothing_arrives(self, wait: float) -> bool:
        """True if no byte arrives within `wait` seconds and the connection stays open. Only for
        checking that something is NOT sent early; never used to synchronise."""
        if self.buf:
            return False
        self.sock.settimeout(wait)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return True
        except ConnectionResetError:
            self.eof = True
            return False
        if not data:
            self.eof = True
            return False
        self.buf += data
        return False


def request_bytes(method: str = "GET", target: str = "/", version: str = "HTTP/1.1",
                  headers: Optional[List[Tuple[str, str]]] = None, body: bytes = b"",
                  host: Optional[str] = "localhost", content_length: bool = True) -> bytes:
    """Build a well-formed request. A Host header is added unless host is None; Content-Length
    is added when there is a body (unless content_length is False or headers already have
    one)."""
    hs = list(headers or [])
    names = {n.lower() for n, _ in hs}
    if host is not None and "host" not in names:
        hs.insert(0, ("Host", host))
    if body and content_length and "content-length" not in names \
            and "transfer-encoding" not in names:
        hs.append(("Content-Length", str(len(body))))
    head = f"{method} {target} {version}\r\n" + "".join(f"{n}: {v}\r\n" for n, v in hs) + "\r\n"
    return head.encode("latin-1") + body


def chunked(body: bytes, chunk: int = 4096, ext: str = "", trailers: str = "") -> bytes:
    """Encode `body` in chunked transfer coding; `ext` is appended to every size line (e.g.
    ';name=value'); `trailers` is a raw trailer section (lines ending in CRLF)."""
    out = []
    for i in range(0, len(body), chunk):
        piece = body[i:i + chunk]
        out.append(b"%x%s\r\n%s\r\n" % (len(piece), ext.encode(), piece))
    out.append(b"0%s\r\n%s\r\n" % (ext.encode(), trailers.encode()))
    return b"".join(out)


def exchange(port: int, data: bytes, method: str = "GET", expect_close: bool = False,
             host: str = HOST) -> Response:
    """Open a connection, send `data`, read one response; if expect_close, also assert that the
    server then closes the connection without sending anything more."""
    with Conn.open(port, host) as c:
        c.send(data)
        resp = c.read_response(method)
        if expect_close:
            c.expect_closed()
        return resp


def get(port: int, target: str = "/", headers=None, host: str = HOST) -> Response:
    """One GET over a fresh connection (raw), returning the parsed response."""
    return exchange(port, request_bytes("GET", target, headers=headers), host=host)


def connect_refused(port: int, host: str = HOST) -> bool:
    """True if a TCP connect to host:port is refused (nothing listening)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    try:
        s.connect((host, port))
    except ConnectionRefusedError:
        return True
    except OSError as e:
        return e.errno in (errno.ECONNREFUSED,)
    finally:
        s.close()
    return False


def assert_still_serving(port: int, path: str = "/", body: Optional[bytes] = None) -> Response:
    """After something that might have broken the server (a refused request, an app error, a
    flood): a plain GET on a new connection is answered with 200 (and `body`, if given)."""
    with Conn.open(port) as c:
        c.send(request_bytes("GET", path))
        resp = c.read_response()
    assert resp.status == 200, f"the server stopped serving: {resp.status} {resp.reason}"
    if body is not None:
        assert resp.body == body, f"the server stopped serving: body {resp.body[:200]!r}"
    return resp


def assert_refused(port: int, raw: bytes, statuses, forbidden: Optional[bytes] = None) -> Response:
    """Send `raw`: exactly one answer with a status in `statuses`, then the connection closed.
    `forbidden`: bytes the answer must not contain (the app's, for a request it must never
    see). The server may refuse before reading everything; its answer is still there."""
    with Conn.open(port) as c:
        try:
            c.send(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass
        resp = c.read_response()
        assert resp.status in statuses, \
            f"got {resp.status} {resp.reason}, want {sorted(statuses)}; body {resp.body[:200]!r}"
        if forbidden is not None:
            assert forbidden not in resp.body, "the app was called for a request it must not see"
        c.expect_closed()
    return resp

