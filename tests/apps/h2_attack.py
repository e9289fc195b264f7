"""The app of the HTTP/2 attack tests (tests/test_h2_attack.py): one route per behaviour.

- ``/hold?name=G``: marks ``entered`` G, waits for the test's gate G (never opened: the call
  outlives any stop), then answers;
- ``/partial?name=G``: sends its head and a first block, marks ``entered`` G, waits for gate G,
  then a last block (a stream cut after its first DATA);
- ``/read?step=N``: reads the request body N bytes at a time, marking the running total in
  ``read`` after each read; a read that raises is marked ``read-error`` (its type) and raised
  on; answers the total read;
- ``/big?n=BYTES``: that many bytes in 64 KiB blocks from a generator;
- ``/host``: the environ's ``HTTP_HOST``; ``/pid``: the worker's process id (the fault suite's
  load);
- anything else: hello world.
"""

import os

from tests.apps._state import mark, query, wait_gate


def app(environ, start_response):
    path = environ["PATH_INFO"]
    q = query(environ)
    if path == "/hold":
        mark("entered", q["name"])
        wait_gate(q["name"])
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"held"]
    if path == "/partial":
        def blocks():
            yield b"first block\n"
            mark("entered", q["name"])
            wait_gate(q["name"])
            yield b"last block\n"
        start_response("200 OK", [("Content-Type", "text/plain")])
        return blocks()
    if path == "/read":
        step, total = int(q.get("step", "65536")), 0
        while True:
            try:
                block = environ["wsgi.input"].read(step)
            except Exception as e:
                mark("read-error", type(e).__name__)
                raise
            if not block:
                break
            total += len(block)
            mark("read", str(total))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [str(total).encode()]
    if path == "/host":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [environ.get("HTTP_HOST", "").encode("latin-1")]
    if path == "/big":
        def blocks(left=int(q.get("n", "0"))):
            while left > 0:
                yield b"x" * min(left, 65536)
                left -= 65536
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return blocks()
    if path == "/pid":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [str(os.getpid()).encode()]
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"Hello, World!"]
