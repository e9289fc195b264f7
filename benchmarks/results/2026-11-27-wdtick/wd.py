"""wd.py PID PORT N [PATH [WARM]]: the watchdog thread's wake-ups (schedstat timeslices) and CPU, and the
whole server's CPU, per fetch over N keep-alive curl fetches (one connection) after WARM fetches of warm-up (default 20; 0: the
count starts with the first fetch, as after a pause)."""
import os, subprocess, sys, time

pid, port, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
path = sys.argv[4] if len(sys.argv) > 4 else "/8192"
warm = int(sys.argv[5]) if len(sys.argv) > 5 else 20


def snap():
    wd, total = (0, 0), 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            cpu, _, runs = map(int, open(f"/proc/{pid}/task/{tid}/schedstat").read().split())
        except FileNotFoundError:
            continue
        total += cpu
        if name == "sg-watchdog":
            wd = (cpu, runs)
    return wd, total


args = ["curl", "-s"]
for _ in range(n):
    args += ["-o", "/dev/null", f"http://127.0.0.1:{port}{path}"]
if warm:
    subprocess.run(args[:2] + args[2:2 + 3 * warm])
a = snap(); t0 = time.time(); subprocess.run(args); dt = time.time() - t0; b = snap()
print(f"watchdog wakes {(b[0][1]-a[0][1])/n:5.2f}/fetch  cpu {(b[0][0]-a[0][0])/1e3/n:6.1f} µs/fetch  "
      f"server cpu {(b[1]-a[1])/1e3/n:7.1f} µs/fetch  wall {dt*1e3/n:.2f} ms/fetch")
