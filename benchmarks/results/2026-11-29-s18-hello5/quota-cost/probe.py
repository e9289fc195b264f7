"""Per request with no quota / a quota that does not bind (1.5): CPU, context switches
(voluntary, involuntary) per thread name, syscalls (perf stat raw_syscalls), for several servers.
    python3 probe.py ROUNDS QUOTA SERVER...   (sluicegate, sluicegate-spinoff, granian, uwsgi)"""
import os, subprocess, sys, time, socket, re, collections
from pathlib import Path
ROOT = Path(__file__).resolve().parents[4]
CG = "/sys/fs/cgroup/cpu/hq2"; B = str(ROOT / "benchmarks"); V = B + "/.venv/bin/"
PY = str(ROOT / ".venv/bin/python")
def argv(name, port):
    if name.startswith("sluicegate"):
        a = [PY, "-m", "sluicegate", "--bind", f"127.0.0.1:{port}", "s6_hello:app"]
        return a + (["--spin", "off"] if name.endswith("spinoff") else ["--spin", "on"] if name.endswith("spinon") else [])
    if name == "granian":
        return [V + "granian", "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
                "--blocking-threads", "1", "--http", "1", "--no-ws", "--log-level", "warning", "--no-access-log",
                "--working-dir", B + "/apps", "s6_hello:app"]
    if name == "uwsgi":
        return [V + "uwsgi", "--master", "--die-on-term", "--http11-socket", f"127.0.0.1:{port}", "--processes", "1",
                "--threads", "1", "--module", "s6_hello:app", "--chdir", B + "/apps", "--pythonpath", B + "/apps",
                "--disable-logging", "--tcp-nodelay", "--need-app"]
def tree(pid):
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.split()
    kids = collections.defaultdict(list)
    for c, p in zip(out[::2], out[1::2]): kids[int(p)].append(int(c))
    res, todo = [], [pid]
    while todo:
        x = todo.pop(); res.append(x); todo += kids[x]
    return res
def snap(pids):
    d = collections.Counter()
    for pid in pids:
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                st = open(f"/proc/{pid}/task/{t}/stat").read()
                name = st.split("(", 1)[1].rsplit(")", 1)[0]
                f = st.rsplit(")", 1)[1].split()
                s = open(f"/proc/{pid}/task/{t}/status").read()
                v = int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", s, re.M).group(1))
                n = int(re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", s, re.M).group(1))
            except (OSError, AttributeError):
                continue
            d["cpu"] += int(f[11]) + int(f[12]); d["usr"] += int(f[11]); d["sys"] += int(f[12]); d[name + ".cpu"] += int(f[11]) + int(f[12]); d[name + ".vol"] += v; d[name + ".inv"] += n
    return d
def one(name, quota, port):
    p = subprocess.Popen(argv(name, port), cwd=B + "/apps", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try: socket.create_connection(("127.0.0.1", port)).close(); break
        except OSError: time.sleep(0.05)
    time.sleep(0.5)
    os.makedirs(CG, exist_ok=True)
    open(f"{CG}/cpu.cfs_period_us", "w").write("100000"); open(f"{CG}/cpu.cfs_quota_us", "w").write("-1")
    pids = tree(p.pid)
    for x in pids:
        for t in os.listdir(f"/proc/{x}/task"):
            open(f"{CG}/tasks", "w").write(t)
    subprocess.run(["wrk", "-t1", "-c16", "-d2s", f"http://127.0.0.1:{port}/"], capture_output=True)
    for q in ("none", quota, "none", quota):
        open(f"{CG}/cpu.cfs_quota_us", "w").write("-1" if q == "none" else str(int(float(q) * 100000)))
        time.sleep(float(os.environ.get("SETTLE", "1.5")))
        thr0 = int(re.search(r"nr_throttled (\d+)", open(f"{CG}/cpu.stat").read()).group(1))
        a = snap(pids)
        ps = subprocess.Popen(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-p", ",".join(map(str, pids)), "--", "sleep", "5"],
                              stderr=subprocess.PIPE, text=True) if PERF else None
        out = subprocess.run(["wrk", "-t1", "-c16", "-d5s", f"http://127.0.0.1:{port}/"], capture_output=True, text=True).stdout
        sc = int(ps.communicate()[1].strip().splitlines()[-1].split(",")[0]) if PERF else 0
        b = snap(pids)
        thr1 = int(re.search(r"nr_throttled (\d+)", open(f"{CG}/cpu.stat").read()).group(1))
        n = float(out.split("Requests/sec:")[1].split()[0]) * 5
        cs = " ".join((f"{k}={(b[k]-a[k])/100/n*1e6:.1f}us" if k.endswith(("cpu","usr","sys")) else f"{k}={(b[k]-a[k])/n:.2f}") for k in sorted(b) if k != "cpu" and (b[k]-a[k])/n >= 0.01/1e4 and (b[k]-a[k])>0)
        print(f"{name:18} {q:4} {n/5:9,.0f}/s cpu {(b['cpu']-a['cpu'])/100/n*1e6:5.1f}us sys/req {sc/n:5.2f} thr{thr1-thr0} | {cs}", flush=True)
    for x in tree(p.pid)[::-1]:
        try: os.kill(x, 9)
        except OSError: pass
    p.wait(); time.sleep(0.3)
PERF = os.environ.get("PERF") == "1"
rounds, quota, names = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
port = 8951
for r in range(rounds):
    for nm in names[r % len(names):] + names[:r % len(names)]:
        port += 1; one(nm, quota, port)
