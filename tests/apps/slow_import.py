"""An app whose import can be held: for overlapping reloads (a HUP, or a code change with
`--reload`, while the previous reload's workers are still importing).

At import it records its pid under mark ``importing``; if the test created the state file
``hold-imports``, it then waits for the gate ``imports`` before it finishes. Answers its pid,
like ``workers``; ``/gate?name=G`` first marks ``entered`` G and waits for the gate G (a
request held in flight while a replacement worker is held in its import).
"""

import os

from tests.apps._state import STATE_DIR, mark, query, wait_gate

mark("importing", str(os.getpid()))
if os.path.exists(os.path.join(STATE_DIR, "hold-imports")):
    wait_gate("imports")


def app(environ, start_response):
    if environ["PATH_INFO"] == "/gate":
        name = query(environ)["name"]
        mark("entered", name)
        wait_gate(name)
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
