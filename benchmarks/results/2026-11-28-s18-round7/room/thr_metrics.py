"""thr.py WHO PY SECONDS [CPUS]: per-thread-name switches and CPU per request for S5's sleeping app.

WHO: a label; PY: a Python whose `-m sluicegate` is the server, or `granian`. The server starts
unconstrained, gets 3 s of wrk -c1000 (warm-up, as S18's unconstrained run before its limits),
then moves into a cgroup of CPUS (default 1.5; 0: none) and gets SECONDS more; the counters of
every thread are read 1 s into that run and 1 s before its end. Prints per thread name: threads,
voluntary and involuntary switches per request, CPU us per request; then the process totals.
"""
import collections, os, re, subprocess, sys, time
from pathlib import Path

APPS = Path("/work/main/benchmarks/apps")
GRANIAN = "/work/main/benchmarks/.venv/bin/granian"
V1 = Path("/sys/fs/cgroup/cpu")
who, py, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
cpus = float(sys.argv[4]) if len(sys.argv) > 4 else 1.5
import socket
_s = socket.socket(); _s.bind(("127.0.0.1", 0)); port = _s.getsockname()[1]; _s.close()
if py == "granian":
    argv = [GRANIAN, "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
            "--blocking-threads", "1000", "--http", "1", "--no-ws", "--backlog", "4096",
            "--backpressure", "10000", "--log-level", "warning", "--no-access-log", "s5_sleepy:app"]
else:
    argv = [py, "-m", "sluicegate", "--bind", f"127.0.0.1:{port}", "--threads", "16:1000",
            "--backlog", "4096", "--metrics-bind", "127.0.0.1:19555", "s5_sleepy:app"]
log = open(f"/tmp/s5call-thr-{who}.log", "w")
srv = subprocess.Popen(argv, cwd=APPS, stdout=log, stderr=log, env={**os.environ, "PYTHONPATH": str(APPS)})
for _ in range(400):
    try:
        import urllib.request
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).read(); break
    except Exception:
        time.sleep(0.1)

def pids():
    out = [srv.pid]
    try:
        out += [int(p) for p in Path(f"/proc/{srv.pid}/task/{srv.pid}/children").read_text().split()]
    except OSError:
        pass
    return out

def snap():
    out = {}
    for pid in pids():
        for t in Path(f"/proc/{pid}/task").glob("*"):
            try:
                st = (t / "status").read_text(); stat = (t / "stat").read_text()
            except OSError:
                continue
            name = st.split("\n", 1)[0].split(":", 1)[1].strip()
            v = int(st.split("voluntary_ctxt_switches:")[1].split()[0])
            iv = int(st.split("nonvoluntary_ctxt_switches:")[1].split()[0])
            f = stat.rsplit(")", 1)[1].split()
            out[(pid, t.name)] = (name, v, iv, int(f[11]) + int(f[12]))
    return out

def wrk(d):
    return subprocess.Popen(["wrk", "-t1", "-c1000", f"-d{d}s", "--timeout", "5s", "--latency",
                             f"http://127.0.0.1:{port}/"], stdout=subprocess.PIPE, text=True)

wrk(3).communicate()
cg = None
if cpus:
    cg = V1 / f"s5call-{os.getpid()}"; cg.mkdir(exist_ok=True)
    (cg / "cpu.cfs_period_us").write_text("100000"); (cg / "cpu.cfs_quota_us").write_text(str(int(cpus * 100000)))
    for p in pids():
        (cg / "cgroup.procs").write_text(str(p))
    thr0 = int(re.search(r"nr_throttled (\d+)", (cg / "cpu.stat").read_text()).group(1))
