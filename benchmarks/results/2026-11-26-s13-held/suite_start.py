"""S13's sequence, one server: sluicegate (../2026-11-26-s13-cpu/serve_stats.py, the Django app
in-process, --threads 1:48) gets one request, then `wrk` for 1 s (the suite's warm-up) and 3 s
(the run) with a request on a new connection every 0.25 s beside it (the suite's sampler).
PostgreSQL's connections are counted every 20 ms. Prints the connection count where it changes,
and the server's readings where threads or the blocking room change.
argv: CONN_MAX_AGE, clients."""
import json, os, subprocess, sys, threading, time, urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2]


def start(age):
    """PostgreSQL (the suite's cluster) and the server with `CONN_MAX_AGE=age`: (pg, server, port)."""
    sys.path.insert(0, str(BENCH))
    os.chdir(BENCH)
    from bench import s13, procs
    import servers
    s13._configure(age)
    port = procs.free_port()
    serve = BENCH / "results" / "2026-11-26-s13-cpu" / "serve_stats.py"
    return s13._postgres(), subprocess.Popen([str(servers.SLUICEGATE_PY), str(serve), str(port)], cwd=servers.APPS,
                                             env=servers._env(None), stdout=subprocess.PIPE, text=True), port


age, clients = int(sys.argv[1]), int(sys.argv[2])
pg, srv, port = start(age)
time.sleep(3)
conns, stop = [], threading.Event()
t0 = time.monotonic()
def count():
    while not stop.is_set():
        try:
            conns.append((round(time.monotonic() - t0, 2), pg.connections()))
        except Exception:
            pass
        time.sleep(0.02)
def sample():
    while not stop.wait(0.25):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/item/4242", timeout=5).read()
threading.Thread(target=count, daemon=True).start()
urllib.request.urlopen(f"http://127.0.0.1:{port}/item/4242", timeout=5).read()
url = f"http://127.0.0.1:{port}/item/4242"
subprocess.run(["wrk", "-t1", f"-c{clients}", "-d1s", url], capture_output=True)
threading.Thread(target=sample, daemon=True).start()
w = subprocess.run(["wrk", "-t1", f"-c{clients}", "-d3s", url], capture_output=True, text=True).stdout
stop.set()
srv.terminate()
out = srv.communicate(timeout=20)[0]
print([l.strip() for l in w.splitlines() if "Requests/sec" in l], "most connections:", max(n for _, n in conns))
last = None
print("connections (s, n):", "; ".join(f"{t} {n}" for t, n in conns if n != last and not (last := n) is None))
last = None
for l in out.splitlines():
    s = json.loads(l)
    key = (s["threads"], s["blocking_room"], s["takeovers"], s["demotions"])
    if key != last:
        print(l)
        last = key
