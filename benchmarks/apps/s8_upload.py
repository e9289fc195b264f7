"""S8 app: reads `wsgi.input` fully and answers `<length> <sha256 hex>` of what it read.

With Content-Length it reads exactly that many bytes; without (a chunked upload) it reads until
the server's input stream says end-of-body (b""), which PEP 3333 leaves to the server
(`wsgi.input_terminated`). A server that hands a chunked body over as empty shows up as length 0.
"""

import hashlib

BLOCK = 1 << 16


def app(environ, start_response):
    stream = environ["wsgi.input"]
    h = hashlib.sha256()
    total = 0
    try:
        remaining = int(environ.get("CONTENT_LENGTH") or -1)
    except ValueError:
        remaining = -1
    while remaining != 0:
        block = stream.read(BLOCK if remaining < 0 else min(BLOCK, remaining))
        if not block:
            break
        h.update(block)
        total += len(block)
        if remaining > 0:
            remaining -= len(block)
    body = b"%d %s" % (total, h.hexdigest().encode())
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


application = app
