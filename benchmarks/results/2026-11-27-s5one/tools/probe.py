"""probe: one server on S5's app as S18 starts it, moved into a cgroup per limit; wrk -c1000 SECS
per run; for sluicegate, ctl status every 0.5 s (blocking room, threads, queue).
usage: probe.py NAME PY limits runs   (PY '-' = benchmarks default)"""
import os, sys, time, json, threading, subprocess
from pathlib import Path
B = "/work/wt/s5one/benchmarks"
sys.path.insert(0, B); sys.path.insert(0, B + "/apps")
import servers
from bench import procs, s18
from bench.loadgen import wrk

name, py, limits = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
runs = int(sys.argv[4]) if len(sys.argv) > 4 else 1
secs = int(os.environ.get("SECS", "5"))
if py != "-":
    servers.SLUICEGATE_PY = Path(py)
    def launch(t, port):
        l = servers._sluicegate(t, port, Path(py))
        if os.environ.get("MON"):
            l.argv[-1:-1] = ["--stats", f"127.0.0.1:{STATS}", "--stats-http"]
        return l
    object.__setattr__(servers.SERVERS["sluicegate"], "launch", launch)
STATS = 19000 + os.getpid() % 1000
procs.raise_fd_limit()
d = Path("/tmp/s5one/logs"); d.mkdir(exist_ok=True, parents=True)
proc, settings, size, path = s18.start(name, "s5", d)
def nthreads(pids):
    return sum(len(list(Path(f"/proc/{p}/task").glob("*"))) for p in pids)
def status():
    try:
        import urllib.request
        return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{STATS}/", timeout=2).read())
    except Exception as e:
        return {"err": str(e)}
    try:
        out = subprocess.run([py if py != "-" else str(servers.SLUICEGATE_PY), "-m", "sluicegate", "ctl", "--pid", str(proc.popen.pid), "--json", "status"], capture_output=True, text=True, timeout=3).stdout
        return json.loads(out)
    except Exception as e:
        return {"err": str(e)}
def pick(j):
    w = j.get("workers", [j])[0] if isinstance(j, dict) else {}
    keys = ("blocking_room", "threads", "busy_threads", "queue", "requests")
    flat = {}
    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k in keys: flat[k] = v
                walk(v)
        elif isinstance(o, list):
            for v in o: walk(v)
    walk(j)
    return flat
mon = os.environ.get("MON") and name.startswith("sluicegate")
try:
    for lim in limits:
        cpus = None if lim == "none" else float(lim)
        cg = s18.Cgroup(f"s5one-probe-{os.getpid()}-{lim}", cpus)
        for i in range(runs):
            pids = proc.pids(); cg.add(pids)
            th0 = nthreads(pids)
            thr0, cpu0, sw0 = cg.throttled(), procs.cpu_seconds(pids), s18.switches(pids)
            stop = threading.Event(); samples = []
            def poll():
                t0 = time.monotonic()
                while not stop.wait(0.5):
                    samples.append((round(time.monotonic() - t0, 1), nthreads(proc.pids()), pick(status())))
            th = threading.Thread(target=poll, daemon=True)
            if mon: th.start()
            r = wrk(f"http://127.0.0.1:{proc.port}/", 1000, secs, size, timeout_s=5.0)
            stop.set()
            cpu = procs.cpu_seconds(proc.pids()) - cpu0
            sw = s18.switches(proc.pids())
            n = r.requests or 1
            print(f"{name} {lim} run{i}: {r.rps or 0:,.0f} req/s p50 {r.detail.get('p50_us',0)/1000:.1f} p99 {r.detail.get('p99_us',0)/1000:.1f} ms "
                  f"{cpu*1e6/n:.1f} us/req cores {cpu/secs:.2f} thr {cg.throttled()-thr0} threads {th0}->{nthreads(proc.pids())} "
                  f"vcsw/req {(sw[0]-sw0[0])/n:.2f} errors {r.errors} timeouts {r.detail.get('timeout')} load {os.getloadavg()[0]:.1f}", flush=True)
            for s in samples: print("   ", s, flush=True)
finally:
    proc.stop(); time.sleep(0.3)
    for lim in limits:
        s18.Cgroup(f"s5one-probe-{os.getpid()}-{lim}", None).remove()
