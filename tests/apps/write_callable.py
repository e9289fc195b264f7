"""Uses the write() callable returned by start_response (PEP 3333's legacy imperative API).

- ``/write_then_iter``: no Content-Length; write(b"one-"), write(b"two-"), then returns
  [b"three-", b"four"]: the client must get ``one-two-three-four``.
- ``/write_with_length``: Content-Length 11; write(b"hello "), returns [b"world"].
- ``/write_only``: no Content-Length; write(b"only written"), returns [].
- ``/keep``: keeps its start_response and write callables past the request (the server must
  not hand them to a later request: it reuses them only when nobody else holds them).
- ``/stale``: calls the kept ones from inside a later request and says what happened, as
  ``write=<exception> start=<exception> same=<is the kept object this request's>``.
"""

KEPT = []


def app(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/write_then_iter":
        write = start_response("200 OK", [("Content-Type", "text/plain")])
        write(b"one-")
        write(b"two-")
        return [b"three-", b"four"]
    if path == "/write_with_length":
        write = start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "11")])
        write(b"hello ")
        return [b"world"]
    if path == "/write_only":
        write = start_response("200 OK", [("Content-Type", "text/plain")])
        write(b"only written")
        return []
    if path == "/keep":
        write = start_response("200 OK", [("Content-Type", "text/plain")])
        KEPT[:] = [start_response, write]
        return [b"kept"]
    if path == "/stale":
        old_start, old_write = KEPT
        write = start_response("200 OK", [("Content-Type", "text/plain")])
        out = []
        for name, call in (("write", lambda: old_write(b"LEAKED")),
                           ("start", lambda: old_start("500 Oops", []))):
            try:
                call()
                out.append(f"{name}=none")
            except Exception as e:  # noqa: BLE001 - reported to the test
                out.append(f"{name}={type(e).__name__}")
        same = old_start.__self__ is start_response.__self__ or old_write is write
        out.append(f"same={same}")
        return [" ".join(out).encode()]
    start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "0")])
    return []
