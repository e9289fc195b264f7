"""The app of the HTTP/2 tests (tests/test_http2.py): one route per behaviour.

- ``/``: hello world; ``/big?n=BYTES``: that many bytes in 64 KiB blocks from a generator;
- ``/echo``: the request body read with ``wsgi.input.read()``, answered with its length
  and SHA-256 in headers and the body itself;
- ``/environ``: the environ's str values as ``KEY=VALUE`` lines;
- ``/together?n=N&token=T``: counts the calls in the app at once and waits (bounded) until N
  calls with the same token are inside together; answers how many it saw. Streams that ran
  one after another would each see 1 (after the wait times out);
- ``/gate?name=G``: marks ``entered`` then waits for the test's gate G;
- ``/events?name=G``: server-sent events: one event, then waits for the test's gate G, then a
  second one (the first must reach the client while the app waits);
- ``/read-after-head``: sends its head and a first block, then reads the request body; the
  exception that read raised (if any) is marked ``read-error`` and raised on;
- ``/spaced``: header values with spaces around them (as Django's ``Set-Cookie`` has);
- ``/boom``: raises before start_response;
- ``/hop``: sets connection-specific headers, which must not reach an HTTP/2 client;
- ``/q?...``: the query string itself (each stream's own answer);
- ``/closing?token=T`` (``&fail=1``): an iterable whose ``close()`` marks ``closed`` T; with
  ``fail`` its first block raises (nothing sent: the server answers 500).
"""

import hashlib
import threading

from tests.apps._state import mark, query, wait_gate

_lock = threading.Condition()


class Closing:
    def __init__(self, token, fail):
        self.token, self.fail, self.done = token, fail, False

    def __iter__(self):
        return self

    def __next__(self):
        if self.fail:
            raise RuntimeError("closing: planned failure (expected by the test)")
        if self.done:
            raise StopIteration
        self.done = True
        return b"closing"

    def close(self):
        mark("closed", self.token)
_inside = {}


def app(environ, start_response):
    path = environ["PATH_INFO"]
    q = query(environ)
    if path == "/big":
        n = int(q.get("n", "0"))

        def blocks():
            left = n
            while left > 0:
                k = min(left, 65536)
                yield b"x" * k
                left -= k
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return blocks()
    if path == "/echo":
        body = environ["wsgi.input"].read()
        start_response("200 OK", [("Content-Type", "application/octet-stream"),
                                  ("X-Length", str(len(body))),
                                  ("X-Sha256", hashlib.sha256(body).hexdigest())])
        return [body]
    if path == "/environ":
        lines = [f"{k}={v}" for k, v in sorted(environ.items()) if isinstance(v, (str, bool))]
        start_response("200 OK", [("Content-Type", "text/plain")])
        return ["\n".join(lines).encode("latin-1")]
    if path == "/together":
        want, token = int(q["n"]), q["token"]
        with _lock:
            _inside[token] = _inside.get(token, 0) + 1
            _lock.notify_all()
            _lock.wait_for(lambda: _inside[token] >= want, timeout=10)
            seen = _inside[token]
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [str(seen).encode()]
    if path == "/gate":
        mark("entered", q["name"])
        wait_gate(q["name"])
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"through the gate"]
    if path == "/events":
        def events():
            yield b"data: one\n\n"
            wait_gate(q["name"])
            yield b"data: two\n\n"
        start_response("200 OK", [("Content-Type", "text/event-stream"),
                                  ("Cache-Control", "no-cache")])
        return events()
    if path == "/read-after-head":
        def after_head():
            yield b"head sent\n"
            try:
                environ["wsgi.input"].read()
            except Exception as e:
                mark("read-error", type(e).__name__)
                raise
            yield b"body read\n"
        start_response("200 OK", [("Content-Type", "text/plain")])
        return after_head()
    if path == "/spaced":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Set-Cookie", " a=1; Path=/"),
                                  ("X-Padded", "\tv w ")])
        return [b"spaced"]
    if path == "/boom":
        raise RuntimeError("boom (expected by the test)")
    if path == "/hop":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Connection", "close"),
                                  ("Keep-Alive", "timeout=5"), ("Transfer-Encoding", "chunked"),
                                  ("Upgrade", "h2c")])
        return [b"no hop-by-hop"]
    if path == "/q":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [environ["QUERY_STRING"].encode()]
    if path == "/closing":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Closing(q["token"], q.get("fail") == "1")
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"Hello, World!"]
