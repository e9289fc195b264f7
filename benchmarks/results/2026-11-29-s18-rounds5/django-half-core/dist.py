"""S18's Django case at one quota, servers (`name|options`: sluicegate with those options) one
after the other per round: the server moved into the cgroup, then `wrk -c16` 5 s, 16
`every_request` clients 5 s (p50/p99 of every request sent, fewest and most answers on a
connection), and `h2load --h1 -c16` 5 s with its per-request log (p50/p90/p99, kept in /tmp).

    python3 dist.py 0.5 "sluicegate,sluicegate|--threads 1:1,sluicegate|--threads 2:2" 3
"""
import os, sys, subprocess, time, statistics
from pathlib import Path
BENCH = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(BENCH)); sys.path.insert(0, str(BENCH / "apps"))
from bench import s18, procs, every_request, s13  # noqa
from bench.loadgen import wrk  # noqa
import servers  # noqa

def one(spec_name, cpus, seconds=5):
    name, _, own = spec_name.partition("|")
    orig = servers._LAUNCHERS[name]
    def launch(t, port):
        spec = orig(t, port)
        if own:
            spec.argv[-1:-1] = own.split()
        return spec
    servers._LAUNCHERS[name] = launch
    d = Path("/tmp/djp-logs"); d.mkdir(exist_ok=True)
    proc, settings, size, path = s18.start(name, "django", d)
    servers._LAUNCHERS[name] = orig
    cg = s18.Cgroup(f"djp-{os.getpid()}", cpus)
    try:
        wrk(f"http://127.0.0.1:{proc.port}{path}", 16, 3, size, timeout_s=5.0)
        cg.add(proc.pids())
        wrk(f"http://127.0.0.1:{proc.port}{path}", 16, 1, size, timeout_s=5.0)
        r = wrk(f"http://127.0.0.1:{proc.port}{path}", 16, seconds, size, timeout_s=5.0)
        e = every_request.run(proc.port, path, s13._expected(path), 16, seconds)
        print(f"{spec_name:28s} every n {e.requests} p50 {e.p50_us/1000:6.1f} p99 {e.p99_us/1000:6.1f} fewest {e.fewest} most {e.most}", flush=True)
        log = Path(f"/tmp/djp-{os.getpid()}.log"); log.unlink(missing_ok=True)
        thr0 = cg.throttled()
        subprocess.run(["h2load", "--h1", "-c16", "-t1", f"-D{seconds}", f"--log-file={log}",
                        f"http://127.0.0.1:{proc.port}{path}"], capture_output=True, timeout=seconds + 60)
        rows = [l.split("\t") for l in log.read_text().splitlines()]
        lat = sorted(int(x[2]) / 1000 for x in rows if x[1] == "200")
        n = len(lat)
        print(f"{spec_name:28s} wrk {r.rps:6.1f} p50 {r.detail.get('p50_us',0)/1000:6.1f} p99 {r.detail.get('p99_us',0)/1000:6.1f} | "
              f"h2load n {n} rps {n/seconds:6.1f} mean {statistics.mean(lat):6.1f} p50 {lat[n//2]:6.1f} p90 {lat[int(n*.9)]:6.1f} "
              f"p99 {lat[int(n*.99)]:6.1f} max {lat[-1]:6.1f} thr {cg.throttled()-thr0}", flush=True)
        out = Path(os.environ.get("DJP_OUT", "/tmp")) / f"{spec_name.replace('|','_').replace(' ','')}-{cpus}.tsv"
        out.write_text(log.read_text())
    finally:
        proc.stop(); time.sleep(0.3); cg.remove()

if __name__ == "__main__":
    procs.raise_fd_limit()
    cpus = float(sys.argv[1]); names = sys.argv[2].split(",")
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    for r in range(rounds):
        for nm in names[r % len(names):] + names[:r % len(names)]:
            one(nm, cpus)
