"""S5 app: yields `Hello`, blocks 0.1 s (a database call, say), yields `World`.

Content-Length is set so that keep-alive works without chunking on every server; the ideal rate
is clients / 0.1 s, which only a server that does not tie one thread to one blocked request (or
has that many threads) reaches.
"""

import time


def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "10")])
    return _body()


def _body():
    yield b"Hello"
    time.sleep(0.1)
    yield b"World"


application = app
