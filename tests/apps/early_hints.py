"""For the `wsgi.early_hints` tests: an app that sends 103 Early Hints before its answer.

- ``/page``: two calls to ``wsgi.early_hints`` (a stylesheet, then a script), then 200 with a
  Link header and the body ``page``;
- ``/wait?name=G``: one hint, then waits for the test's gate G before it answers (so a test can
  see the 103 arrive while the app still works);
- ``/after``: calls ``wsgi.early_hints`` after start_response: the body names the error it got;
- ``/bad``: a hint whose value holds CR LF: the body names the error it got;
- ``/has``: whether the environ has the key at all (``yes``/``no``);
- ``/big-hints?name=G``: one hint of 256 Link fields of 32 KiB each (8 MiB: more than a client
  that does not read can take), then waits for the test's gate G (past ``--timeout``).
"""

from tests.apps._state import mark, query, wait_gate

STYLE = "</style.css>; rel=preload; as=style"
SCRIPT = "</app.js>; rel=preload; as=script"


def app(environ, start_response):
    path = environ["PATH_INFO"]
    hints = environ.get("wsgi.early_hints")
    if path == "/page":
        hints([("Link", STYLE)])
        hints([("Link", SCRIPT)])
        start_response("200 OK", [("Content-Type", "text/plain"), ("Link", STYLE)])
        return [b"page"]
    if path == "/wait":
        name = query(environ)["name"]
        hints([("Link", STYLE)])
        mark("hinted", name)
        wait_gate(name)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"after the gate"]
    if path == "/big-hints":
        name = query(environ)["name"]
        hints([("Link", f"</{i}-{'x' * 32768}>; rel=preload") for i in range(256)])
        wait_gate(name)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"after the gate"]
    if path in ("/after", "/bad"):
        outcome = "none"
        if path == "/after":
            start_response("200 OK", [("Content-Type", "text/plain")])
        try:
            hints([("Link", STYLE + "\r\nSet-Cookie: evil=1")] if path == "/bad" else
                  [("Link", STYLE)])
        except Exception as e:
            outcome = type(e).__name__
        if path == "/bad":
            start_response("200 OK", [("Content-Type", "text/plain")])
        return [f"refused: {outcome}".encode()]
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"yes" if callable(hints) else b"no"]
