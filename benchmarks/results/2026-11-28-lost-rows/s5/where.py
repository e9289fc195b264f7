"""where.py PID [N]: sample /proc/PID/task/*/syscall N times; count threads by syscall (futex: by address) and comm."""
import sys, collections, time, os
pid = int(sys.argv[1]); n = int(sys.argv[2]) if len(sys.argv) > 2 else 5
NAMES = {"202": "futex", "230": "clock_nanosleep", "35": "nanosleep", "23": "select", "7": "poll", "232": "epoll_wait", "281": "epoll_pwait", "0": "read", "1": "write", "20": "writev", "46": "sendmsg", "45": "recvfrom", "44": "sendto"}
tot = collections.Counter()
for _ in range(n):
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            comm = open(f"/proc/{pid}/task/{t}/comm").read().strip()
            sc = open(f"/proc/{pid}/task/{t}/syscall").read().split()
        except OSError:
            continue
        if sc[0] == "running":
            key = (comm, "running", "")
        elif sc[0] == "-1":
            key = (comm, "user/blocked?", "")
        else:
            nm = NAMES.get(sc[0], sc[0])
            key = (comm, nm, sc[1] if nm == "futex" else "")
        tot[key] += 1
    time.sleep(0.2)
for k, v in tot.most_common(25):
    print(f"{v/n:8.1f}  {k}")
