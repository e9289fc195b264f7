"""S8 memory app: reads the whole body with one `wsgi.input.read()` and answers
`<length> <peak RSS growth in KiB during the read> <sha256 hex>`. The growth is the process's
VmHWM after the read minus before it, so each case needs a fresh server (bench/s8_memory.py).
"""

import hashlib


def _hwm_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def app(environ, start_response):
    before = _hwm_kib()
    data = environ["wsgi.input"].read()
    grew = _hwm_kib() - before
    body = b"%d %d %s" % (len(data), grew, hashlib.sha256(data).hexdigest().encode())
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


application = app