w = wrk(int(secs))
time.sleep(1); a = snap(); t0 = time.monotonic()
if os.environ.get("PERF"):  # switches and syscalls of every thread, for tools/why.py
    ev = os.environ.get("PERF_EV", "-e sched:sched_switch -e raw_syscalls:sys_enter -m 1024").split()
    Path(os.environ["PERF"] + ".maps").write_text(Path(f"/proc/{srv.pid}/maps").read_text())
    subprocess.run(["perf", "record", "-q", *ev,
                    "-p", ",".join(map(str, pids())), "-o", os.environ["PERF"], "--", "sleep", str(secs - 2)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
elif os.environ.get("STAT"):  # exact counts of a few system calls and switches (perf stat)
    ev = ["syscalls:sys_enter_write", "syscalls:sys_enter_writev", "syscalls:sys_enter_sendmsg",
          "syscalls:sys_enter_epoll_wait", "syscalls:sys_enter_futex", "syscalls:sys_enter_recvfrom",
          "syscalls:sys_enter_read", "syscalls:sys_enter_clock_nanosleep", "sched:sched_switch",
          "task-clock"]
    st = subprocess.run(["perf", "stat", "-x", ",", *sum((["-e", e] for e in ev), []),
                         "-p", ",".join(map(str, pids())), "--", "sleep", str(secs - 2)],
                        capture_output=True, text=True).stderr
elif os.environ.get("WHERE"):  # where the threads wait, sampled every 0.2 s (futex by address)
    samples = []
    end = time.monotonic() + secs - 2
    while time.monotonic() < end:
        c = collections.Counter()
        for pid in pids():
            for t in Path(f"/proc/{pid}/task").glob("*"):
                try:
                    f = (t / "syscall").read_text().split()
                except OSError:
                    continue
                if f[0] == "running":
                    c["running"] += 1
                elif f[0] == "202":
                    c["futex " + f[1]] += 1
                else:
                    c[{"230": "clock_nanosleep", "232": "epoll_wait", "7": "poll", "281": "epoll_pwait"}.get(f[0], f[0])] += 1
        samples.append(c)
        time.sleep(0.2)
else:
    time.sleep(secs - 2)
b = snap(); t1 = time.monotonic()
out = w.communicate()[0]
m = re.search(r"Requests/sec:\s+([\d.]+)", out)
if not m:
    print(out); srv.kill(); sys.exit(1)
rps = float(m.group(1))
p99 = re.search(r"99%\s+(\S+)", out).group(1)
thr = int(re.search(r"nr_throttled (\d+)", (cg / "cpu.stat").read_text()).group(1)) - thr0 if cg else 0
reqs = rps * (t1 - t0)
agg = collections.defaultdict(lambda: [0, 0, 0, 0])
for k, (name, v, iv, cpu) in b.items():
    v0, iv0, c0 = a.get(k, (name, 0, 0, 0))[1:]
    g = agg[name]; g[0] += 1; g[1] += v - v0; g[2] += iv - iv0; g[3] += cpu - c0
tick = os.sysconf("SC_CLK_TCK")
print(f"{who} cpus={cpus} rps={rps:.0f} p99={p99} throttled={thr}")
tot = [0, 0, 0]
for name, g in sorted(agg.items(), key=lambda x: -x[1][1]):
    us = g[3] / tick * 1e6 / reqs
    tot[0] += g[1]; tot[1] += g[2]; tot[2] += us
    print(f"  {name:16} thr {g[0]:5} vcsw/req {g[1]/reqs:6.2f} ivcsw/req {g[2]/reqs:6.2f} cpu_us/req {us:7.1f}")
per = sorted(((b[k][3] - a.get(k, (0, 0, 0, 0))[3], b[k][1] - a.get(k, (0, 0, 0, 0))[1], k[1], b[k][0]) for k in b), reverse=True)
for cpu, v, tid, name in per[:3]:
    print(f"    top {name} {tid}: vcsw/req {v/reqs:6.2f} cpu_us/req {cpu / tick * 1e6 / reqs:7.1f}")
print(f"  {'TOTAL':16} {'':9} vcsw/req {tot[0]/reqs:6.2f} ivcsw/req {tot[1]/reqs:6.2f} cpu_us/req {tot[2]:7.1f}")
srv.terminate()
try:
    srv.wait(10)
except subprocess.TimeoutExpired:
    srv.kill()
if cg:
    time.sleep(0.5)
    try: cg.rmdir()
    except OSError: pass
print(f"  requests in the window: {reqs:.0f}")
if os.environ.get("PERF") and "sched_switch" in os.environ.get("PERF_EV", "sched_switch"):
    subprocess.run([sys.executable, str(Path(__file__).parent / "why.py"), os.environ["PERF"], str(reqs)])
if os.environ.get("WHERE"):
    tot = collections.Counter()
    for c in samples:
        tot.update(c)
    print(f"  where the threads are, mean of {len(samples)} samples (futex: the 6 most common addresses):")
    for k, v in tot.most_common(10):
        print(f"    {k:28} {v / len(samples):7.1f}")
    print("    GIL-ish futex per sample:", [max((v for k, v in c.items() if k.startswith("futex")), default=0) for c in samples])
if os.environ.get("STAT"):
    # Per request: each of S5's requests sleeps once (one clock_nanosleep), an exact count where
    # wrk's mean rate over its whole run only estimates the requests of the window.
    counts = {f[2]: float(f[0]) for f in (l.split(",") for l in st.splitlines())
              if len(f) > 3 and f[0].replace(".", "").isdigit()}
    n = counts.get("syscalls:sys_enter_clock_nanosleep") or reqs
    print(f"  per request (perf stat, {n:.0f} requests by their sleeps):")
    for k, v in counts.items():
        print(f"    {k:34} {v / n:8.3f}" + ("  (ms of CPU)" if k == "task-clock" else ""))
