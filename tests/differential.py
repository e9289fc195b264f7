"""The parser differential check's parts: seeded raw requests (a corpus of valid ones and
mutations of them), and three parsers' views of each: sluicegate's (a real server running
`tests/apps/echo_head.py`, which answers what it parsed), h11's and gunicorn's (their parsers fed
the same bytes in-process, followed by the end of input).

Each view is `Seen`: the requests parsed whole, in order, each as `Req` (method, target, header
fields as CGI keys, the way a WSGI app sees them, and body), and whether the parser refused
something (an error, or input left incomplete at the end). Requests after one that closes the
connection (`Connection: close`, HTTP/1.0 without keep-alive) are not read, by any of them.
`compare` says where two views of the same bytes differ where both accepted.
"""

from __future__ import annotations

import json
import random
import socket
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

Fields = Tuple[Tuple[str, str], ...]


@dataclass(frozen=True)
class Req:
    method: str
    target: str
    fields: Fields
    body: bytes


@dataclass
class Seen:
    requests: List[Req] = field(default_factory=list)
    refused: bool = False
    why: str = ""
    #: The parser ended the connection after its last request by its own keep-alive rules.
    closed: bool = False


# -- the inputs ---------------------------------------------------------------------------------

CORPUS: List[bytes] = [
    b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /p/a%20th?q=1&r=%41 HTTP/1.1\r\nHost: a.example:8080\r\nUser-Agent: t/1\r\n"
    b"Accept: */*\r\n\r\n",
    b"POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello",
    b"POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"3\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n",
    b"POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5;ext=1\r\nhello\r\n0\r\nTrailer: x\r\n\r\n",
    b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nX-A: 2\r\n\r\n",
    b"PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET /after HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /old HTTP/1.0\r\n\r\n",
    b"GET /ka HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /ka2 HTTP/1.0\r\n\r\n",
    b"GET /close HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET http://a.example/abs?x HTTP/1.1\r\nHost: a.example\r\n\r\n",
    b"DELETE /d HTTP/1.1\r\nHost: a\r\nX-Empty:\r\nX-Spaces:   v  \r\nCookie: a=1; b=2\r\n\r\n",
    b"POST /z HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
    b"GET /lf HTTP/1.1\nHost: a\n\n",
    b"PATCH /p HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\nbody",
]

# Bytes and pieces mutations put in: framing and whitespace are where parsers disagree.
PIECES = [b" ", b"\t", b"\r", b"\n", b"\r\n", b":", b";", b",", b"\x00", b"\x7f", b"\x80", b"\xff",
          b"0", b"1", b"a", b"A", b"-", b"_", b"/", b"?", b"#", b"%", b"\"", b"\x0b", b"\x0c",
          b"Content-Length: 2\r\n", b"Transfer-Encoding: chunked\r\n", b"Transfer-Encoding: x\r\n",
          b"Content-Length: +3\r\n", b"chunked", b"identity", b"HTTP/1.1", b"\r\n\r\n", b"ff",
          b"Host: b\r\n", b" \r\n", b"\r\n x\r\n"]


def mutate(rng: random.Random, raw: bytes) -> bytes:
    """`raw` changed in one to three places."""
    b = bytearray(raw)
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(b)) if b else 0
        kind = rng.randrange(8)
        if kind == 0 and b:  # replace one byte
            b[min(at, len(b) - 1)] = rng.choice(PIECES)[0]
        elif kind == 1:  # insert a piece
            b[at:at] = rng.choice(PIECES)
        elif kind == 2 and b:  # delete a few bytes
            del b[at:at + rng.randint(1, 4)]
        elif kind == 3:  # a line repeated
            lines = bytes(b).split(b"\r\n")
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
            b = bytearray(b"\r\n".join(lines))
        elif kind == 4:  # one CRLF to LF, or to CR
            i = bytes(b).find(b"\r\n", at)
            if i >= 0:
                b[i:i + 2] = rng.choice([b"\n", b"\r", b"\n\r"])
        elif kind == 5:  # a number changed (a length, a chunk size)
            digits = [i for i, c in enumerate(b) if 0x30 <= c <= 0x39]
            if digits:
                i = rng.choice(digits)
                b[i:i + 1] = rng.choice([b"0", b"9", b"00", b"1 ", b"-1", b"99999999999999999999",
                                         b"A", b"f", b"3,3"])
        elif kind == 6 and b:  # a name's case, or a byte's
            i = min(at, len(b) - 1)
            b[i:i + 1] = bytes(b[i:i + 1]).swapcase()
        else:  # another request after it
            b += rng.choice(CORPUS)
    return bytes(b)


def cases(seed: int, count: int) -> List[bytes]:
    """The corpus, then `count` mutations of it, the same for the same seed."""
    rng = random.Random(seed)
    return list(CORPUS) + [mutate(rng, rng.choice(CORPUS)) for _ in range(count)]


# -- the parsers --------------------------------------------------------------------------------

def cgi_fields(pairs) -> Fields:
    """(name, value) pairs as a WSGI app sees them: CGI keys, a name with '_' dropped (no CGI
    key can tell it from '-'), repeats joined with ", " (a repeated Content-Length kept once)."""
    out: dict = {}
    for name, value in pairs:
        if "_" in name:
            continue
        key = name.upper().replace("-", "_")
        key = key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else "HTTP_" + key
        if key in out and key != "CONTENT_LENGTH":
            out[key] = out[key] + ", " + value
        else:
            out.setdefault(key, value)
    return tuple(sorted(out.items()))


