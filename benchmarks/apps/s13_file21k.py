"""Pool-path app: read a 21 KB file from disk and return it, as a template or a
small cached asset would be. Opening and reading the file releases the GIL, so this app runs
on the pool path under the adaptive scheduler, like real apps that touch the disk or a
database on every request."""

import os

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "s13_file21k.bin")
if not os.path.exists(PATH):
    with open(PATH + ".tmp", "wb") as f:
        f.write(bytes((i * 7 + 3) % 251 for i in range(21 * 1024)))
    os.replace(PATH + ".tmp", PATH)


def app(environ, start_response):
    with open(PATH, "rb") as f:
        body = f.read()
    start_response("200 OK", [("Content-Type", "application/octet-stream"),
                              ("Content-Length", str(len(body)))])
    return [body]


application = app
