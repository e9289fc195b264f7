"""S3 app: a 2.5 MB text streamed by a generator in 128-byte (/128) or 8 KiB (/8192) blocks.

No Content-Length, as a streaming app has none: an HTTP/1.1 server must send it chunked (or
close). PEP 3333 forbids a server to delay a block, so each block's overhead is what is measured.
The blocks are sliced ahead of time so that the app's own cost is only the generator step.
"""

import payloads

TEXT = payloads.text()
BLOCKS = {str(n): [TEXT[i:i + n] for i in range(0, len(TEXT), n)] for n in payloads.S3_BLOCKS}


def app(environ, start_response):
    blocks = BLOCKS.get(environ.get("PATH_INFO", "").strip("/"))
    if blocks is None:
        start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "9")])
        return [b"not found"]
    start_response("200 OK", [("Content-Type", "text/plain")])
    return _stream(blocks)


def _stream(blocks):
    for block in blocks:
        yield block


application = app
