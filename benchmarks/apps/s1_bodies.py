"""S1 app: large bodies (688,128 bytes and 64 MiB) returned three ways.

  /bytes/<size>  a bare `bytes` object (PEP 3333 forbids it: iterating it yields ints; wsgiref
                 sent it one byte per write, 16.84 s for 688,128 bytes; many servers reject it)
  /list/<size>   `[bytes]`
  /file/<size>   `wsgi.file_wrapper(open(file))`; a server without file_wrapper gets the PEP 3333
                 fallback, an iterator of 8 KiB reads (what an app must do then)
with <size> = 688128 or 64MiB. Every answer has Content-Length.
"""

import payloads

BODIES = {key: payloads.body_path(key).read_bytes() for key in payloads.S1_SIZES}
FALLBACK_BLOCK = 8192


def app(environ, start_response):
    parts = environ.get("PATH_INFO", "").strip("/").split("/")
    if len(parts) != 2 or parts[0] not in ("bytes", "list", "file") or parts[1] not in BODIES:
        start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "9")])
        return [b"not found"]
    mode, key = parts
    body = BODIES[key]
    start_response("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(len(body)))])
    if mode == "bytes":
        return body
    if mode == "list":
        return [body]
    f = open(payloads.body_path(key), "rb")
    wrapper = environ.get("wsgi.file_wrapper")
    if wrapper is not None:
        return wrapper(f, FALLBACK_BLOCK)
    return _read_blocks(f)


def _read_blocks(f):
    try:
        while block := f.read(FALLBACK_BLOCK):
            yield block
    finally:
        f.close()


application = app
