"""Serve the S13 Django app in this process, as `python -m sluicegate --threads 1:48` would (what
`auto` means for Django), and print the server's readings (`stats`) every second to stdout:
how the blocking room moves under load. argv[1]: the port. Run with cwd benchmarks/apps."""
import json, sys, threading, time
sys.path.insert(0, ".")
import s13_django
from sluicegate.listeners import bind_all
from sluicegate.resolution import resolve
from sluicegate.single import SingleServer

cfg = resolve({"app": s13_django.app, "bind": f"127.0.0.1:{sys.argv[1]}", "threads": (1, 48)})
sockets = bind_all(cfg.bind, cfg.backlog)
sup = SingleServer(s13_django.app, cfg, sockets, app_name="s13")
t = threading.Thread(target=sup.run, daemon=True)
t.start()
keys = ("requests", "mode", "threads", "busy_threads", "blocking_room", "blocking_room_least",
        "admission_queue", "demotions", "admitted_blocking", "takeovers", "dispatched_calls", "inline_calls")
t0 = time.monotonic()
while True:
    # every 50 ms through the first 3 s after the first request, then every second
    s = getattr(sup._server, "stats", None) if sup._server is not None else None
    first = not s or not s.get("requests")
    time.sleep(0.05 if first or time.monotonic() - t0 < 3 else 1)
    if first:
        t0 = time.monotonic()
    s = getattr(sup._server, "stats", None) if sup._server is not None else None
    if s:
        print(json.dumps({k: s.get(k) for k in keys}), flush=True)
