"""where.py PID [N]: N samples of where the threads wait: syscall + first arg (futex address)."""
import sys, time, collections
from pathlib import Path
pid = int(sys.argv[1]); n = int(sys.argv[2]) if len(sys.argv) > 2 else 3
for _ in range(n):
    c = collections.Counter()
    for t in Path(f"/proc/{pid}/task").glob("*"):
        try:
            s = (t / "syscall").read_text().split()
        except OSError:
            continue
        if s[0] == "running":
            c["running"] += 1
        else:
            nr = int(s[0]); key = {202: "futex", 230: "nanosleep", 232: "epoll_wait", 7: "poll"}.get(nr, str(nr))
            c[f"{key} {s[1] if nr == 202 else ''}"] += 1
    print(c.most_common(8), flush=True)
    time.sleep(0.5)
