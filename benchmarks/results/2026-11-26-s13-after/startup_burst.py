"""S13 at the start of a run: sluicegate (serve_stats.py: the Django app in-process, --threads 1:48) under wrk -c16,
PostgreSQL connections counted every 20 ms beside the server's stats."""
import json, os, subprocess, sys, threading, time
from pathlib import Path
BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH)); os.chdir(BENCH)
from bench import s13, procs
import servers
age = int(sys.argv[1]); clients = int(sys.argv[2])
s13._configure(age)
pg = s13._postgres()
port = procs.free_port()
env = servers._env(None)
srv = subprocess.Popen([str(servers.SLUICEGATE_PY), str(Path(__file__).resolve().parents[1] / "2026-11-26-s13-cpu" / "serve_stats.py"), str(port)],
                       cwd=servers.APPS, env=env, stdout=subprocess.PIPE, text=True)
time.sleep(3)
conns = []
stop = threading.Event()
def count():
    t0 = time.monotonic()
    while not stop.is_set():
        try:
            conns.append((round(time.monotonic() - t0, 2), pg.connections()))
        except Exception as e:
            pass
        time.sleep(0.02)
threading.Thread(target=count, daemon=True).start()
w1 = subprocess.run(["wrk", "-t1", f"-c{clients}", "-d1s", f"http://127.0.0.1:{port}/item/4242"], capture_output=True, text=True).stdout
w2 = subprocess.run(["wrk", "-t1", f"-c{clients}", "-d3s", f"http://127.0.0.1:{port}/item/4242"], capture_output=True, text=True).stdout
stop.set()
srv.terminate()
out = srv.communicate(timeout=20)[0]
print([l for l in w2.splitlines() if "Requests/sec" in l])
print("conns timeline (t, n) where n changes:")
last = None
for t, n in conns:
    if n != last:
        print(t, n, end="; ")
        last = n
print()
lines = out.splitlines()
print("stats lines", len(lines))
for l in lines[:12] + lines[-6:]:
    print(l)
