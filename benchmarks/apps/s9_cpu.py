"""S9 app: about 1 ms of pure-Python CPU per request (a loop of integer arithmetic, sized once
at import so that it takes ~1 ms on this machine), then a short fixed body. `/hello` answers at
once (the readiness probe). The body is the same for every request, so bytes can be verified."""

import time


def _spin(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def _calibrate(target_s=0.001):
    n = 10000
    while True:
        t0 = time.perf_counter()
        _spin(n)
        took = time.perf_counter() - t0
        if took > 0.005:
            return max(1, int(n * target_s / took))
        n *= 2


SPIN = _calibrate()
BODY = b"computed\n"


def app(environ, start_response):
    if environ.get("PATH_INFO") != "/hello":
        _spin(SPIN)
        body = BODY
    else:
        body = b"hello"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
