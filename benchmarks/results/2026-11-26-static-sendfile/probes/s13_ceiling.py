"""S13 ceiling probe: per server, req/s, the server's CPU per request, the machine's CPU per
request and its idle share under wrk -c CLIENTS on /item/4242 with CONN_MAX_AGE=AGE; and the app
alone (one thread, no server) for the floor. The rate a server costing only the floor would
reach, if the machine stays as busy: rate * M / (M - (server - floor)).
argv: AGE CLIENTS ROUNDS server...

    benchmarks/.venv/bin/python benchmarks/results/2026-11-26-static-sendfile/probes/s13_ceiling.py 0 16 3 sluicegate granian uwsgi
"""
import os, re, subprocess, sys, time, statistics
from pathlib import Path
BENCH = Path(__file__).resolve().parents[3]  # benchmarks/
sys.path.insert(0, str(BENCH)); os.chdir(BENCH)
import servers
from bench import s13, procs

def machine():
    f = open("/proc/stat").readline().split()[1:]
    v = list(map(int, f))
    idle = v[3] + v[4]
    return sum(v[:8]), idle

def alone(seconds):
    r = subprocess.run([str(servers.SLUICEGATE_PY), "-c", s13._ALONE_CODE, s13.PATH, str(seconds)], capture_output=True,
                       env=servers._env(None), cwd=servers.APPS, timeout=seconds + 120)
    n, cpu, wall = r.stdout.partition(b"\n")[0].split()
    return int(n) / float(wall), float(cpu) / int(n)

def start(name):
    """`name` (server[@threads]) serving S13's Django app, the peers with 8 threads; and the URL."""
    server, _, threads = name.partition("@")
    srv, port = servers.SERVERS[server], procs.free_port()
    pool = None if srv.kind == "ours" else 8
    launch = srv.launch(servers.Target("s13_django", "/hello", b"hello", pool=pool, ours_threads=threads or None), port)
    proc = procs.start(name, launch.argv, launch.cwd, launch.env, port, Path(f"/tmp/probe-{server}.log"))
    assert procs.wait_port(port, time.monotonic() + 30, proc), proc.log_tail()
    return proc, f"http://127.0.0.1:{port}{s13.PATH}"

age, clients, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
names = sys.argv[4:]
secs = int(os.environ.get("SECS", 6))
s13._configure(age)
hz = os.sysconf("SC_CLK_TCK")
rows = {}
for rnd in range(rounds):
    ra, fa = alone(secs)
    rows.setdefault("alone", []).append((ra, fa * 1e3, 0, 0))
    print(f"r{rnd} app alone {ra:7.1f} calls/s  cpu {fa*1e3:5.2f} ms/call", flush=True)
    for name in (names if rnd % 2 == 0 else names[::-1]):
        p, url = start(name)
        subprocess.run(["wrk", "-t1", f"-c{clients}", "-d2s", url], capture_output=True)
        pids = p.pids()
        c0, (t0, i0) = procs.cpu_seconds(pids), machine()
        w = subprocess.run(["wrk", "-t1", f"-c{clients}", f"-d{secs}s", "--latency", url], capture_output=True, text=True).stdout
        c1, (t1, i1) = procs.cpu_seconds(p.pids()), machine()
        p.stop()
        reqs = int(re.search(r"(\d+) requests in", w).group(1))
        rps = float(re.search(r"Requests/sec:\s+([\d.]+)", w).group(1))
        busy = (t1 - t0 - (i1 - i0)) / hz
        idle = (i1 - i0) / max(1, t1 - t0)
        srv_ms, mach_ms = 1e3 * (c1 - c0) / reqs, 1e3 * busy / reqs
        rows.setdefault(name, []).append((rps, srv_ms, mach_ms, idle))
        print(f"r{rnd} {name:18s} {rps:7.1f} req/s  server {srv_ms:5.2f} ms/req  machine {mach_ms:5.2f} ms/req  idle {idle:4.2f}", flush=True)
print("medians:")
floor = statistics.median(r[1] for r in rows["alone"])
for name, rs in rows.items():
    if name == "alone":
        continue
    rps, srv_ms, mach_ms, idle = (statistics.median(r[i] for r in rs) for i in range(4))
    ceil = rps * mach_ms / (mach_ms - (srv_ms - floor))
    print(f"{name:18s} {rps:7.1f} req/s  server {srv_ms:5.2f}  machine {mach_ms:5.2f}  idle {idle:4.2f}  floor {floor:5.2f}  ceiling {ceil:7.1f}")
