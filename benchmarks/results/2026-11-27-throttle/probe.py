"""One sluicegate build in a cgroup v1 CPU quota under `wrk -t1 -c16` (hello world, S6's app):
req/s, p99, throttled periods, and the scheduler's counters from /metrics (inline and pool calls,
takeovers) over the run. Started inside the cgroup, as in a container.

    python3 probe.py PYTHON CPUS [SECONDS]   (root; wrk on PATH)

PIN=0: the server runs on CPU 0 only (`taskset -c 0`), wrk elsewhere. SLEEP_FIRST=1: the app
is `hello_and_sleep.py`, and one request to `/sleep` (a takeover: dispatch mode) comes just
before the load.
"""
import os, re, subprocess, sys, time, urllib.request
from pathlib import Path

APPS = Path(__file__).resolve().parents[2] / "apps"
py, cpus = sys.argv[1], float(sys.argv[2])
secs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
cg = Path(f"/sys/fs/cgroup/cpu/sg-throttle-probe-{os.getpid()}")
cg.mkdir()
(cg / "cpu.cfs_period_us").write_text("100000")
(cg / "cpu.cfs_quota_us").write_text(str(int(cpus * 100_000)) if cpus > 0 else "-1")
port, mport = 19100 + os.getpid() % 500, 19700 + os.getpid() % 250
sleep_first = bool(os.environ.get("SLEEP_FIRST"))
env = {**os.environ, "PYTHONPATH": f"{Path(__file__).resolve().parent}:{APPS}"}
pin = ["taskset", "-c", os.environ["PIN"]] if os.environ.get("PIN") else []
srv = subprocess.Popen(["/bin/sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "sh", *pin, py, "-m", "sluicegate",
                        "--bind", f"127.0.0.1:{port}", "--metrics-bind", f"127.0.0.1:{mport}", "--no-control-socket",
                        "hello_and_sleep:app" if sleep_first else "s6_hello:app"], env=env, cwd=APPS, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def metrics():
    text = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=5).read().decode()
    out = {}
    for name in ("inline_calls_total", "pool_calls_total", "takeovers_total"):
        m = re.search(rf"^sluicegate_{name}(?:{{[^}}]*}})? (\S+)", text, re.M)
        out[name] = float(m.group(1)) if m else -1
    return out


def stat():
    d = dict(line.split() for line in (cg / "cpu.stat").read_text().splitlines())
    return int(d["nr_periods"]), int(d["nr_throttled"]), int(d["throttled_time"])


try:
    for _ in range(400):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).read()
            metrics()
            break
        except OSError:
            time.sleep(0.1)
    if sleep_first:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/sleep", timeout=5).read()
    m0, s0 = metrics(), stat()
    other = ["taskset", "-c", "1"] if pin else []
    w = subprocess.run([*other, "wrk", "-t1", "-c16", f"-d{secs}s", "--latency", "-s", str(Path(__file__).resolve().parent / "over.lua"), f"http://127.0.0.1:{port}/"],
                       capture_output=True, text=True).stdout
    m1, s1 = metrics(), stat()
    rps = float(re.search(r"Requests/sec:\s+(\S+)", w).group(1))
    p99 = re.search(r"^\s*99%\s+(\S+)", w, re.M).group(1)
    d = {k: int(m1[k] - m0[k]) for k in m0}
    over = re.search(r"over10ms (\S+) over40ms (\S+) requests (\d+)", w)
    caught = 16 * (s1[1] - s0[1]) / max(1, int(over.group(3))) * 100
    print(f"pin {os.environ.get('PIN', '-')} cpus {cpus} rps {rps:.0f} p99 {p99} periods {s1[0]-s0[0]} throttled {s1[1]-s0[1]} "
          f"throttled_ms {(s1[2]-s0[2])/1e6:.0f} inline {d['inline_calls_total']} pool {d['pool_calls_total']} "
          f"takeovers {d['takeovers_total']} over10ms {over.group(1)} over40ms {over.group(2)} "
          f"16-per-stop {caught:.2f}%", flush=True)
finally:
    srv.terminate()
    srv.wait()
    time.sleep(0.3)
    cg.rmdir()
