"""Hello world under `perf record -p` (4 s each): moved into a cgroup v1, no quota / 1.5 CPUs twice.
Root. Writes perf/N-QUOTA.data; compare with `perf report --sort symbol`."""
import os, subprocess, time, socket
CG = "/sys/fs/cgroup/cpu/hqperf"; PY = "/work/main/.venv/bin/python"; port = 8931
p = subprocess.Popen([PY, "-m", "sluicegate", "--bind", f"127.0.0.1:{port}", "s6_hello:app"], cwd="/work/main/benchmarks/apps",
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(200):
    try: socket.create_connection(("127.0.0.1", port)).close(); break
    except OSError: time.sleep(0.05)
os.makedirs(CG, exist_ok=True)
open(f"{CG}/cpu.cfs_quota_us", "w").write("-1"); open(f"{CG}/cgroup.procs", "w").write(str(p.pid))
for i, q in enumerate(("none", "150000", "none", "150000")):
    open(f"{CG}/cpu.cfs_quota_us", "w").write("-1" if q == "none" else q); time.sleep(1.5)
    w = subprocess.Popen(["wrk", "-t1", "-c16", "-d6s", f"http://127.0.0.1:{port}/"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    subprocess.run(["perf", "record", "-q", "-o", f"perf/{i}-{q}.data", "-p", str(p.pid), "--", "sleep", "4"], stderr=subprocess.DEVNULL)
    out = w.communicate()[0]; print(q, out.split("Requests/sec:")[1].split()[0], flush=True)
p.kill(); p.wait(); open("/sys/fs/cgroup/cpu/cgroup.procs", "w").write(str(os.getpid()))
