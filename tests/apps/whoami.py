"""Answers the serving process's pid, importing nothing the interpreter has not loaded at
start: a server that dropped to `nobody` may not be able to read the standard library of an
interpreter installed under root's home."""

import os


def app(environ, start_response):
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Length", str(len(body)))])
    return [body]
