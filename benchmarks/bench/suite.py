"""The scenario suite: S1–S10, S12 and S13 against sluicegate and its peers in one interleaved run.

    python3 benchmarks/run.py [suite] [--quick | --full] [--servers a,b,c] [--scenarios S1,S6] [--rounds N]

Owns the plan of a run and its output: which servers (only those installed; sluicegate is
reported "not built" when its extension is missing), which scenarios, how many rounds, the
interleaving (within a round, every scenario runs for every server in turn, the order rotated
each round, so that the machine's drift falls on everyone alike), the output directory
benchmarks/results/<date>-<mode>/ (results.json written after every scenario, report.md and PNG
charts at the end, even after Ctrl-C), and the guarantee that no server outlives the run.
Quick: one round, a few seconds per case, sluicegate + bjoern + gunicorn-gthread (+ the nginx
anchor) by default.
Full: every server and the nginx anchor, every scenario, three rounds, medians.
`sluicegate-base` is a second build of sluicegate (the venv python named by SLUICEGATE_BASE_PY),
run exactly like `sluicegate`: a before/after in one interleaved run.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import signal
import sys
import time
from datetime import date
from pathlib import Path

import servers  # first: it puts apps/ on sys.path
import payloads  # noqa: I001
from bench import harness, machine, procs, report, scenarios

BENCH = servers.BENCH

TOOLS = ("wrk", "ab", "httperf", "nginx", "tcpdump")
# Scenarios of BENCHMARKS.md ("The scenarios") measured by a command of their own, not by the suite's loop.
ELSEWHERE = {"S11": "s11", "S14": "(not measured yet)", "S15": "(not measured yet)"}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="one short round (default)")
    mode.add_argument("--full", action="store_true", help="every server, every scenario, 3 rounds")
    ap.add_argument("--servers", default="", help="comma-separated; default: quick trio or all. "
                    f"Known: {','.join(servers.SERVERS)}")
    ap.add_argument("--scenarios", default="", help="comma-separated, e.g. S1,S6 (default: all). "
                    f"Known: {','.join(scenarios.SCENARIOS)}; S11: run.py s11")
    ap.add_argument("--rounds", type=int, default=0, help="override the mode's round count")
    ap.add_argument("--out", type=Path, default=None, help="output directory (default results/<date>-<mode>)")


def pick_servers(args: argparse.Namespace) -> list[str]:
    if args.servers:
        names = [n.strip() for n in args.servers.split(",") if n.strip()]
        unknown = [n for n in names if n not in servers.SERVERS]
        if unknown:
            sys.exit(f"run.py: unknown servers {unknown}; known: {', '.join(servers.SERVERS)}")
        return names
    return list(servers.SERVERS) if args.full else list(servers.QUICK_DEFAULT)


def pick_scenarios(args: argparse.Namespace) -> list[str]:
    if not args.scenarios:
        return list(scenarios.SCENARIOS)
    names = [s.strip().upper() for s in args.scenarios.split(",") if s.strip()]
    elsewhere = {s: ELSEWHERE[s] for s in names if s in ELSEWHERE}
    if elsewhere:
        sys.exit("run.py: " + "; ".join(f"{s} is measured by `run.py {cmd}`" for s, cmd in elsewhere.items()))
    unknown = [s for s in names if s not in scenarios.SCENARIOS]
    if unknown:
        sys.exit(f"run.py: unknown scenarios {unknown}; known: {', '.join(scenarios.SCENARIOS)}")
    return names


def out_dir(args: argparse.Namespace, mode: harness.Mode) -> Path:
    if args.out:
        return args.out
    base = BENCH / "results" / f"{date.today().isoformat()}-{mode.name}"
    path, n = base, 2
    while path.exists():
        path, n = base.with_name(f"{base.name}-{n}"), n + 1
    return path


def main(args: argparse.Namespace) -> int:
    mode = harness.FULL if args.full else harness.QUICK
    if args.rounds:
        mode = harness.Mode(**{**mode.__dict__, "rounds": args.rounds})
    names = pick_servers(args)
    sids = pick_scenarios(args)
    missing = [t for t in TOOLS if not shutil.which(t) and not Path(f"/usr/sbin/{t}").exists()]
    if missing:
        sys.exit(f"run.py: missing {', '.join(missing)}: run benchmarks/setup.sh first")
    fd_limit = procs.raise_fd_limit()
    runnable, skipped = [], {}
    for n in names:
        ok, why = servers.SERVERS[n].available()
        (runnable.append(n) if ok else skipped.__setitem__(n, why))
    for n, why in skipped.items():
        print(f"run.py: {n}: {why}", flush=True)
    if not runnable:
        sys.exit("run.py: no server can run")
    payloads.ensure(huge=mode.huge_file and "S2" in sids)
    out = out_dir(args, mode)
    out.mkdir(parents=True, exist_ok=True)
    logs = servers.WORK / "logs" / out.name
    h = harness.Harness(mode, logs)
    meta = machine.collect(names)
    meta.update(mode=mode.name, rounds=mode.rounds, scenarios=sids, titles=scenarios.TITLES,
                command="python3 benchmarks/run.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
                fd_limit=fd_limit, mode_settings=mode.__dict__)
    if "S3" in sids:
        meta["s3_python_only_s"] = scenarios.python_only_s3()
    server_info = {n: {"kind": servers.SERVERS[n].kind, **meta["servers"][n]} for n in names}
    results = {"meta": meta, "servers": server_info, "records": []}
    print(f"run.py: {mode.name} run, {mode.rounds} round(s), servers {', '.join(runnable)}, scenarios "
          f"{', '.join(sids)} -> {out}", flush=True)

    def on_term(signum, frame):  # a polite kill of the harness still stops every server
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    t0 = time.monotonic()
    try:
        for rnd in range(1, mode.rounds + 1):
            for sid in sids:
                shift = (rnd - 1) % len(runnable)
                order = runnable[shift:] + runnable[:shift]
                print(f"round {rnd}/{mode.rounds} {sid}: {' '.join(order)}", flush=True)
                for name in order:
                    scenarios.SCENARIOS[sid](h, servers.SERVERS[name], rnd)
                results["records"] = [r.to_json() for r in h.records]
                _dump(results, out)
    except KeyboardInterrupt:
        meta["interrupted"] = True
        print("\nrun.py: interrupted; stopping servers and writing what was measured", flush=True)
    finally:
        harness.stop_all()
        meta["elapsed_s"] = round(time.monotonic() - t0, 1)
        results["records"] = [r.to_json() for r in h.records]
        _dump(results, out)
        report.write(results, out)
    print(f"run.py: {out / 'report.md'} ({meta['elapsed_s']:.0f} s)")
    return 130 if meta.get("interrupted") else 0


def _dump(results: dict, out: Path) -> None:
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(results, indent=1, default=str) + "\n")
    tmp.replace(out / "results.json")

