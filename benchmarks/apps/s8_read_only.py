"""S8's app without the hashing: reads `wsgi.input` in 64 KiB blocks and answers the length
read, so that an upload's time is the server's reading alone (bench/s8_connections.py)."""


def app(environ, start_response):
    stream = environ["wsgi.input"]
    total = 0
    while True:
        block = stream.read(1 << 16)
        if not block:
            break
        total += len(block)
    body = b"%d" % total
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
