"""S19 hello: CPU per request of each thread of each server's process tree (user and system
apart), and context switches per request, in one interleaved run behind one nginx.

    cd benchmarks && ../.venv/bin/python results/2026-11-27-s19cpu/threads_s19.py [ROUNDS] [SECONDS]

Uses bench.s19's start() (the S19 ini, nginx with uwsgi_pass over unix sockets) and wrk -t1 -c64.
"""
import os
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

# S19_BENCH: another tree's benchmarks/ (its build is the one measured)
BENCH = Path(os.environ.get("S19_BENCH", Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "apps"))
from bench import s19  # noqa: E402
from bench.harness import fetch_wire  # noqa: E402
from bench.loadgen import wrk  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")

# S19_EXTRA="name:ENV=VALUE,..." adds a sluicegate run with those environment variables (e.g.
# "sg-spinoff:SLUICEGATE_SPIN=off"); S19_BASE_PY: a second sluicegate build as "sg-base".
EXTRA = {}
for spec in filter(None, os.environ.get("S19_EXTRA", "").split(";")):
    name, _, envs = spec.partition(":")
    EXTRA[name] = dict(e.split("=", 1) for e in envs.split(",") if e)
if os.environ.get("S19_BASE_PY"):
    EXTRA["sg-base"] = {}
s19.SERVERS = tuple(s19.SERVERS) + tuple(EXTRA)
_start, _command = s19.procs.start, s19.command


def start_with_env(name, argv, cwd, env, *rest):
    return _start(name, argv, cwd, {**env, **EXTRA.get(name, {})}, *rest)


def command(name, ini):
    if name == "sg-base" and os.environ.get("S19_BASE_PY"):
        return [str(Path(os.environ["S19_BASE_PY"]).parent / "sluicegate-uwsgi"), "--ini", str(ini)]
    return _command(name if name == "uwsgi" else "sluicegate", ini)


s19.procs.start, s19.command = start_with_env, command


def threads(pids):
    out = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except FileNotFoundError:
            continue
        for tid in tids:
            try:
                stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
                st = Path(f"/proc/{pid}/task/{tid}/status").read_text()
            except FileNotFoundError:
                continue
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            f = stat[stat.rindex(")") + 2:].split()
            cs = {l.split(":")[0]: int(l.split()[1]) for l in st.splitlines() if "ctxt_switches" in l}
            out[(pid, tid)] = (name, int(f[11]), int(f[12]), cs["voluntary_ctxt_switches"],
                               cs["nonvoluntary_ctxt_switches"], int(f[7]))
    return out


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3
    d = tempfile.mkdtemp(prefix="sg-s19t-")
    os.chmod(d, 0o755)
    started, nginx, ports = s19.start(s19.SERVERS, "s6_hello", 1, d)
    acc = {n: defaultdict(lambda: [0, 0, 0, 0]) for n in s19.SERVERS}
    reqs = defaultdict(int)
    try:
        sizes = {n: fetch_wire(p, "/")[0] for n, p in ports.items()}
        for r in range(rounds):
            k = r % len(s19.SERVERS)
            for name in (s19.SERVERS[k:] + s19.SERVERS[:k]):
                pids = started[name].pids()
                b = threads(pids)
                out = wrk(f"http://127.0.0.1:{ports[name]}/", 64, seconds, sizes[name])
                a = threads(pids)
                reqs[name] += out.requests
                print(f"round {r + 1} {name}: {out.rps:,.0f} req/s", flush=True)
                for k, v in a.items():
                    if k in b:
                        w = b[k]
                        role = ("master" if k[0] == min(pids) else "worker") + ":" + v[0]
                        for i in range(4):
                            acc[name][role][i] += v[i + 1] - w[i + 1]
        for name in s19.SERVERS:
            n = reqs[name]
            print(f"\n{name}: {n} requests; per request: user µs, sys µs, voluntary cs, involuntary cs")
            tu = ts = 0
            for role, (u, s, vc, ic) in sorted(acc[name].items()):
                if u or s or vc or ic:
                    print(f"  {role:32s} {u / TICK * 1e6 / n:6.2f} {s / TICK * 1e6 / n:6.2f} "
                          f"{vc / n:6.3f} {ic / n:6.3f}")
                tu += u; ts += s
            print(f"  {'total':32s} {tu / TICK * 1e6 / n:6.2f} {ts / TICK * 1e6 / n:6.2f}  = {(tu + ts) / TICK * 1e6 / n:.2f}")
    finally:
        nginx.stop()
        for p in started.values():
            p.stop()
        shutil.rmtree(d, ignore_errors=True)


main()
