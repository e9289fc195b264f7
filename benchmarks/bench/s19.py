"""S19: one uwsgi.ini run by uWSGI and by sluicegate's uWSGI entry point (`sluicegate-uwsgi`),
each behind Debian's nginx (one worker) with `uwsgi_pass` over a unix socket, as a team leaving
uWSGI runs it with its config and nginx's untouched.

The ini is written once per case (`ini_text`) and copied, byte for byte, into one directory per
server; its socket is `%d/app.sock` (uWSGI's magic variable for the file's directory), so the two
copies differ only by where they live. One worker process each (`processes = 1`, `master`):

- `hello`: S6's hello world (`module = s6_hello:app`), `wrk -t1 -c64` against nginx;
- `stream128`: S3's 2.5 MB text in 128-byte blocks (`s3_stream`, `/128`), `wrk -t1 -c16`;
- `static`: S2's 21,324-byte file through `static-map = /static=DIR` (neither app runs),
  `wrk -t1 -c64`.

Per run: req/s, p99, the server's CPU time per request (its whole process tree, from /proc),
nginx's, and the ceiling (`s16.ceiling`: the rate a server costing nothing would reach behind
this nginx). Rounds are interleaved, the order rotating. Bytes are verified through nginx before
the runs and by wrk's byte count during them. Then memory: the same ini with `processes = 2`,
after 2,000 hello-world requests through nginx, the RSS of master and workers summed.

    python3 benchmarks/run.py s19 [--rounds 3] [--seconds 5] [--cases hello,stream128,static]
        [--out results/DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH / "apps"))
sys.path.insert(0, str(BENCH))
import payloads  # noqa: E402
import servers  # noqa: E402
from bench import procs, s16  # noqa: E402
from bench.harness import PEERS, SG, env_for, fetch_wire, wait_ready  # noqa: E402
from bench.loadgen import wrk  # noqa: E402

SERVERS = ("sluicegate", "uwsgi")
# case -> (app module, path through nginx, wrk connections)
CASES = {"hello": ("s6_hello", "/", 64), "stream128": ("s3_stream", "/128", 16),
         "static": ("s2_static", f"/static/{payloads.S2_SMALL}", 64)}
MEMORY_REQUESTS = 2000


def expected(case: str) -> bytes:
    if case == "hello":
        return payloads.HELLO
    if case == "stream128":
        return payloads.text()
    return payloads.static_path().read_bytes()


def ini_text(module: str, processes: int) -> str:
    """The uwsgi.ini both servers run: a public project's shape (master, a unix socket for nginx
    with chmod-socket and vacuum, the app's directory, static-map, no request log)."""
    return f"""[uwsgi]
; S19: the same file for uWSGI and sluicegate-uwsgi
chdir = {servers.APPS}
pythonpath = {servers.APPS}
module = {module}:app
master = true
processes = {processes}
socket = %d/app.sock
chmod-socket = 666
vacuum = true
die-on-term = true
need-app = true
disable-logging = true
static-map = /static={payloads.STATIC}
listen = 1024
"""


def command(name: str, ini: Path) -> list[str]:
    if name == "uwsgi":
        return [str(PEERS / "uwsgi"), "--ini", str(ini)]
    script = Path(SG).parent / "sluicegate-uwsgi"
    return [str(script), "--ini", str(ini)]


def start(names: tuple[str, ...], module: str, processes: int, d: str):
    """Each server on its copy of the ini, one nginx in front: (server procs, nginx, ports)."""
    started, blocks = {}, {}
    text = ini_text(module, processes)
    for name in names:
        sub = Path(d) / name
        sub.mkdir()
        ini = sub / "uwsgi.ini"
        ini.write_text(text)
        argv = command(name, ini)
        started[name] = procs.start(name, argv, servers.APPS, env_for(argv[0]), 0, sub / "server.log")
        wait_ready(f"unix:{sub / 'app.sock'}", time.monotonic() + 40)
        blocks[(name, "uwsgi-unix")] = (procs.free_port(), f"unix:{sub / 'app.sock'}")
    conf = Path(d) / "nginx.conf"
    conf.write_text(s16.nginx_conf(d, blocks))
    nginx = procs.start("nginx", [s16.NGINX, "-c", str(conf), "-p", d], Path(d), dict(os.environ),
                        0, Path(d) / "nginx.out")
    for port, _ in blocks.values():
        wait_ready(f"127.0.0.1:{port}", time.monotonic() + 20)
    return started, nginx, {name: blocks[(name, "uwsgi-unix")][0] for name in names}