def h11_view(raw: bytes) -> Seen:
    import h11

    seen = Seen()
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(raw)
    conn.receive_data(b"")
    head: Optional[h11.Request] = None
    body = b""
    try:
        while True:
            ev = conn.next_event()
            if isinstance(ev, h11.Request):
                head, body = ev, b""
            elif isinstance(ev, h11.Data):
                body += ev.data
            elif isinstance(ev, h11.EndOfMessage):
                seen.requests.append(Req(
                    head.method.decode("latin-1"), head.target.decode("latin-1"),
                    cgi_fields((n.decode("latin-1"), v.decode("latin-1"))
                               for n, v in head.headers.raw_items()),
                    body))
                conn.send(h11.Response(status_code=200, headers=[("Content-Length", "0")]))
                conn.send(h11.EndOfMessage())
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    seen.closed = True  # (h11 never keeps an HTTP/1.0 connection alive)
                    return seen
                conn.start_next_cycle()
            elif ev is h11.NEED_DATA or isinstance(ev, h11.ConnectionClosed):
                return seen
    except h11.RemoteProtocolError as e:
        seen.refused, seen.why = True, str(e)
    return seen


def gunicorn_view(raw: bytes) -> Seen:
    from gunicorn.config import Config
    from gunicorn.http.parser import RequestParser

    seen = Seen()
    try:
        for req in RequestParser(Config(), iter([raw]), ("127.0.0.1", 0)):
            body = req.body.read()
            length = dict(req.headers).get("CONTENT-LENGTH")
            chunked = any(n == "TRANSFER-ENCODING" for n, _ in req.headers)
            if length is not None and not chunked and length.isdigit() and len(body) < int(length):
                seen.refused, seen.why = True, "body cut short"
                return seen
            seen.requests.append(Req(req.method, req.uri, cgi_fields(req.headers), body))
            if req.should_close():
                seen.closed = True
                return seen
    except StopIteration:
        pass
    except Exception as e:  # noqa: BLE001 - gunicorn's parse errors have no common base
        seen.refused, seen.why = True, f"{type(e).__name__}: {e}"
    return seen


def sluicegate_view(port: int, raw: bytes, timeout: float = 10.0) -> Seen:
    """Send `raw` on a new connection, end the input, and read every answer until the server
    closes: the echo app's answers are the requests it parsed; any other status a refusal."""
    seen = Seen()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw)
        s.shutdown(socket.SHUT_WR)
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    while data:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            seen.refused, seen.why = True, f"a cut answer {data[:60]!r}"
            break
        head = data[:end].decode("latin-1").split("\r\n")
        status = int(head[0].split()[1])
        length = 0
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name.lower() == "content-length":
                length = int(value)
        body, data = data[end + 4:end + 4 + length], data[end + 4 + length:]
        if 100 <= status < 200:
            continue
        if status != 200:
            seen.refused, seen.why = True, f"status {status}"
            break
        said_close = any(line.lower() == "connection: close" for line in head[1:])
        got = json.loads(body)
        fields = tuple(sorted(got["headers"].items()))
        seen.requests.append(Req(got["method"], got["target"], fields,
                                 got["body"].encode("latin-1")))
        tokens = [t.strip().lower() for t in got["headers"].get("HTTP_CONNECTION", "").split(",")]
        seen.closed = said_close or "close" in tokens or (
            got["protocol"] == "HTTP/1.0" and "keep-alive" not in tokens)
    return seen


# -- the comparison -----------------------------------------------------------------------------

#: Fields left out of the comparison: framing fields (the bodies are compared instead, and a
#: parser may drop Content-Length beside chunked), and the Expect a server answers itself.
UNCOMPARED = {"CONTENT_LENGTH", "HTTP_TRANSFER_ENCODING", "HTTP_EXPECT"}


def comparable(r: Req) -> Req:
    """`r` without the fields not compared. The Host of an absolute-form target is its
    authority for sluicegate (RFC 9112 §3.2.2: it replaces the Host field), the field for the
    others: a choice of meaning, not of parsing, so it is left out there too."""
    absolute = not r.target.startswith("/") and r.target != "*"
    skip = UNCOMPARED | ({"HTTP_HOST"} if absolute else set())
    return Req(r.method, r.target, tuple(f for f in r.fields if f[0] not in skip), r.body)


def compare(ours: Seen, theirs: Seen) -> Optional[str]:
    """Where the two views differ on requests both parsed (the same method, target, fields and
    body, in order), or on how many there were when neither refused anything; None if nowhere."""
    for i, (a, b) in enumerate(zip(ours.requests, theirs.requests)):
        if comparable(a) != comparable(b):
            return f"request {i}: sluicegate saw {a}, the other {b}"
    # How many: when neither refused anything and both read to the input's end (not when one
    # ended the connection by its keep-alive rules, which differ: h11 closes every HTTP/1.0
    # connection; that is not a framing difference).
    if not (ours.refused or theirs.refused or ours.closed or theirs.closed) \
            and len(ours.requests) != len(theirs.requests):
        return (f"{len(ours.requests)} request(s) against {len(theirs.requests)}: "
                f"{ours.requests} / {theirs.requests}")
    return None
