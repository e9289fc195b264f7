"""S14's 21 KB file (or hello world) over TLS, CPU per request of the server and of the client:
interleaved `wrk -t1 -c64` rounds, the servers started once (S14's command lines), the server's
CPU from /proc, wrk's from getrusage(RUSAGE_CHILDREN). For comparing builds on a busy machine,
where req/s move with other work and CPU per request holds (results:
benchmarks/results/2026-11-25-tls-measurements/).

    python3 benchmarks/tls/file_cpu.py [--rounds 5] [--seconds 3] [--case file21k|hello]
        [--servers new,base,granian,plain] [--base-path DIR]

servers: `new` (this work tree's build), `base` (the `sluicegate` package found in
--base-path first: a copy of python/sluicegate with another build's _core), `granian` (TLS),
`plain` (this build, plaintext).
"""
import argparse
import subprocess
import sys
import tempfile
import time
import statistics
import resource
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH / "apps"))
sys.path.insert(0, str(BENCH))
import payloads  # noqa
from bench.harness import PEERS, SG, env_for, wait_ready  # noqa
from bench.loadgen import wrk  # noqa
from bench.procs import stop_session  # noqa
from bench.procs import cpu_seconds, free_port, session_pids  # noqa
from bench.s14 import make_cert, tls_wire, APP, THREADS  # noqa
from bench.harness import fetch_wire  # noqa

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--seconds", type=float, default=4)
ap.add_argument("--case", default="file21k")
ap.add_argument("--conns", type=int, default=64)
ap.add_argument("--servers", default="new,granian")
ap.add_argument("--base-path", default="/tmp/sg-base", help="holds the `base` build's sluicegate/")
args = ap.parse_args()
path = {"file21k": f"/static/{payloads.S2_SMALL}", "hello": "/"}[args.case]
payloads.ensure()
d = Path(tempfile.mkdtemp(prefix="tls3b-"))
cert, key = make_cert(d)
procs = {}
ports = {}
tls = {}
for name in args.servers.split(","):
    port = free_port()
    ports[name] = port
    tls[name] = name != "plain"
    if name in ("new", "base", "plain"):
        argv = [str(SG), "-m", "sluicegate", "--bind", f"{'https' if tls[name] else 'http'}:127.0.0.1:{port}",
                "--threads", f"1:{THREADS}", APP]
        if tls[name]:
            argv[5:5] = ["--certfile", str(cert), "--keyfile", str(key)]
        env = env_for(argv[0])
        if name == "base":
            env["PYTHONPATH"] = args.base_path + ":" + env["PYTHONPATH"]
    else:
        argv = [str(PEERS / "granian"), "--interface", "wsgi", "--host", "127.0.0.1",
                "--port", str(port), "--workers", "1", "--blocking-threads", str(THREADS),
                "--http", "1", "--no-ws", "--log-level", "warning", "--no-access-log",
                "--ssl-certificate", str(cert), "--ssl-keyfile", str(key), "--working-dir",
                str(BENCH / "apps"), APP]
        env = env_for(argv[0])
    procs[name] = subprocess.Popen(argv, cwd=BENCH / "apps", env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
try:
    sizes = {}
    for name, port in ports.items():
        wait_ready(f"127.0.0.1:{port}", time.monotonic() + 60)
        if tls[name]:
            sizes[name], body = tls_wire(port, path)
        else:
            sizes[name], body = fetch_wire(port, path)
        print(name, "pid", procs[name].pid, "size", sizes[name], len(body), flush=True)
    res = {n: {"rps": [], "us": []} for n in ports}
    names = list(ports)
    for r in range(args.rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            own = session_pids(procs[name].pid)
            b = cpu_seconds(own)
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            scheme = "https" if tls[name] else "http"
            out = wrk(f"{scheme}://127.0.0.1:{ports[name]}{path}", args.conns, args.seconds, sizes[name], timeout_s=10)
            a = cpu_seconds(own)
            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            wus = (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime) * 1e6 / max(out.requests, 1)
            res[name].setdefault("wrk", []).append(wus)
            us = (a - b) * 1e6 / max(out.requests, 1)
            res[name]["rps"].append(out.rps or 0)
            res[name]["us"].append(us)
            print(f"  r{r + 1} {name:8s} {out.rps or 0:8,.0f} req/s {us:6.1f} us/req  wrk {wus:5.1f} us/req {out.note}", flush=True)
    for name in names:
        print(f"{name:8s} median {statistics.median(res[name]['rps']):8,.0f} req/s "
              f"{statistics.median(res[name]['us']):6.1f} us/req wrk {statistics.median(res[name]['wrk']):5.1f}  us={[round(x) for x in res[name]['us']]}")
finally:
    for p in procs.values():
        stop_session(p, p.pid)
