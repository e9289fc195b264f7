"""app_alone.py SECONDS: S2's app (`/read/file_21324.bin`) called in a loop on one thread, no server:
CPU µs per call (the part of a request no server can take off the thread that holds the GIL,
GIL-releasing system calls included)."""
import sys, time
sys.path.insert(0, "/work/main/benchmarks/apps")
import s2_static
ENV = {"PATH_INFO": "/read/file_21324.bin", "REQUEST_METHOD": "GET"}
def sr(status, headers, exc_info=None):
    return None
secs = float(sys.argv[1]); n = 0
c0, w0 = time.thread_time(), time.perf_counter()
while time.perf_counter() - w0 < secs:
    for _ in range(100):
        s2_static.app(dict(ENV), sr)
    n += 100
c1 = time.thread_time()
print(f"app alone: {(c1 - c0) * 1e6 / n:.1f} us CPU/call ({n} calls)")
