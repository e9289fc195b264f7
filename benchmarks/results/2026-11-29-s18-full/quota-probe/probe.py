"""Hello world CPU per request: the server moved into a cgroup v1 with no quota, then with a
quota (not binding at 1.5), for sluicegate with given extra options. Root.
    python3 probe.py ROUNDS QUOTA "OPTS A" "OPTS B" ...
"""
import os, subprocess, sys, time, socket, re
CG = "/sys/fs/cgroup/cpu/hqprobe"
PY = "/work/main/.venv/bin/python"
def ticks(pid):
    tot = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            f = open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()
            tot += int(f[11]) + int(f[12])
        except OSError:
            pass
    return tot
def wrk(port, s=5):
    out = subprocess.run(["wrk", "-t1", "-c16", f"-d{s}s", f"http://127.0.0.1:{port}/"], capture_output=True, text=True).stdout
    return float(out.split("Requests/sec:")[1].split()[0]), out
def one(opts, quota, port):
    p = subprocess.Popen([PY, "-m", "sluicegate", "--bind", f"127.0.0.1:{port}", *opts.split(), "s6_hello:app"],
                         cwd="/work/main/benchmarks/apps", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try: socket.create_connection(("127.0.0.1", port)).close(); break
        except OSError: time.sleep(0.05)
    os.makedirs(CG, exist_ok=True)
    open(f"{CG}/cpu.cfs_period_us", "w").write("100000")
    open(f"{CG}/cpu.cfs_quota_us", "w").write("-1")
    open(f"{CG}/cgroup.procs", "w").write(str(p.pid))
    wrk(port, 2)
    res = []
    for q in ("none", quota, "none", quota):
        open(f"{CG}/cpu.cfs_quota_us", "w").write("-1" if q == "none" else str(int(float(q) * 100000)))
        time.sleep(1.5)  # the server reads its allowance every second
        t0 = ticks(p.pid); thr0 = int(re.search(r"nr_throttled (\d+)", open(f"{CG}/cpu.stat").read()).group(1))
        rate, _ = wrk(port)
        t1 = ticks(p.pid); thr1 = int(re.search(r"nr_throttled (\d+)", open(f"{CG}/cpu.stat").read()).group(1))
        us = (t1 - t0) / 100 / (rate * 5) * 1e6
        res.append(f"{q}: {rate:,.0f} {us:.1f}us thr{thr1-thr0}")
    p.kill(); p.wait(); time.sleep(0.3)
    open("/sys/fs/cgroup/cpu/cgroup.procs", "w").write(str(os.getpid()))
    print(f"[{opts or 'defaults'}] " + " | ".join(res), flush=True)
rounds, quota, variants = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
port = 8871
for r in range(rounds):
    for v in variants[r % len(variants):] + variants[:r % len(variants)]:
        port += 1
        one(v, quota, port)
