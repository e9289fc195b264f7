"""S18's Django case without a quota, one server: `perf record -e cpu-clock` over 5 s of
`wrk -c16` (no hardware counters in this VM), then req/s and CPU per request.

    python3 prof.py sluicegate   # then: perf report -i /tmp/perf-sluicegate.data --sort dso
"""
import os, sys, subprocess, time
from pathlib import Path
BENCH = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(BENCH)); sys.path.insert(0, str(BENCH / "apps"))
from bench import s18, procs  # noqa
from bench.loadgen import wrk  # noqa
name = sys.argv[1]
proc, settings, size, path = s18.start(name, "django", Path("/tmp"))
try:
    wrk(f"http://127.0.0.1:{proc.port}{path}", 16, 3, size, timeout_s=5.0)
    pids = proc.pids()
    pf = subprocess.Popen(["perf", "record", "-F", "2000", "-e", "cpu-clock", "-o", f"/tmp/perf-{name}.data", "-p", ",".join(map(str, pids)), "--", "sleep", "5"], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    c0 = procs.cpu_seconds(pids)
    r = wrk(f"http://127.0.0.1:{proc.port}{path}", 16, 5, size, timeout_s=5.0)
    pf.wait()
    print(name, r.rps, (procs.cpu_seconds(pids) - c0) * 1e6 / r.requests)
finally:
    proc.stop()
