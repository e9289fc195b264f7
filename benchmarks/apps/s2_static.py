"""S2 app path: files of the static directory served by the app, Content-Length and Content-Type set.

  /static/<name>  through `wsgi.file_wrapper` (a 64 KiB read loop if the server has none): what a
                  framework's static handler does; the same URL is what the servers' own static
                  features and nginx answer in S2's "static" cases
  /read/<name>    the file read into one bytes object per request, returned as `[data]` (the field
                  report's "reading the file into a string was fine")
"""

import mimetypes
import os

import payloads

ROOT = str(payloads.STATIC)
BLOCK = 65536


def app(environ, start_response):
    path = environ.get("PATH_INFO", "")
    how, _, name = path.lstrip("/").partition("/")
    full = os.path.join(ROOT, name)
    if how not in ("static", "read") or not name or "/" in name or name.startswith(".") or not os.path.isfile(full):
        start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "9")])
        return [b"not found"]
    if how == "read":
        with open(full, "rb") as f:
            data = f.read()
        ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
        start_response("200 OK", [("Content-Type", ctype), ("Content-Length", str(len(data)))])
        return [data]
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
