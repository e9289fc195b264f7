"""inproc.py PORT SCHEDULER OUT [OPTIONS_JSON]: S13's Django app on a sluicegate started in this
process (the first `sluicegate` on PYTHONPATH), its pool's statistics written to OUT as JSON
lines every EVERY seconds (default 1)."""
import sys, os, threading, time, json
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "apps"))
port, sched, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
extra = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
import s13_django
from sluicegate.listeners import bind_all
from sluicegate.resolution import resolve
from sluicegate.single import SingleServer
cfg = resolve({"app": s13_django.app, "bind": f"127.0.0.1:{port}", "scheduler": sched, **extra})
sockets = bind_all(cfg.bind, cfg.backlog)
sup = SingleServer(s13_django.app, cfg, sockets, app_name="s13")
t = threading.Thread(target=sup.run, daemon=True); t.start()
while sup._server is None: time.sleep(0.05)
keys = ["mode", "threads", "busy_threads", "takeovers", "handoffs", "preemptions", "runnable_short_peak", "runnable_long_peak", "admission_queue", "admission_waits", "demotions", "admitted_blocking", "blocking_room", "blocking_room_least", "requests"]
with open(out, "w") as f:
    while True:
        time.sleep(float(os.environ.get("EVERY", "1")))
        s = sup._server.stats
        f.write(json.dumps({"t": round(time.monotonic(), 2), **{k: s.get(k) for k in keys}}) + "\n"); f.flush()
