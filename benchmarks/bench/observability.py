"""What seeing inside costs: hello world (S6's app, `wrk -t1 -c64`) and the
15-header pong (S4's app, `wrk -t1 -c1`, keep-alive) against sluicegate with the access log and
metrics off, with a JSON access log to a file, and with `--metrics-bind`; beside a build
without the always-on timings (`SLUICEGATE_BASE_PY`, if set), and beside gunicorn gthread and
uWSGI each with and without their access log to a file. Rounds interleaved, medians: req/s and
the server's own CPU time per request (all its processes and threads).

    SLUICEGATE_BASE_PY=/path/to/base/.venv/bin/python \\
        SLUICEGATE_NOTIME_PY=/path/to/notime/.venv/bin/python \\
        python3 benchmarks/run.py observability [--rounds 5] [--seconds 5] [--out DIR]
        [--only sluicegate] [--cases S6]

Besides the medians, each server's round is paired with the reference's round (log off) and
the median of those ratios is reported too: on a shared machine whose speed drifts between
rounds, the paired figure is the steadier one.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
APPS = BENCH / "apps"
sys.path.insert(0, str(ROOT))
from bench.loadgen import wrk  # noqa: E402
from bench.procs import cpu_seconds, free_port, session_pids  # noqa: E402
from bench.harness import PEERS, SG, env_for, response_size, wait_ready  # noqa: E402

CASES = {"S6 hello wrk -c64": ("s6_hello", "/", 64), "S4 pong wrk -c1": ("s4_pong", "/", 1)}


def servers(module: str, logdir: str) -> dict:
    app = f"{module}:app"
    out = {}

    def sg(py, extra):
        def make(port):
            return [str(py), "-m", "sluicegate", "--bind", f"127.0.0.1:{port}", *extra, app]
        return make

    out["sluicegate, log and metrics off"] = sg(SG, [])
    base = os.environ.get("SLUICEGATE_BASE_PY")
    if base:
        out["sluicegate without timings (base)"] = sg(base, [])
    notime = os.environ.get("SLUICEGATE_NOTIME_PY")
    if notime:
        # This build with the clock readings and the recording compiled out
        # (results/…/notime.patch): the always-on timings' own cost.
        out["sluicegate, timings compiled out"] = sg(notime, [])
    out["sluicegate, JSON access log"] = sg(SG, ["--access-log", f"{logdir}/sg.json",
                                                 "--access-log-format", "json"])
    out["sluicegate, gunicorn-format access log"] = sg(SG, [
        "--access-log", f"{logdir}/sg.gunicorn", "--access-logformat",
        '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"'])
    # Datagrams to a port nobody reads: what making and sending the metrics costs.
    out["sluicegate, --statsd-host"] = sg(SG, ["--statsd-host", f"127.0.0.1:{free_port()}"])
    mport = free_port()
    out["sluicegate, --metrics-bind"] = sg(SG, ["--metrics-bind", f"127.0.0.1:{mport}"])

    def gunicorn(log):
        def make(port):
            argv = [str(PEERS / "gunicorn"), "-w", "1", "-k", "gthread", "--threads", "4",
                    "--bind", f"127.0.0.1:{port}", "--keep-alive", "120", "--log-level",
                    "warning", "--chdir", str(APPS)]
            if log:
                argv += ["--access-logfile", f"{logdir}/gunicorn.log"]
            return argv + [app]
        return make

    def uwsgi(log):
        def make(port):
            argv = [str(PEERS / "uwsgi"), "--master", "--die-on-term", "--http11-socket",
                    f"127.0.0.1:{port}", "--processes", "1", "--threads", "4", "--module", app,
                    "--chdir", str(APPS), "--pythonpath", str(APPS), "--need-app",
                    "--tcp-nodelay", "--listen", "1024"]
            argv += ["--logto", f"{logdir}/uwsgi.log"] if log else ["--disable-logging"]
            return argv
        return make

    out["gunicorn gthread, no access log"] = gunicorn(False)
    out["gunicorn gthread, access log"] = gunicorn(True)
    out["uWSGI, no request log"] = uwsgi(False)
    out["uWSGI, request log"] = uwsgi(True)
    return out


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", default="", help="servers whose name starts with this; several: a|b (e.g. sluicegate)")
    ap.add_argument("--cases", default="", help="cases whose name starts with this (e.g. S6)")


def main(args: argparse.Namespace) -> int | None:
    logdir = tempfile.mkdtemp(prefix="sg-obs-")
    results = {}
    lines = ["| case | server | req/s | ÷ off | ÷ off, paired | CPU µs/req | Δ CPU vs off |"
             " Δ CPU, paired |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for case, (module, path, conns) in CASES.items():
        if not case.startswith(args.cases):
            continue
        procs = {}
        try:
            for name, make in servers(module, logdir).items():
                if not any(name.startswith(p) for p in args.only.split("|")):
                    continue
                port = free_port()
                argv = make(port)
                procs[name] = (subprocess.Popen(argv, cwd=APPS, env=env_for(argv[0]),
                                                stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL,
                                                start_new_session=True), port)
            for name, (p, port) in procs.items():
                wait_ready(f"127.0.0.1:{port}", time.monotonic() + 30)
            sizes = {n: response_size(port, path) for n, (_, port) in procs.items()}
            res = {n: ([], []) for n in procs}
            names = list(procs)
            for r in range(args.rounds):
                k = r % len(names)
                for name in names[k:] + names[:k]:
                    p, port = procs[name]
                    pids = session_pids(p.pid)
                    before = cpu_seconds(pids)
                    out = wrk(f"http://127.0.0.1:{port}{path}", conns, args.seconds, sizes[name])
                    after = cpu_seconds(pids)
                    if out.errors or not out.verified or not out.requests:
                        raise SystemExit(f"{case} {name}: {out.note or 'errors'}")
                    res[name][0].append(out.rps)
                    res[name][1].append((after - before) * 1e6 / out.requests)
                    print(f"  {case} round {r + 1} {name}: {out.rps:,.0f} req/s", flush=True)
        finally:
            for p, _ in procs.values():
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            for p, _ in procs.values():
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
        med = {n: (statistics.median(v[0]), statistics.median(v[1])) for n, v in res.items()}
        results[case] = {n: {"rps": m[0], "cpu_us": m[1], "rounds": res[n]} for n, m in med.items()}
        for name, (rps, cpu) in med.items():
            ref = ("sluicegate, log and metrics off" if name.startswith("sluicegate") else
                   "gunicorn gthread, no access log" if name.startswith("gunicorn") else
                   "uWSGI, no request log")
            rrps, rcpu = med[ref]
            # Paired: each round's figure against the reference's in the same round, then the
            # median of those (drifts of the shared machine between rounds cancel).
            ratio = statistics.median(a / b for a, b in zip(res[name][0], res[ref][0]))
            delta = statistics.median(a - b for a, b in zip(res[name][1], res[ref][1]))
            results[case][name]["paired"] = {"rps_ratio": ratio, "cpu_delta_us": delta}
            lines.append(f"| {case} | {name} | {rps:,.0f} | {rps / rrps:.3f} | {ratio:.3f} | "
                         f"{cpu:.2f} | {cpu - rcpu:+.2f} | {delta:+.2f} |")
    report = "\n".join(lines)
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "observability.json").write_text(json.dumps(results, indent=1))
        (args.out / "observability.md").write_text(
            f"wrk -t1, {args.rounds} rounds of {args.seconds:g} s interleaved, medians\n\n"
            + report + "\n\ncommand: SLUICEGATE_BASE_PY=... python3 benchmarks/run.py "
            f"observability --rounds {args.rounds} --seconds {args.seconds:g}\n")
