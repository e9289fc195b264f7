"""The scenario suite: S1–S16 against sluicegate and its peers in one interleaved run.

    python3 benchmarks/run.py [suite] [--quick | --full | --standing] [--servers a,b,c] [--scenarios S1,S6] [--rounds N]

Owns the plan of a run and its output: which servers (only those installed; sluicegate is
reported "not built" when its extension is missing), which scenarios, how many rounds, the
interleaving (within a round, every scenario runs for every server in turn, the order rotated
each round, so that the machine's drift falls on everyone alike), the output directory
benchmarks/results/<date>-<mode>/ (results.json written after every scenario, report.md and PNG
charts at the end, even after Ctrl-C), and the guarantee that no server outlives the run.
Quick: one round, a few seconds per case, sluicegate + bjoern + gunicorn-gthread (+ the nginx
anchor) by default.
Full: every server and the nginx anchor, S1–S10, S12, S13, three rounds, medians (about 3 h).
Standing: every server and the anchor, every scenario S1–S16, three rounds of short runs; the
scenarios in `Mode.once` in the first round only (about 70 minutes on 2 cores): the run
BENCHMARKS.md's standing table and charts come from.
S11, S14, S15 and S16 start their own set of servers (nginx in front, TLS, HTTP/2): once per
round, they measure every server of the run that they can serve in a rotated order (GROUPED);
quick and full runs take them only when `--scenarios` names them.
`sluicegate-base` is a second build of sluicegate (the venv python named by SLUICEGATE_BASE_PY),
run exactly like `sluicegate`: a before/after in one interleaved run.
"""

from __future__ import annotations

import argparse
import importlib
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
# Scenarios that start their own servers (nginx in front, TLS, HTTP/2): one call per round for
# every server at once, `suite_round(h, round, servers) -> {extra server name: (kind, what)}`.
GROUPED = {"S11": "bench.s11", "S14": "bench.s14", "S15": "bench.s15", "S16": "bench.s16"}
ORDER = ("S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9", "S10", "S11", "S12", "S13", "S14", "S15", "S16")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="one short round (default)")
    mode.add_argument("--full", action="store_true", help="every server, S1-S10, S12, S13, 3 rounds (~3 h)")
    mode.add_argument("--standing", action="store_true",
                      help="every server, every scenario S1-S16, 3 rounds of short runs (~70 min)")
    ap.add_argument("--servers", default="", help="comma-separated; default: quick trio or all. "
                    f"Known: {','.join(servers.SERVERS)}")
    ap.add_argument("--scenarios", default="", help="comma-separated, e.g. S1,S6 (default: S1-S10, S12, "
                    f"S13; --standing: all). Known: {','.join(ORDER)}")
    ap.add_argument("--rounds", type=int, default=0, help="override the mode's round count")
    ap.add_argument("--tiny", action="store_true", help="every run of the mode cut to a minimum (with "
                    "--standing: the whole plan in minutes): proves the run works, measures nothing")
    ap.add_argument("--s13", choices=("all", "short", "flask", "burst"), default="",
                    help="S13's cases: all (the mode's default but --standing's), short (the four Django "
                    "cases, peers 8 threads: --standing's), flask (the Flask + SQLAlchemy cases only), burst (the "
                    "300-client bursts only)")
    ap.add_argument("--out", type=Path, default=None, help="output directory (default results/<date>-<mode>)")


def pick_servers(args: argparse.Namespace) -> list[str]:
    if args.servers:
        names = [n.strip() for n in args.servers.split(",") if n.strip()]
        unknown = [n for n in names if n not in servers.SERVERS]
        if unknown:
            sys.exit(f"run.py: unknown servers {unknown}; known: {', '.join(servers.SERVERS)}")
        return names
    if args.full or args.standing:  # every server but the other builds of sluicegate
        return [n for n in servers.SERVERS if n not in ("sluicegate-base", "sluicegate-w1")]
    return list(servers.QUICK_DEFAULT)


def pick_scenarios(args: argparse.Namespace) -> list[str]:
    if not args.scenarios:
        return list(ORDER) if args.standing else [s for s in ORDER if s in scenarios.SCENARIOS]
    names = [s.strip().upper() for s in args.scenarios.split(",") if s.strip()]
    unknown = [s for s in names if s not in ORDER]
    if unknown:
        sys.exit(f"run.py: unknown scenarios {unknown}; known: {', '.join(ORDER)}")
    return names


def mode_of(args: argparse.Namespace) -> harness.Mode:
    mode = harness.STANDING if args.standing else harness.FULL if args.full else harness.QUICK
    if args.tiny:
        mode = harness.Mode(**{**mode.__dict__, **harness.TINY, "name": f"{mode.name}-tiny"})
    if args.rounds:
        mode = harness.Mode(**{**mode.__dict__, "rounds": args.rounds})
    if args.s13:
        mode = harness.Mode(**{**mode.__dict__, "s13_short": args.s13 == "short", "s13_flask": args.s13 == "flask",
                               "s13_burst": args.s13 == "burst"})
    return mode


def run_scenario(h: harness.Harness, sid: str, rnd: int, runnable: list[str], results: dict) -> None:
    """One scenario in one round: every server in turn (the order rotated by the round), or one
    call for all of them where the scenario starts its own set (GROUPED)."""
    if sid in GROUPED:
        print(f"round {rnd}/{h.mode.rounds} {sid}: every server it serves", flush=True)
        try:
            extra = importlib.import_module(GROUPED[sid]).suite_round(h, rnd, runnable)
        except Exception as e:  # noqa: BLE001 - one scenario's breakage must not end an hour-long run
            print(f"run.py: {sid} round {rnd} stopped: {type(e).__name__}: {e}", flush=True)
            meta = results["meta"]
            meta.setdefault("stopped", []).append(f"{sid} round {rnd}: {type(e).__name__}: {e}")
            return
        for name, (kind, what) in extra.items():
            results["servers"].setdefault(name, {"kind": kind, "describe": what, "available": True,
                                                 "why_not": "", "version": None})
        return
    shift = (rnd - 1) % len(runnable)
    order = runnable[shift:] + runnable[:shift]
    print(f"round {rnd}/{h.mode.rounds} {sid}: {' '.join(order)}", flush=True)
    for name in order:
        scenarios.SCENARIOS[sid](h, servers.SERVERS[name], rnd)


def out_dir(args: argparse.Namespace, mode: harness.Mode) -> Path:
    if args.out:
        return args.out
    base = BENCH / "results" / f"{date.today().isoformat()}-{mode.name}"
    path, n = base, 2
    while path.exists():
        path, n = base.with_name(f"{base.name}-{n}"), n + 1
    return path


def main(args: argparse.Namespace) -> int:
    mode = mode_of(args)
    names = pick_servers(args)
    sids = pick_scenarios(args)
    tools = TOOLS + (("h2load", "curl") if "S15" in sids else ()) + (("openssl",) if "S14" in sids else ())
    missing = [t for t in tools if not shutil.which(t) and not Path(f"/usr/sbin/{t}").exists()]
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
    meta.update(mode=mode.name, rounds=mode.rounds, scenarios=sids, titles=scenarios.TITLES, once=list(mode.once),
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
                if rnd > 1 and sid in mode.once:
                    continue
                started = time.monotonic()
                run_scenario(h, sid, rnd, runnable, results)
                meta.setdefault("seconds", []).append([rnd, sid, round(time.monotonic() - started, 1)])
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

