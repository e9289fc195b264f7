"""S2 app path: files under /static/ served by the app through `wsgi.file_wrapper` (8 KiB read
loop if the server has none), Content-Length and Content-Type set. The same directory is what the
servers' own static features and nginx serve in S2's "static" cases."""

import mimetypes
import os

import payloads

ROOT = str(payloads.STATIC)
BLOCK = 65536


def app(environ, start_response):
    path = environ.get("PATH_INFO", "")
    name = path[len("/static/"):] if path.startswith("/static/") else ""
    full = os.path.join(ROOT, name)
    if not name or "/" in name or name.startswith(".") or not os.path.isfile(full):
        start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "9")])
        return [b"not found"]
    f = open(full, "rb")
    size = os.fstat(f.fileno()).st_size
    ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
    start_response("200 OK", [("Content-Type", ctype), ("Content-Length", str(size))])
    wrapper = environ.get("wsgi.file_wrapper")
    if wrapper is not None:
        return wrapper(f, BLOCK)
    return _read_blocks(f)


def _read_blocks(f):
    try:
        while block := f.read(BLOCK):
            yield block
    finally:
        f.close()


application = app
