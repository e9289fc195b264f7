"""S9 app: about 1 ms of pure-Python CPU per request (a fixed loop of integer arithmetic),
then a short fixed body. `/hello` answers at
once (the readiness probe). The body is the same for every request, so bytes can be verified."""


def _spin(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


# A fixed amount of work, the same for every server and every run: about 1 ms of CPU on this
# machine (measured: 14,000 iterations in 0.98-1.05 ms). Calibrating at import instead gave
# each process its own amount (it ran while other processes started), which made the ratios
# meaningless.
SPIN = 14000
BODY = b"computed\n"


def app(environ, start_response):
    if environ.get("PATH_INFO") != "/hello":
        _spin(SPIN)
        body = BODY
    else:
        body = b"hello"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
