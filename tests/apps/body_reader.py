"""Reads the request body through ``wsgi.input`` in the mode chosen by the path, and answers a
JSON summary: total length, sha256, the pieces as returned (latin-1, only for bodies up to
64 KiB), and what further reads return after the end.

Modes: ``/read`` read(); ``/readn?n=N`` read(N) until b''; ``/readline`` readline() until b'';
``/readline_n?n=N`` readline(N) until b''; ``/readlines`` readlines(); ``/iter`` iteration;
``/readn_slow?n=N`` read(N) until b'' with a millisecond's pause after each piece (an app slower
than the upload); ``/readinto?n=N`` readinto() a bytearray of N until 0; ``/readinto_array?n=N`` the same into an
``array.array('B')`` (a buffer that is not a bytearray); ``/mixed?n=N`` readline(), read(N) and
readinto() of N in turn; ``/read_sized?n=N`` a single read(N) (N may exceed the body: must return only the body);
``/stream_first?n=N`` read(N), record ``<token> <len>`` under mark ``first-piece``, then read()
the rest (the test sends the rest only after the mark: a server that buffered the whole body
before calling the app would never get there).
``/sizes?sizes=A,B,...&slow=K&line_at=I`` read(A), read(B), ... (the list over again) until b'',
with a millisecond's pause after every K-th piece (0: none) and a readline() as piece I (-1:
none); the answer's ``short`` counts the read(N)s that returned fewer than N before the end.

Every request also logs one line to stderr (the server's error log)::

    body_reader token=<X-Token header> outcome=complete len=N sha256=...
    body_reader token=<X-Token header> outcome=error type=ExceptionName

so a test can tell what the app saw even when the client is gone. On an error the exception is
re-raised to the server (which must survive it)."""

import array
import hashlib
import json
import sys
import time

from tests.apps._state import mark, query


def _sized_pieces(inp, q, short):
    sizes = [int(x) for x in q["sizes"].split(",")]
    slow, line_at = int(q.get("slow", "0")), int(q.get("line_at", "-1"))
    pieces = []
    while True:
        i = len(pieces)
        want = sizes[i % len(sizes)]
        piece = inp.readline() if i == line_at else inp.read(want)
        if not piece:
            return pieces
        if pieces and i - 1 != line_at and len(pieces[-1]) < sizes[(i - 1) % len(sizes)]:
            short.append(i - 1)  # a short read(N) that was not the body's last
        pieces.append(piece)
        if slow and i % slow == 0:
            time.sleep(0.001)


def _pieces(environ, mode, n, token, short=None):
    inp = environ["wsgi.input"]
    if mode == "sizes":
        return _sized_pieces(inp, query(environ), short)
    if mode == "stream_first":
        first = inp.read(n)
        mark("first-piece", f"{token} {len(first)}")
        return [first, inp.read()]
    if mode == "read":
        return [inp.read()]
    if mode == "read_sized":
        return [inp.read(n)]
    if mode == "readn":
        return list(iter(lambda: inp.read(n), b""))
    if mode == "readn_slow":
        pieces = []
        while piece := inp.read(n):
            pieces.append(piece)
            time.sleep(0.001)
        return pieces
    if mode == "readline":
        return list(iter(inp.readline, b""))
    if mode == "readline_n":
        return list(iter(lambda: inp.readline(n), b""))
    if mode == "readlines":
        return inp.readlines()
    if mode == "iter":
        return [line for line in inp]
    if mode in ("readinto", "readinto_array"):
        buf = bytearray(n) if mode == "readinto" else array.array("B", bytes(n))
        pieces = []
        while True:
            k = inp.readinto(buf)
            if not k:
                return pieces
            assert 0 < k <= n, k
            pieces.append(bytes(buf[:k]))
    if mode == "readinto_readonly":
        try:
            inp.readinto(b"xyz")
        except TypeError:
            return [b"TypeError"]
        return [b"accepted"]
    if mode == "mixed":
        # Line, sized and into-buffer reads in turn: each must carry on exactly where the last
        # one stopped, whatever it left waiting.
        pieces, buf, turn = [], bytearray(n), 0
        while True:
            if turn % 3 == 0:
                piece = inp.readline()
            elif turn % 3 == 1:
                piece = inp.read(n)
            else:
                piece = bytes(buf[:inp.readinto(buf)])
            if not piece:
                return pieces
            pieces.append(piece)
            turn += 1
    raise ValueError("unknown mode " + mode)


def app(environ, start_response):
    mode = environ["PATH_INFO"].strip("/")
    n = int(query(environ).get("n", "8192"))
    token = environ.get("HTTP_X_TOKEN", "-")
    try:
        short = []
        pieces = _pieces(environ, mode, n, token, short)
        inp = environ["wsgi.input"]
        after = [inp.read(), inp.read(10), inp.readline()] if mode not in ("read_sized",) else []
    except Exception as e:
        print(f"body_reader token={token} outcome=error type={type(e).__name__}: {e}",
              file=sys.stderr, flush=True)
        raise
    data = b"".join(pieces)
    digest = hashlib.sha256(data).hexdigest()
    print(f"body_reader token={token} outcome=complete len={len(data)} sha256={digest}",
          file=sys.stderr, flush=True)
    result = {
        "len": len(data),
        "sha256": digest,
        "types": sorted({type(p).__name__ for p in pieces}),
        "count": len(pieces),
        "short": len(short),
        "after_end": [repr(a) for a in after],
    }
    if len(data) <= 65536:
        result["pieces"] = [p.decode("latin-1") for p in pieces]
    body = json.dumps(result).encode()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(body)))])
    return [body]
