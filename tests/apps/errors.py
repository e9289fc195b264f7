"""Apps that misbehave, one per path. Every exception message contains ``SECRET-TRACEBACK-MARKER``
so a test can check it reached the error log and never the response body.

- ``/ok``: a normal 200 (to check the server still serves after the others).
- ``/wsgi_errors``: writes to ``wsgi.errors`` with write(), writelines() and flush(), then
  answers 200; the lines must reach the server's error log.
- ``/raise_before``: raises before calling start_response.
- ``/raise_after_start``: calls start_response, then raises before returning (nothing sent yet).
- ``/raise_first_block``: returns a generator that raises on its first next() (headers not yet
  sent: the server can still answer 500).
- ``/raise_after``: no Content-Length; yields one block, then raises (headers and a chunk were
  sent: the response must end truncated, without the last chunk).
- ``/raise_after_cl``: Content-Length 100; yields 10 bytes, then raises.
- ``/yield_str``: yields a str instead of bytes.
- ``/bad_status_crlf``, ``/bad_status_lf``, ``/bad_status_cr``, ``/bad_status_nul``: a status
  containing the character, followed by an injected header text.
- ``/bad_value_crlf``, ``/bad_value_lf``, ``/bad_value_cr``, ``/bad_value_nul``: a header value
  containing it; ``/bad_name_crlf``: a header name containing CRLF.
- ``/interim?code=N``: calls start_response with the 1xx status ``N`` (default 103 Early
  Hints) and returns a body, as if it were final.
- ``/big_header?size=N``: one header ``X-Big`` of N bytes (the response header limit).
- ``/hop_by_hop``: sets the hop-by-hop headers Keep-Alive, Transfer-Encoding, Upgrade and
  Proxy-Connection (the server's business: dropped, logged once) beside an ordinary X-Kept.
- ``/latin1``: a status reason and header values with characters 128-255, as literals, as
  strings built at run time, and as a str subclass: each goes on the wire as its latin-1 byte.
- ``/not_latin1``: a header value with a character past 255 (no latin-1 byte for it).
"""

SECRET = "SECRET-TRACEBACK-MARKER"
CHARS = {"crlf": "\r\n", "lf": "\n", "cr": "\r", "nul": "\x00"}


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/ok":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]
    if path == "/wsgi_errors":
        err = environ["wsgi.errors"]
        err.write("wsgi.errors write: first line\n")
        err.writelines(["wsgi.errors writelines: second line\n", "wsgi.errors third line\n"])
        err.flush()
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]
    if path == "/big_header":
        size = int(environ.get("QUERY_STRING", "").partition("size=")[2] or "0")
        start_response("200 OK", [("Content-Type", "text/plain"), ("X-Big", "b" * size),
                                  ("Content-Length", "3")])
        return [b"big"]
    if path == "/interim":
        code = environ.get("QUERY_STRING", "").partition("code=")[2] or "103"
        start_response(f"{code} Early Hints", [("Content-Type", "text/plain")])
        return [b"not final"]
    if path == "/hop_by_hop":
        start_response("200 OK", [
            ("Content-Type", "text/plain"), ("Keep-Alive", "timeout=1"),
            ("Transfer-Encoding", "identity"), ("Upgrade", "h2c"),
            ("Proxy-Connection", "keep-alive"), ("X-Kept", "yes"), ("Content-Length", "3"),
        ])
        return [b"hop"]
    if path == "/latin1":
        class Text(str):
            pass
        built = "".join(["na", chr(0xEF), "ve"])
        start_response("200 Caf\xe9", [
            ("X-Literal", "caf\xe9 \xff"), ("X-Built", built), ("X-Sub", Text("\xe0 la")),
            ("X-Ascii-Sub", Text("plain")), ("Content-Length", "2"),
        ])
        return [b"ok"]
    if path == "/not_latin1":
        start_response("200 OK", [("X-Wide", "\u0100"), ("Content-Length", "2")])
        return [b"no"]
    if path == "/raise_before":
        raise RuntimeError(SECRET + " raised before start_response")
    if path == "/raise_after_start":
        start_response("200 OK", [("Content-Type", "text/plain")])
        raise RuntimeError(SECRET + " raised after start_response")
    if path == "/raise_first_block":
        start_response("200 OK", [("Content-Type", "text/plain")])

        def gen():
            raise RuntimeError(SECRET + " raised in the first next()")
            yield b"never"
        return gen()
    if path == "/raise_after":
        start_response("200 OK", [("Content-Type", "text/plain")])

        def gen():
            yield b"first block"
            raise RuntimeError(SECRET + " raised after the first block")
        return gen()
    if path == "/raise_after_cl":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "100")])

        def gen():
            yield b"0123456789"
            raise RuntimeError(SECRET + " raised after 10 of 100 bytes")
        return gen()
    if path == "/yield_str":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return ["a str, not bytes"]
    kind, _, ch = path.strip("/").rpartition("_")
    if kind == "bad_status" and ch in CHARS:
        start_response("200 OK" + CHARS[ch] + "X-Injected: yes",
                       [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"no"]
    if kind == "bad_value" and ch in CHARS:
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2"),
                                  ("X-Bad", "a" + CHARS[ch] + "X-Injected: yes")])
        return [b"no"]
    if kind == "bad_name" and ch in CHARS:
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2"),
                                  ("X-Bad" + CHARS[ch] + "X-Injected", "yes")])
        return [b"no"]
    start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "0")])
    return []
