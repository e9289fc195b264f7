"""S5 probe: our server (or argv) on S5's app, wrk -c1000 for N s, per-thread-name CPU, optional cgroup."""
import os, subprocess, sys, time, collections, socket
from pathlib import Path
CG = "/sys/fs/cgroup/cpu/s5probe"
def tasks(pid):
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            st = open(f"/proc/{pid}/task/{t}/stat").read()
            comm = st[st.index("(")+1:st.rindex(")")]
            f = st[st.rindex(")")+2:].split()
            sw = open(f"/proc/{pid}/task/{t}/status").read()
            v = int(sw.split("voluntary_ctxt_switches:")[1].split()[0])
            ns = int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
            out[t] = (comm, ns, v)
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass
    return out
def tree(pid):
    out = [pid]
    for q in open(f"/proc/{pid}/task/{pid}/children").read().split():
        out += tree(int(q))
    return out
def tasks_all(pid):
    d = {}
    for q in tree(pid): d.update(tasks(q))
    return d
def main():
    cpus = float(os.environ.get("CPUS", "0")); secs = int(os.environ.get("SECS", "8"))
    port = int(os.environ.get("PORT", "8765"))
    argv = sys.argv[1:]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open("/tmp/s5probe.log", "w"), cwd=str(Path(__file__).resolve().parents[2] / "apps"))
    for _ in range(200):
        try: socket.create_connection(("127.0.0.1", port)).close(); break
        except OSError: time.sleep(0.05)
    if cpus:
        os.makedirs(CG, exist_ok=True)
        open(f"{CG}/cpu.cfs_period_us", "w").write("100000")
        open(f"{CG}/cpu.cfs_quota_us", "w").write(str(int(cpus * 100000)))
        for pid in tree(p.pid):
            open(f"{CG}/cgroup.procs", "w").write(str(pid))
    subprocess.run(["wrk", "-t2", "-c1000", "-d3s", f"http://127.0.0.1:{port}/"], capture_output=True)
    perf = None
    if os.environ.get("PERF"):
        perf = subprocess.Popen(["perf", "record", "-g", "-o", os.environ["PERF"], "-p", ",".join(map(str, tree(p.pid))), "--", "sleep", str(secs - 1)], stderr=subprocess.DEVNULL)
    a = tasks_all(p.pid); t0 = time.monotonic()
    r = subprocess.run(["wrk", f"-t{os.environ.get('WT', '2')}", "-c1000", f"-d{secs}s", "--latency", f"http://127.0.0.1:{port}/"], capture_output=True, text=True).stdout
    b = tasks_all(p.pid); wall = time.monotonic() - t0
    if perf: perf.wait()
    rate = float(r.split("Requests/sec:")[1].split()[0])
    lat = [l for l in r.splitlines() if "99%" in l or "50%" in l]
    n = rate * secs
    g = collections.defaultdict(lambda: [0, 0, 0])
    for t, (comm, cpu, v) in b.items():
        c0, v0 = (a[t][1], a[t][2]) if t in a else (0, 0)
        g[comm][0] += cpu - c0; g[comm][1] += v - v0; g[comm][2] += 1
    hz = 1e9
    print(f"rate {rate:,.0f} {' '.join(x.split()[1] for x in lat)} threads {len(b)}")
    for comm, (cpu, v, k) in sorted(g.items(), key=lambda x: -x[1][0]):
        print(f"  {comm:20s} n={k:4d} cores={cpu/hz/wall:.2f} us/req={cpu/hz/n*1e6:6.1f} vol/req={v/n:.2f}")
    pa = open(f"/proc/{p.pid}/stat").read().split(")")[1].split()
    print("  process ticks cores", (int(pa[11])+int(pa[12]))/100/wall, "(since start)")
    import signal
    if os.environ.get("PERF"):
        pass
    for q in reversed(tree(p.pid)):
        try: os.kill(q, signal.SIGKILL)
        except OSError: pass
    p.wait(); time.sleep(0.5)
main()
