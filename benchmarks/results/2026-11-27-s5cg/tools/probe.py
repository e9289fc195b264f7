"""probe: start one server on the S5 app, run wrk -c1000 several times, possibly in a cgroup.
usage: probe.py SERVER PY cpus1,cpus2,... [runs per limit]"""
import os, sys, time, json
from pathlib import Path
sys.path.insert(0, "/work/wt/s5cg/benchmarks"); sys.path.insert(0, "/work/wt/s5cg/benchmarks/apps")
import servers
from bench import procs, s18
from bench.loadgen import wrk

name, py, limits = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
runs = int(sys.argv[4]) if len(sys.argv) > 4 else 1
secs = int(os.environ.get("SECS", "5"))
if py != "-":
    servers.SLUICEGATE_PY = Path(py)
    object.__setattr__(servers.SERVERS["sluicegate"], "launch", lambda t, port: servers._sluicegate(t, port, Path(py)))
procs.raise_fd_limit()
d = Path("/tmp/s5cg/logs"); d.mkdir(exist_ok=True, parents=True)
proc, settings, size, path = s18.start(name, "s5", d)
def nthreads(pids):
    return sum(len(list(Path(f"/proc/{p}/task").glob("*"))) for p in pids)
try:
    for lim in limits:
        cpus = None if lim == "none" else float(lim)
        cg = s18.Cgroup(f"s5cg-probe-{lim}", cpus)
        for i in range(runs):
            pids = proc.pids(); cg.add(pids)
            th0 = nthreads(pids)
            thr0, cpu0, sw0 = cg.throttled(), procs.cpu_seconds(pids), s18.switches(pids)
            r = wrk(f"http://127.0.0.1:{proc.port}/", 1000, secs, size, timeout_s=5.0)
            cpu = procs.cpu_seconds(proc.pids()) - cpu0
            sw = s18.switches(proc.pids())
            n = r.requests or 1
            print(f"{name} {lim} run{i}: {r.rps or 0:,.0f} req/s p50 {r.detail.get('p50_us',0)/1000:.1f} p99 {r.detail.get('p99_us',0)/1000:.1f} ms "
                  f"{cpu*1e6/n:.1f} us/req thr {cg.throttled()-thr0} threads {th0}->{nthreads(proc.pids())} "
                  f"vcsw/req {(sw[0]-sw0[0])/n:.2f} ivcsw/req {(sw[1]-sw0[1])/n:.2f} errors {r.errors} timeouts {r.detail.get('timeout')}", flush=True)
finally:
    proc.stop(); time.sleep(0.3)
    for lim in limits:
        s18.Cgroup(f"s5cg-probe-{lim}", None).remove()
