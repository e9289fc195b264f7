"""rooms.py ROUNDS VARIANTS: S18's s5 at 1.5 CPU (after the unconstrained run, as S18 does), interleaved.
A variant: 'granian', or 'PY@N' (sluicegate from PY with --threads 16:N), or 'PY' (16:1000)."""
import os, sys, time
from pathlib import Path
B = "/work/wt/s5one/benchmarks"
sys.path.insert(0, B); sys.path.insert(0, B + "/apps")
import servers
from bench import procs, s18
rounds, variants = int(sys.argv[1]), sys.argv[2].split(",")
procs.raise_fd_limit()
d = Path("/tmp/s5one/logs"); d.mkdir(exist_ok=True, parents=True)
res = {v: [] for v in variants}
for r in range(rounds):
    order = variants[r % len(variants):] + variants[:r % len(variants)]
    for v in order:
        name = "granian" if v == "granian" else "sluicegate"
        if name == "sluicegate":
            py, _, n = v.partition("@")
            def launch(t, port, py=py, n=n or "1000"):
                l = servers._sluicegate(t, port, Path(py))
                i = l.argv.index("--threads"); l.argv[i + 1] = f"16:{n}"
                return l
            object.__setattr__(servers.SERVERS["sluicegate"], "launch", launch)
        proc, settings, size, path = s18.start(name, "s5", d)
        out = []
        try:
            for cpus in (None, 1.5):
                cg = s18.Cgroup(f"s5one-rooms-{os.getpid()}-{cpus}", cpus)
                m = s18.one(proc, "s5", cg, size, path)
                out.append(m)
        finally:
            proc.stop(); time.sleep(0.3)
            for cpus in (None, 1.5):
                s18.Cgroup(f"s5one-rooms-{os.getpid()}-{cpus}", None).remove()
        for cpus, m in zip(("none", "1.5"), out):
            print(f"r{r+1} {v.split('/')[-1] if '/' in v else v} {cpus}: {m['rps']:,.0f} req/s p50 {m['p50_ms']:.0f} p99 {m['p99_ms']:.0f} ms "
                  f"{m['cpu_us_per_req'] or 0:.0f} us/req thr {m['throttled']} vcsw/req {m['vcsw']/max(1,m['requests']):.1f} load {os.getloadavg()[0]:.0f}", flush=True)
        res[v].append(out[1]['rps'])
for v, l in res.items():
    print(v, sorted(round(x) for x in l))
