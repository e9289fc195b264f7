"""(Root; cgroup v1.) PLACES=N: the start gate's places under `auto`, for a probe build that reads SG_PROBE_PLACES. S5 as S18 runs it (one process: none, then 0.5, 1, 1.5 in turn; wrk 5 s each), sluicegate with
/__stats (probe_app), the blocking room every 0.5 s. Or ORDER env: e.g. "1.5" alone after none.
    python3 probe.py [ROUNDS]"""
import os, sys, threading, time, json, urllib.request
from pathlib import Path
BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH)); sys.path.insert(0, str(BENCH / "apps"))
from bench import s18, procs  # noqa
import servers  # noqa
def stats(port):
    try: return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/__stats", timeout=5).read())
    except OSError: return {}
orig = servers._LAUNCHERS["sluicegate"]
def launch(t, port):
    spec = orig(t, port); spec.argv[-1:] = os.environ.get("EXTRA", "").split() + ["probe_app:app"]
    if os.environ.get("PLACES"): spec.env["SG_PROBE_PLACES"] = os.environ["PLACES"]
    spec.env["PYTHONPATH"] = f"{Path(__file__).resolve().parent}:{spec.env['PYTHONPATH']}"; spec.env["PROBE_APP"] = s18.APPS["s5"][0]
    return spec
servers._LAUNCHERS["sluicegate"] = launch
order = [None if x == "none" else float(x) for x in os.environ.get("ORDER", "none,0.5,1,1.5").split(",")]
d = Path("/tmp/s5seq"); d.mkdir(exist_ok=True)
for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):
    proc, settings, size, path = s18.start("sluicegate", "s5", d)
    try:
        for cpus in order:
            cg = s18.Cgroup(f"s5seq-{os.getpid()}-{cpus}", cpus)
            rooms, stop = [], threading.Event()
            def tr():
                while not stop.wait(0.5):
                    s = stats(proc.port); rooms.append((s.get("blocking_room"), s.get("threads")))
            th = threading.Thread(target=tr); th.start()
            m = s18.one(proc, "s5", cg, size, path)
            stop.set(); th.join()
            print(f"{cpus}: {m['rps']:,.0f} req/s p99 {m['p99_ms']:.0f} ms {m['cpu_us_per_req']:.0f} us/req thr {m['throttled']} cores {m['cores_used']:.2f} | room,threads: {rooms}", flush=True)
    finally:
        proc.stop(); time.sleep(0.3)
        for cpus in order: s18.Cgroup(f"s5seq-{os.getpid()}-{cpus}", None).remove()
