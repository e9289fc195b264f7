"""A slow query at a descended room: sluicegate (`../2026-11-26-s13-cpu/serve_stats.py`, the S13
Django app in-process, `CONN_MAX_AGE=60`) under `wrk -c16` for 8 s; at 5 s one request with
`?sleep=1` (`SELECT pg_sleep(1)` first, then the same page). Prints the server's readings where
the blocking room changes, and how long the slow request and the requests sent on a new
connection every 50 ms beside it took. argv: none."""
import json, os, subprocess, sys, threading, time, urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH))
os.chdir(BENCH)
from bench import s13, procs  # noqa: E402
import servers  # noqa: E402

s13._configure(60)
pg = s13._postgres()
port = procs.free_port()
serve = BENCH / "results" / "2026-11-26-s13-cpu" / "serve_stats.py"
srv = subprocess.Popen([str(servers.SLUICEGATE_PY), str(serve), str(port)], cwd=servers.APPS,
                       env=servers._env(None), stdout=subprocess.PIPE, text=True)
time.sleep(3)
url = f"http://127.0.0.1:{port}/item/4242"
urllib.request.urlopen(url, timeout=5).read()
t0 = time.monotonic()
wrk = subprocess.Popen(["wrk", "-t1", "-c16", "-d8s", "--latency", url], stdout=subprocess.PIPE, text=True)
beside = []


def fetch(u, out):
    t = time.monotonic()
    urllib.request.urlopen(u, timeout=10).read()
    out.append((round(t - t0, 2), round((time.monotonic() - t) * 1000, 1)))


time.sleep(5)
slow = []
th = threading.Thread(target=fetch, args=(url + "?sleep=1", slow))
th.start()
while th.is_alive():
    fetch(url, beside)
    time.sleep(0.05)
print("slow request (start s, ms):", slow)
print("beside it (start s, ms):", beside)
print("wrk:", [l.strip() for l in wrk.communicate()[0].splitlines() if "Requests/sec" in l or "99%" in l])
srv.terminate()
last = None
for line in srv.communicate(timeout=20)[0].splitlines():
    s = json.loads(line)
    if s["blocking_room"] != last:
        print({k: s[k] for k in ("requests", "threads", "blocking_room", "blocking_room_least", "admission_queue")})
        last = s["blocking_room"]