def run_case(case: str, rounds: int, seconds: float) -> dict:
    module, path, conns = CASES[case]
    want = expected(case)
    d = tempfile.mkdtemp(prefix="sg-s19-")
    os.chmod(d, 0o755)
    started, nginx, ports = start(SERVERS, module, 1, d)
    try:
        res = {n: {"rps": [], "p99_ms": [], "server_us": [], "nginx_us": [], "client_us": [], "errors": []}
               for n in SERVERS}
        notes: dict[str, list[str]] = {n: [] for n in SERVERS}
        sizes = {}
        for name, port in ports.items():
            size, body = fetch_wire(port, path)
            if body != want:
                raise SystemExit(f"S19 {case}: {name} answered {len(body)} wrong bytes through nginx")
            sizes[name] = size
        for r in range(rounds):
            order = list(SERVERS[r % 2:] + SERVERS[:r % 2])
            for name in order:
                pids, npids = started[name].pids(), nginx.pids()
                b, nb = procs.cpu_seconds(pids), procs.cpu_seconds(npids)
                out = wrk(f"http://127.0.0.1:{ports[name]}{path}", conns, seconds, sizes[name])
                a, na = procs.cpu_seconds(pids), procs.cpu_seconds(npids)
                if not out.verified or not out.requests:
                    notes[name].append(f"round {r + 1}: {out.note or 'no request completed'}")
                    continue
                m = res[name]
                m["rps"].append(out.rps)
                m["errors"].append(out.errors)
                m["p99_ms"].append(out.detail["p99_us"] / 1000)
                m["server_us"].append((a - b) * 1e6 / out.requests)
                m["nginx_us"].append((na - nb) * 1e6 / out.requests)
                m["client_us"].append(out.detail["client_cpu_s"] * 1e6 / out.requests)
                print(f"  S19 {case} round {r + 1} {name}: {out.rps:,.0f} req/s, server "
                      f"{m['server_us'][-1]:.1f} µs/req", flush=True)
        out = {}
        for name, m in res.items():
            med = {k: statistics.median(v) if v else 0.0 for k, v in m.items()}
            med["ceiling_rps"] = s16.ceiling(med["nginx_us"], med["client_us"])
            out[name] = {**med, "rounds": m, "notes": notes[name]}
        return out
    finally:
        nginx.stop()
        for p in started.values():
            p.stop()
        shutil.rmtree(d, ignore_errors=True)


def memory() -> dict[str, int]:
    """RSS (bytes) of master + 2 workers after MEMORY_REQUESTS hello-world requests through nginx."""
    d = tempfile.mkdtemp(prefix="sg-s19m-")
    os.chmod(d, 0o755)
    # The front compiled to __pycache__ first, as installing a wheel leaves it: a work tree run
    # with PYTHONDONTWRITEBYTECODE set would otherwise compile every module in every process.
    subprocess.run([SG, "-c", "import compileall, os, sluicegate; "
                    "compileall.compile_dir(os.path.dirname(sluicegate.__file__), quiet=1)"],
                   check=True, env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    started, nginx, ports = start(SERVERS, "s6_hello", 2, d)
    try:
        out = {}
        for name, port in ports.items():
            wrk(f"http://127.0.0.1:{port}/", 8, 1, None)
            for _ in range(MEMORY_REQUESTS // 100):
                fetch_wire(port, "/")
            pids = started[name].pids()
            out[name] = procs.rss_bytes(pids, peak=False)
            out[f"{name}_processes"] = len(pids)
        return out
    finally:
        nginx.stop()
        for p in started.values():
            p.stop()
        shutil.rmtree(d, ignore_errors=True)


def table(results: dict, mem: dict) -> list[str]:
    lines = ["| case | server | req/s | × uWSGI | ceiling | p99 ms | server µs/req | × uWSGI CPU | nginx µs/req |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for case, by in results.items():
        u = by["uwsgi"]
        for name, v in by.items():
            ratio = f"{v['rps'] / u['rps']:.2f}" if u["rps"] else "—"
            cpu = f"{v['server_us'] / u['server_us']:.2f}" if u["server_us"] else "—"
            ceiling = f"{v['ceiling_rps']:,.0f}" if v.get("ceiling_rps") else "—"
            lines.append(f"| {case} | {name} | {v['rps']:,.0f} | {ratio} | {ceiling} | {v['p99_ms']:.2f} | "
                         f"{v['server_us']:.1f} | {cpu} | {v['nginx_us']:.1f} |")
    if mem:
        lines += ["", "| RSS, master + 2 workers | sluicegate | uWSGI | ratio |", "|---|---:|---:|---:|",
                  f"| after {MEMORY_REQUESTS:,} requests | {mem['sluicegate'] / 2**20:.1f} MiB "
                  f"({mem['sluicegate_processes']} processes) | {mem['uwsgi'] / 2**20:.1f} MiB "
                  f"({mem['uwsgi_processes']} processes) | {mem['sluicegate'] / mem['uwsgi']:.2f} |"]
    return lines


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--out", type=Path)


def main(args: argparse.Namespace) -> int | None:
    procs.raise_fd_limit()
    payloads.ensure()
    results = {case: run_case(case, args.rounds, args.seconds) for case in args.cases.split(",") if case}
    mem = {} if args.no_memory else memory()
    command_line = (f"python3 benchmarks/run.py s19 --rounds {args.rounds} --seconds {args.seconds:g} "
                    f"--cases {args.cases}" + (" --no-memory" if args.no_memory else ""))
    head = [f"S19: one uwsgi.ini run by uWSGI and by sluicegate-uwsgi behind nginx (1 worker, "
            f"uwsgi_pass over a unix socket), {args.rounds} rounds interleaved, medians", ""]
    report = "\n".join(head + table(results, mem) + ["", "The ini (hello world):", "", "```ini",
                                                     ini_text("s6_hello", 1).rstrip(), "```", "",
                                                     f"command: {command_line}"])
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "s19.json").write_text(json.dumps({"cases": results, "memory": mem}, indent=1))
        (args.out / "s19.md").write_text(report + "\n")
    return None
