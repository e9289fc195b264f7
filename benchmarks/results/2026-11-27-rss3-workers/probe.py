"""A probe app: /mods the sorted sys.modules of the worker answering, /alloc its
sys._debugmallocstats(), /status its /proc/self/status, /trace its tracemalloc by file."""
import sys, gc, os
def app(environ, start_response):
    p = environ["PATH_INFO"]
    if p == "/mods":
        body = "\n".join(sorted(sys.modules))
    elif p == "/alloc":
        import io, contextlib
        buf = io.StringIO()
        # _debugmallocstats writes to stderr (C level); use fd redirect
        r, w = os.pipe()
        old = os.dup(2); os.dup2(w, 2)
        sys._debugmallocstats()
        os.dup2(old, 2); os.close(w)
        data = b""
        while True:
            b = os.read(r, 65536)
            if not b or len(data) > 10**6: break
            data += b
            if b"Total" in data and data.rstrip().endswith(b"bytes"): pass
            if len(b) < 65536: break
        body = data.decode()
    elif p == "/status":
        body = open("/proc/self/status").read()
    elif p == "/trace":
        import tracemalloc
        snap = tracemalloc.take_snapshot()
        st = snap.statistics("filename")
        body = "\n".join(f"{s.size/1024:8.1f} {s.traceback[0].filename}" for s in st[:80])
        body = f"total {sum(s.size for s in st)/1024:.0f} kB\n" + body
    else:
        body = "hello"
    b = body.encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(b)))])
    return [b]
