"""From outside the cgroup, every 0.5 ms for 3.5 s: what /proc/PID/syscall and the state in
/proc/PID/stat say of syscall_worker.py's thread (the pool watcher reads the first,
`wsgi/pool/mod.rs` `waiting_of`). python3 syscall_sampler.py PID"""
import sys, time, collections
pid = sys.argv[1]
c = collections.Counter()
end = time.monotonic() + 3.5
while time.monotonic() < end:
    try:
        sc = open(f"/proc/{pid}/syscall").read().split()[0]
        st = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        break
    kind = "running" if sc == "running" else ("-1" if sc.startswith("-") else f"nr {sc}")
    c[(st, kind)] += 1
    time.sleep(0.0005)
for k, v in sorted(c.items(), key=lambda kv: -kv[1]):
    print(k, v)
