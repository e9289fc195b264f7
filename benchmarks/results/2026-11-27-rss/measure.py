"""S19's memory case broken down: the same uwsgi.ini (`processes = 2`) run by uWSGI and by one or
more builds of sluicegate-uwsgi side by side behind one nginx, after S19's hello-world requests,
each process's RSS read from /proc/PID/smaps and summed per mapping (Rss, Shared, Private,
Anonymous).

    python3 benchmarks/results/2026-11-27-rss/measure.py [--repeats 3] [--out DIR]
        [--variant NAME=PYTHONDIR[:ENV=VALUE,...]] ... [--detail]

A variant is sluicegate run from a copy of its Python tree (PYTHONDIR, with its own _core .so),
by this work tree's .venv interpreter through a copy of the `sluicegate-uwsgi` console script;
without --variant, `sluicegate` is this work tree's python/. Every variant and uWSGI run in the
same repeat, started one after the other and measured after the same requests.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH / "apps"))
sys.path.insert(0, str(BENCH))
import servers  # noqa: E402
from bench import procs, s16, s19  # noqa: E402
from bench.harness import PEERS, SG, env_for, fetch_wire, wait_ready  # noqa: E402
from bench.loadgen import wrk  # noqa: E402

FIELDS = ("Rss", "Pss", "Shared_Clean", "Shared_Dirty", "Private_Clean", "Private_Dirty", "Anonymous")
LAUNCHER = """#!{python}
import sys
from sluicegate.uwsgi_cli import main
if __name__ == '__main__':
    sys.argv[0] = sys.argv[0].removesuffix('.exe')
    sys.exit(main())
"""


def smaps(pid: int) -> dict[str, dict[str, int]]:
    """kB per field, per mapping key: the file's name and permissions, or [heap], [stack], [anon]."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(FIELDS, 0))
    key = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                name = head[5] if len(head) > 5 else "[anon]"
                key = f"{os.path.basename(name) if name.startswith('/') else name} {head[1]}"
            elif head[0].rstrip(":") in FIELDS and key is not None:
                out[key][head[0].rstrip(":")] += int(head[1])
    return dict(out)


def roles(pids: list[int]) -> dict[int, str]:
    """master (its parent is outside the session) and worker1, worker2... by pid."""
    ppid = {p: int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1]) for p in pids}
    master = [p for p in pids if ppid[p] not in pids]
    out = {p: "master" for p in master}
    for i, p in enumerate(sorted(p for p in pids if p not in master)):
        out[p] = f"worker{i + 1}"
    return out


def command(name: str, ini: Path, launchers: dict[str, Path]) -> list[str]:
    if name == "uwsgi":
        return [str(PEERS / "uwsgi"), "--ini", str(ini)]
    return [str(launchers[name]), "--ini", str(ini)]


