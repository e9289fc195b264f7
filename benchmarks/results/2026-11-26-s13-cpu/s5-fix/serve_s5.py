"""Serve S5's sleeping app in-process (--threads 16:1000) and print the room every 20 ms."""
import json, sys, threading, time
sys.path.insert(0, ".")
import s5_sleepy
from sluicegate.listeners import bind_all
from sluicegate.resolution import resolve
from sluicegate.single import SingleServer

cfg = resolve({"app": s5_sleepy.app, "bind": f"127.0.0.1:{sys.argv[1]}", "threads": (16, 1000)})
sockets = bind_all(cfg.bind, cfg.backlog)
sup = SingleServer(s5_sleepy.app, cfg, sockets, app_name="s5")
threading.Thread(target=sup.run, daemon=True).start()
keys = ("requests", "threads", "blocking_room", "admission_queue", "demotions", "admitted_blocking")
t0 = None
while True:
    time.sleep(0.02)
    s = getattr(sup._server, "stats", None) if sup._server is not None else None
    if not s or not s.get("requests"):
        continue
    if t0 is None:
        t0 = time.monotonic()
    el = time.monotonic() - t0
    if el < 1.5 or int(el * 50) % 25 == 0:
        print(f"{el:6.3f}", json.dumps({k: s.get(k) for k in keys}), flush=True)
