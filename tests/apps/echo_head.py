"""For the parser differential check: answers, as JSON, what the server parsed of the request:
its method, raw target, protocol, header fields (CGI keys, as the environ has them) and body (read whole,
latin-1)."""

import json


def app(environ, start_response):
    body = environ["wsgi.input"].read()
    fields = {k: v for k, v in environ.items()
              if k.startswith("HTTP_") or k in ("CONTENT_TYPE", "CONTENT_LENGTH")}
    out = json.dumps({"method": environ["REQUEST_METHOD"], "target": environ["RAW_URI"],
                      "protocol": environ["SERVER_PROTOCOL"],
                      "headers": fields, "body": body.decode("latin-1")}).encode()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(out)))])
    return [out]
