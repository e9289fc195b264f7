"""Hold S16's servers and its nginx (bench/s16.py's own start_all) running for tools that need
them up (ab-interleaved, perf, strace); prints the ports and PIDs as JSON; stops all on SIGTERM.

    SLUICEGATE_BASE_PY=... python3 hold_s16.py sluicegate,sluicegate-base,uwsgi,bjoern proxy > ports.json
"""
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import s16  # noqa: E402

names = sys.argv[1].split(",")
modes = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else ("proxy",)
d = tempfile.mkdtemp(prefix="hold-s16-")
os.chmod(d, 0o755)
started, nginx, blocks, _ = s16.start_all("hello", names, modes, d)
print(json.dumps({"nginx": nginx.pids(), "front": {f"{n}|{m}": p for (n, m), (p, _) in blocks.items()},
                  "server": {n: p.pids() for n, p in started.items()}}), flush=True)
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
while not stop:
    time.sleep(0.5)
for p in [*started.values(), nginx]:
    p.stop()
