"""Uses the write() callable returned by start_response (PEP 3333's legacy imperative API).

- ``/write_then_iter``: no Content-Length; write(b"one-"), write(b"two-"), then returns
  [b"three-", b"four"]: the client must get ``one-two-three-four``.
- ``/write_with_length``: Content-Length 11; write(b"hello "), returns [b"world"].
- ``/write_only``: no Content-Length; write(b"only written"), returns [].
"""


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
    start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "0")])
    return []
