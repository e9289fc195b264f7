"""The blocking room over time under S13's standing run shape (an in-process server, its stats read
every 0.2 s, wrk 1 s then 2 s): argv AGE CLIENTS. Run with the project's .venv python."""
import os, subprocess, sys, threading, time
from pathlib import Path
ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "benchmarks/apps")]
os.chdir(ROOT / "benchmarks")
from bench import s13
age, clients = int(sys.argv[1]), int(sys.argv[2])
s13._configure(age)
os.chdir(ROOT / "benchmarks/apps")
import s13_django
from tests.inprocess import start_pool_server
sup, port, t = start_pool_server(s13_django.app)
url = f"http://127.0.0.1:{port}/item/4242"
subprocess.run(["curl", "-s", "-o", "/dev/null", url])
t0 = time.monotonic()
done = threading.Event()
def watch():
    while not done.wait(0.2):
        s = sup._server.stats
        print(f"{time.monotonic()-t0:5.1f}s room {s['blocking_room']} least {s['blocking_room_least']} admitted {s['admitted_blocking']}", flush=True)
threading.Thread(target=watch, daemon=True).start()
subprocess.run(["wrk", "-t1", f"-c{clients}", "-d1s", url], capture_output=True)
w = subprocess.run(["wrk", "-t1", f"-c{clients}", "-d2s", url], capture_output=True, text=True).stdout
done.set()
print([l for l in w.splitlines() if "Requests/sec" in l])
sup.shutdown(); t.join(15)