def one_repeat(variants: dict[str, tuple[Path, dict]], d: str) -> dict:
    names = ("uwsgi", *variants)
    launchers = {}
    for name, (pydir, _) in variants.items():
        lp = Path(d) / f"bin-{name}" / "sluicegate-uwsgi"
        lp.parent.mkdir()
        lp.write_text(LAUNCHER.format(python=SG))
        lp.chmod(0o755)
        launchers[name] = lp
    text = s19.ini_text("s6_hello", 2)
    started, blocks = {}, {}
    for name in names:
        sub = Path(d) / name
        sub.mkdir()
        ini = sub / "uwsgi.ini"
        ini.write_text(text)
        argv = command(name, ini, launchers)
        env = env_for(argv[0])
        if name in variants:
            env["PYTHONPATH"] = f"{variants[name][0]}:{servers.APPS}"
            env.update(variants[name][1])
        started[name] = procs.start(name, argv, servers.APPS, env, 0, sub / "server.log")
        wait_ready(f"unix:{sub / 'app.sock'}", time.monotonic() + 60)
        blocks[(name, "uwsgi-unix")] = (procs.free_port(), f"unix:{sub / 'app.sock'}")
    conf = Path(d) / "nginx.conf"
    conf.write_text(s16.nginx_conf(d, blocks))
    nginx = procs.start("nginx", [s16.NGINX, "-c", str(conf), "-p", d], Path(d), dict(os.environ),
                        0, Path(d) / "nginx.out")
    try:
        for port, _ in blocks.values():
            wait_ready(f"127.0.0.1:{port}", time.monotonic() + 20)
        out = {}
        for name in names:
            port = blocks[(name, "uwsgi-unix")][0]
            wrk(f"http://127.0.0.1:{port}/", 8, 1, None)
            for _ in range(s19.MEMORY_REQUESTS // 100):
                fetch_wire(port, "/")
            pids = started[name].pids()
            r = roles(pids)
            out[name] = {r[p]: {"pid": p, "VmRSS_kB": procs.rss_bytes([p], peak=False) // 1024,
                                "smaps": smaps(p)} for p in pids}
        return out
    finally:
        nginx.stop()
        for p in started.values():
            p.stop()


def category(key: str) -> str:
    name = key.rsplit(" ", 1)[0]
    if name.startswith("_core."):
        return "_core .so"
    if name.startswith("python3") or name.startswith("libpython"):
        return "python binary"
    if name.startswith("uwsgi"):
        return "uwsgi binary"
    if ".so" in name:
        return "other .so"
    if name.startswith("["):
        return name
    return "other files"


def summarize(runs: list[dict]) -> list[str]:
    """Medians over repeats: per server, per process; per server, per category (all processes)."""
    lines = ["| server | process | RSS MiB | shared MiB | private MiB | anonymous MiB |",
             "|---|---|---:|---:|---:|---:|"]
    names = list(runs[0])
    for name in names:
        for role in sorted(runs[0][name]):
            vals = defaultdict(list)
            for run in runs:
                sm = run[name][role]["smaps"]
                vals["rss"].append(sum(v["Rss"] for v in sm.values()))
                vals["sh"].append(sum(v["Shared_Clean"] + v["Shared_Dirty"] for v in sm.values()))
                vals["pr"].append(sum(v["Private_Clean"] + v["Private_Dirty"] for v in sm.values()))
                vals["an"].append(sum(v["Anonymous"] for v in sm.values()))
            m = {k: statistics.median(v) / 1024 for k, v in vals.items()}
            lines.append(f"| {name} | {role} | {m['rss']:.2f} | {m['sh']:.2f} | {m['pr']:.2f} | {m['an']:.2f} |")
        tot = [sum(p["VmRSS_kB"] for p in run[name].values()) / 1024 for run in runs]
        lines.append(f"| {name} | **sum (VmRSS)** | **{statistics.median(tot):.2f}** "
                     f"({', '.join(f'{t:.2f}' for t in tot)}) | | | |")
    lines += ["", "| server | category (all processes) | RSS MiB | private MiB | anonymous MiB |",
              "|---|---|---:|---:|---:|"]
    for name in names:
        cats = defaultdict(lambda: defaultdict(list))
        for run in runs:
            acc = defaultdict(lambda: [0, 0, 0])
            for proc in run[name].values():
                for key, v in proc["smaps"].items():
                    a = acc[category(key)]
                    a[0] += v["Rss"]
                    a[1] += v["Private_Clean"] + v["Private_Dirty"]
                    a[2] += v["Anonymous"]
            for c, a in acc.items():
                for i, x in enumerate(a):
                    cats[c][i].append(x)
        for c in sorted(cats, key=lambda c: -statistics.median(cats[c][0])):
            m = [statistics.median(cats[c][i]) / 1024 for i in range(3)]
            lines.append(f"| {name} | {c} | {m[0]:.2f} | {m[1]:.2f} | {m[2]:.2f} |")
    return lines


def detail(run: dict, top: int = 25) -> list[str]:
    """The first repeat's biggest mappings, per server and process."""
    lines = []
    for name, by in run.items():
        for role, proc in sorted(by.items()):
            lines += ["", f"{name} {role} (pid {proc['pid']}): mapping | Rss kB | Shared kB | Private kB | Anon kB"]
            items = sorted(proc["smaps"].items(), key=lambda kv: -kv[1]["Rss"])[:top]
            for key, v in items:
                lines.append(f"  {key:50s} {v['Rss']:7d} {v['Shared_Clean'] + v['Shared_Dirty']:7d} "
                             f"{v['Private_Clean'] + v['Private_Dirty']:7d} {v['Anonymous']:7d}")
    return lines


def parse_variant(text: str) -> tuple[str, tuple[Path, dict]]:
    name, _, rest = text.partition("=")
    pydir, _, envs = rest.partition(":")
    env = dict(e.split("=", 1) for e in envs.split(",") if e)
    return name, (Path(pydir).resolve(), env)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--detail", action="store_true")
    args = ap.parse_args()
    procs.raise_fd_limit()
    variants = dict(parse_variant(v) for v in args.variant) or {
        "sluicegate": (BENCH.parent / "python", {})}
    runs = []
    for i in range(args.repeats):
        d = tempfile.mkdtemp(prefix="sg-rss-")
        os.chmod(d, 0o755)
        try:
            runs.append(one_repeat(variants, d))
        finally:
            shutil.rmtree(d, ignore_errors=True)
        print(f"repeat {i + 1}: " + ", ".join(
            f"{n} {sum(p['VmRSS_kB'] for p in by.values()) / 1024:.2f} MiB" for n, by in runs[-1].items()),
            flush=True)
    lines = summarize(runs) + (detail(runs[0]) if args.detail else [])
    print("\n".join(lines))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "runs.json").write_text(json.dumps(runs))
        (args.out / "summary.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
