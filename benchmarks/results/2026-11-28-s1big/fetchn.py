"""fetchn.py PORT PATH N: N keep-alive fetches of PATH over one connection (bench/rawhttp.py),
each checked for status 200; prints the median time per fetch."""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import rawhttp  # noqa: E402

port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
times = []
with rawhttp.Connection(port) as c:
    for _ in range(n):
        t0 = time.perf_counter()
        r = c.request("GET", path, keep_body=False) if "keep_body" in rawhttp.Connection.request.__code__.co_varnames else c.request("GET", path)
        times.append(time.perf_counter() - t0)
        assert r.status == 200, r.status
print(f"{path} x{n}: median {statistics.median(times)*1e3:.2f} ms")
