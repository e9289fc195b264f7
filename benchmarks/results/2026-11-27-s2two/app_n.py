"""app_n.py N: S2's app called N times on one thread, no server (run under callgrind twice, N=200 and
N=2200: the difference over 2,000 is the app's user-space instructions per call)."""
import sys
sys.path.insert(0, "/work/main/benchmarks/apps")
import s2_static
ENV = {"PATH_INFO": "/read/file_21324.bin", "REQUEST_METHOD": "GET"}
def sr(status, headers, exc_info=None):
    return None
n = int(sys.argv[1])
for _ in range(n):
    s2_static.app(dict(ENV), sr)
