"""why.py PERF.DATA REQUESTS: each voluntary switch (sched_switch with prev_state S/D) charged to
the system call its thread was in (its last sys_enter), futex waits split by address: an address
waited on by many threads is a shared lock (the GIL's), one per thread a thread's own (a parked
pool thread's slot). Per request."""
import collections, re, subprocess, sys
out = subprocess.run(["perf", "script", "-i", sys.argv[1], "-F", "tid,event,trace"], capture_output=True, text=True).stdout
reqs = float(sys.argv[2])
NAMES = {202: "futex", 230: "clock_nanosleep", 232: "epoll_wait", 281: "epoll_pwait", 0: "read", 1: "write",
         20: "writev", 44: "sendto", 45: "recvfrom", 46: "sendmsg", 47: "recvmsg", 35: "nanosleep", 7: "poll"}
last = {}
sw = collections.Counter()
faddr_threads = collections.defaultdict(set)
faddr_sw = collections.Counter()
waits_by_tid = collections.Counter()
sys_count = collections.Counter()
for line in out.splitlines():
    m = re.match(r"\s*(\d+)\s+(\S+):\s*(.*)", line)
    if not m:
        continue
    tid, ev, tr = int(m.group(1)), m.group(2), m.group(3)
    if ev == "raw_syscalls:sys_enter":
        nr = int(re.search(r"NR (\d+)", tr).group(1))
        args = re.search(r"\(([^)]*)\)", tr).group(1).split(", ")
        last[tid] = (nr, args[0], args[1] if len(args) > 1 else "")
        sys_count[NAMES.get(nr, nr)] += 1
    elif ev.startswith("syscalls:sys_enter_"):
        call = ev[len("syscalls:sys_enter_"):]
        nr = {v: k for k, v in NAMES.items()}.get(call, call)
        ua = re.search(r"uaddr: (0x[0-9a-f]+)", tr)
        op = re.search(r"op: (0x[0-9a-f]+)", tr)
        last[tid] = (nr, ua.group(1) if ua else "", op.group(1) if op else "")
        sys_count[call] += 1
    elif ev == "sched:sched_switch":
        pm = re.search(r"prev_pid=(\d+).*prev_state=(\S+)", tr)
        if not pm or int(pm.group(1)) != tid:
            continue
        if pm.group(2) in ("R", "R+"):
            continue
        nr, a0, a1 = last.get(tid, (-1, "", ""))
        name = NAMES.get(nr, nr)
        if nr == 202:
            faddr_threads[a0].add(tid)
            faddr_sw[a0] += 1
            waits_by_tid[tid] += 1
        sw[name] += 1
print("voluntary switches per request, by the syscall slept in:")
for k, v in sw.most_common(12):
    print(f"  {k!s:18} {v/reqs:6.2f}")
print("futex waits per request by address (threads that waited on it):")
for a, v in faddr_sw.most_common(8):
    print(f"  {a:18} {v/reqs:6.2f}  threads {len(faddr_threads[a])}")
print("system calls per request:")
for k, v in sys_count.most_common(14):
    print(f"  {k!s:18} {v/reqs:6.2f}")

# addresses to names: the maps saved beside the data (thr.py), and the symbol there (nm -D)
import bisect, os
maps = []
mp = sys.argv[1] + ".maps"
if os.path.exists(mp):
    for line in open(mp):
        f = line.split()
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        maps.append((lo, hi, int(f[2], 16), f[5] if len(f) > 5 else "[anon]"))
def where(a):
    a = int(a, 16)
    for lo, hi, off, path in maps:
        if lo <= a < hi:
            return f"{os.path.basename(path)}+{a - lo + off:#x}"
    return "?"
print("futex addresses:")
for a, v in faddr_sw.most_common(8):
    print(f"  {a} {where(a)}")
