"""S4 app: `pong` with 15 response headers, the health-check answer whose headers a server may
write one packet at a time (BaseHTTPServer did: 1 TCP segment per header)."""

BODY = b"pong"
HEADERS = [
    ("Content-Type", "text/plain"),
    ("Content-Length", str(len(BODY))),
    ("Cache-Control", "no-cache, no-store, must-revalidate"),
    ("Pragma", "no-cache"),
    ("Expires", "0"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("X-XSS-Protection", "1; mode=block"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Health-Check", "ok"),
    ("X-Service", "sluicegate-benchmark"),
    ("X-Instance", "bench-1"),
    ("X-Request-Cost", "1"),
    ("Vary", "Accept-Encoding"),
    ("X-Extra-Header-15", "fifteen"),
]
assert len(HEADERS) == 15


def app(environ, start_response):
    start_response("200 OK", HEADERS)
    return [BODY]


application = app
