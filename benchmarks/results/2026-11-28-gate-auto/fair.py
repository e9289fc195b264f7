"""S12's fast route beside CPU-bound calls, with many probes: start the server with --start-gate G,
wrk -cN on /cpu?ms=30 for S seconds, and a fresh connection per /hello probe every 20 ms."""
import os, socket, statistics, subprocess, sys, time
APPS = "/work/main/benchmarks/apps"
gate, busy, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
srv = subprocess.Popen(["/work/main/.venv/bin/python", "-m", "sluicegate", "--bind", f"127.0.0.1:{port}",
                        "--start-gate", gate, "s12_busy:app"], cwd=APPS, env={**os.environ, "PYTHONPATH": APPS},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def get(path):
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    c.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    d = b""
    while True:
        x = c.recv(65536)
        if not x: break
        d += x
    c.close(); return d
for _ in range(100):
    try: get("/hello"); break
    except OSError: time.sleep(0.1)
w = subprocess.Popen(["wrk", "-t1", f"-c{busy}", f"-d{secs + 1}s", f"http://127.0.0.1:{port}/cpu?ms=30"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.5)
lat = []; end = time.monotonic() + secs
while time.monotonic() < end:
    t = time.monotonic(); r = get("/hello"); lat.append(time.monotonic() - t)
    assert r.endswith(b"hello"), r[-40:]
    time.sleep(max(0, 0.02 - (time.monotonic() - t)))
w.wait(); srv.terminate(); srv.wait()
lat.sort(); n = len(lat)
print(f"gate={gate} busy={busy} probes={n} p50={lat[n//2]*1e3:.1f}ms p99={lat[int(n*0.99)]*1e3:.1f}ms max={lat[-1]*1e3:.1f}ms over100ms={sum(x > 0.1 for x in lat)}")
