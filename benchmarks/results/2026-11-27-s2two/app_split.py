"""app_split.py N: S2's app called N times on one thread, no server; user and system CPU µs per
call (os.times). The system part is the app's ten GIL-releasing system calls (perf trace -s:
2 read, 3 newfstatat, 2 lseek, openat, close, ioctl per call): the most a second app thread
could overlap with Python per call, in ten windows."""
import os, sys
sys.path.insert(0, "/work/main/benchmarks/apps")
import s2_static
ENV = {"PATH_INFO": "/read/file_21324.bin", "REQUEST_METHOD": "GET"}
def sr(status, headers, exc_info=None):
    return None
n = int(sys.argv[1])
a = os.times()
for _ in range(n):
    s2_static.app(dict(ENV), sr)
b = os.times()
u, s = (b.user - a.user) * 1e6 / n, (b.system - a.system) * 1e6 / n
print(f"user {u:.1f} us, system {s:.1f} us per call ({s / (u + s):.0%} in the kernel)")
