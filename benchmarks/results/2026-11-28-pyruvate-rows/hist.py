"""The distribution of S3 `/8192` fetch times on one connection, as a text histogram.

    python3 hist.py PORT COUNT

Each fetch is timed from the request's send to its body's end (the last chunk, or the close
of a server that answers unframed and closes; a new connection is then made before the next
fetch's clock starts, as `bench/rawhttp.py` does). Rows of 0.1 ms; each `#` is half a percent
of the fetches, and the median is printed last.
"""

import collections
import socket
import statistics
import sys
import time

END = b"\r\n0\r\n\r\n"


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def main() -> None:
    port, n = int(sys.argv[1]), int(sys.argv[2])
    s = connect(port)
    times = []
    for _ in range(n):
        if s is None:
            s = connect(port)
        t = time.perf_counter()
        s.sendall(b"GET /8192 HTTP/1.1\r\nHost: x\r\n\r\n")
        raw = bytearray()
        while not raw.endswith(END):
            d = s.recv(262144)
            if not d:
                s.close()
                s = None
                break
            raw += d
        times.append(time.perf_counter() - t)
    counts = collections.Counter(int(x * 1e4) for x in times)
    for k in sorted(counts):
        print(f"{k / 10:4.1f} ms {'#' * (counts[k] * 200 // n)}")
    print(f"median {statistics.median(times) * 1e3:.3f} ms over {n} fetches")


if __name__ == "__main__":
    main()
