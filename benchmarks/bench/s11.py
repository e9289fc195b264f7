"""S11: behind nginx. Hello world (S6's app) and the 2.5 MB stream in 128-byte blocks (S3's)
fetched with wrk through one nginx (Debian's, one worker, plain HTTP on loopback) in front of:

- sluicegate, HTTP over a unix socket (nginx `proxy_pass` to an upstream with `keepalive`);
- sluicegate, the uwsgi protocol over a unix socket (`uwsgi_pass`);
- uWSGI, the uwsgi protocol over a unix socket (`uwsgi_pass`, `--socket`);
- gunicorn gthread over a unix socket (`proxy_pass`, keepalive);
- granian over TCP (`proxy_pass`, keepalive; granian has no unix socket for WSGI).

Rounds are interleaved (the order rotates), and each run reads the CPU time of the server's
process tree and of nginx's around it: req/s, server µs/request, nginx µs/request, medians.
Every server gets one process and 4 threads. The responses' bytes are checked: a full fetch
compared with the expected body before the runs, and wrk's byte count during them.

    python3 benchmarks/run.py s11 [--rounds 3] [--seconds 5] [--conns 16] \
        [--out results/DATE-s11]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
APPS = BENCH / "apps"
sys.path.insert(0, str(APPS))
sys.path.insert(0, str(ROOT))
import payloads  # noqa: E402
from bench.loadgen import wrk  # noqa: E402
from bench.harness import PEERS, SG, env_for, fetch_wire, wait_ready  # noqa: E402
from bench.procs import cpu_seconds, free_port, session_pids  # noqa: E402
from tests import nginx_util  # noqa: E402

THREADS = 4

CASES = {
    "hello": ("s6_hello", "/", b"Hello, World!"),
    "stream128": ("s3_stream", "/128", payloads.text()),
}


def upstreams(d: str, module: str, tcp_port: int) -> dict:
    """name -> (argv, nginx kind, nginx target, settings)."""
    app = f"{module}:app"
    return {
        "sluicegate http unix": (
            [str(SG), "-m", "sluicegate", "--bind", f"unix:{d}/sg-http.sock", "--threads",
             f"1:{THREADS}", app], "http", f"unix:{d}/sg-http.sock", "--threads 1:4"),
        "sluicegate uwsgi unix": (
            [str(SG), "-m", "sluicegate", "--bind", f"uwsgi:unix:{d}/sg-uwsgi.sock", "--threads",
             f"1:{THREADS}", app], "uwsgi", f"unix:{d}/sg-uwsgi.sock", "--threads 1:4"),
        "uWSGI uwsgi unix": (
            [str(PEERS / "uwsgi"), "--master", "--die-on-term", "--socket", f"{d}/uwsgi.sock",
             "--processes", "1", "--threads", str(THREADS), "--module", app, "--chdir", str(APPS),
             "--pythonpath", str(APPS), "--disable-logging", "--need-app", "--listen", "1024"],
            "uwsgi", f"unix:{d}/uwsgi.sock", "--socket --processes 1 --threads 4"),
        "gunicorn gthread unix": (
            [str(PEERS / "gunicorn"), "-w", "1", "-k", "gthread", "--threads", str(THREADS),
             "--bind", f"unix:{d}/gunicorn.sock", "--keep-alive", "120", "--log-level", "warning",
             "--chdir", str(APPS), app], "http", f"unix:{d}/gunicorn.sock",
            "-w 1 -k gthread --threads 4"),
        "granian tcp": (
            [str(PEERS / "granian"), "--interface", "wsgi", "--host", "127.0.0.1", "--port",
             str(tcp_port), "--workers", "1", "--blocking-threads", str(THREADS), "--http", "1",
             "--no-ws", "--log-level", "warning", "--no-access-log", "--working-dir", str(APPS),
             app], "http", f"127.0.0.1:{tcp_port}", "--workers 1 --blocking-threads 4"),
    }


def nginx_pids(proc: subprocess.Popen) -> list[int]:
    try:
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
            return [proc.pid] + [int(p) for p in f.read().split()]
    except OSError:
        return [proc.pid]


def run_case(case: str, rounds: int, seconds: float, conns: int, first: int = 0,
             only: set[str] | None = None, warmup_s: float = 0.0) -> dict:
    """{upstream: medians, every round's figures, notes, failed}; `first` rotates the first
    round's order, `only` keeps the upstreams named."""
    module, path, expect = CASES[case]
    d = tempfile.mkdtemp(prefix="sg-s11-")
    os.chmod(d, 0o755)
    tcp_port = free_port()
    ups = {n: u for n, u in upstreams(d, module, tcp_port).items() if only is None or n in only}
    procs = {}
    try:
        for name, (argv, kind, target, _) in ups.items():
            procs[name] = subprocess.Popen(argv, cwd=APPS, env=env_for(argv[0]),
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                           start_new_session=True)
        for name, (_, _, target, _) in ups.items():
            wait_ready(target, time.monotonic() + 30)
        for sock in Path(d).glob("*.sock"):
            os.chmod(sock, 0o666)
        proxy = nginx_util.Nginx({n: (k, t) for n, (_, k, t, _) in ups.items()}, tls=False)
        try:
            sizes, notes, failed = {}, {name: [] for name in ups}, set()
            for name in ups:
                try:
                    size, body = fetch_wire(proxy.ports[name], path)
                except (OSError, ValueError) as e:
                    size, body = 0, f"{type(e).__name__}: {e}".encode()
                if body != expect:
                    failed.add(name)
                    notes[name].append(f"verification fetch: wrong body ({len(body)} bytes)")
                sizes[name] = size
            res = {name: {"rps": [], "server_us": [], "nginx_us": [], "requests": [], "errors": []}
                   for name in ups}
            names = [n for n in ups if n not in failed]
            for name in names if warmup_s else ():
                wrk(f"http://127.0.0.1:{proxy.ports[name]}{path}", conns, warmup_s, None)
            for r in range(rounds):
                k = (first + r) % len(names) if names else 0
                for name in names[k:] + names[:k]:
                    pids = session_pids(procs[name].pid)
                    npids = nginx_pids(proxy.proc)
                    b, nb = cpu_seconds(pids), cpu_seconds(npids)
                    out = wrk(f"http://127.0.0.1:{proxy.ports[name]}{path}", conns, seconds,
                              sizes[name])
                    a, na = cpu_seconds(pids), cpu_seconds(npids)
                    if not out.verified or not out.requests:
                        failed.add(name)
                        notes[name].append(f"round {r + 1}: {out.note or 'no request completed'}")
                        continue
                    if out.errors:
                        notes[name].append(f"round {r + 1}: {out.note or 'errors'}")
                    res[name]["requests"].append(out.requests)
                    res[name]["errors"].append(out.errors)
                    res[name]["rps"].append(out.rps)
                    res[name]["server_us"].append((a - b) * 1e6 / out.requests)
                    res[name]["nginx_us"].append((na - nb) * 1e6 / out.requests)
                    print(f"  {case} round {r + 1} {name}: {out.rps:.0f} req/s", flush=True)
            return {name: {"settings": ups[name][3], "notes": notes[name], "failed": name in failed,
                           **{k: statistics.median(v) if v else 0.0 for k, v in m.items()},
                           "rounds": m} for name, m in res.items()}
        finally:
            proxy.stop()
    finally:
        for p in procs.values():
            try:
                os.killpg(p.pid, 15)
            except ProcessLookupError:
                pass
        for p in procs.values():
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)


# upstream -> (the suite's server name, its kind: a second way of serving sluicegate is "ours" too)
SUITE_NAMES = {"sluicegate http unix": ("sluicegate", "ours"),
               "sluicegate uwsgi unix": ("sluicegate uwsgi_pass", "ours"),
               "uWSGI uwsgi unix": ("uwsgi", "peer"), "gunicorn gthread unix": ("gunicorn-gthread", "peer"),
               "granian tcp": ("granian", "peer")}
CASE_TITLES = {"hello": "hello world", "stream128": "2.5 MB in 128 B blocks"}


def suite_round(h, rnd: int, names: list[str]) -> dict[str, tuple[str, str]]:
    """One round of S11 inside the suite (`run.py --standing`): the upstreams whose server is in
    the run, wrk -c16 for `h.mode.wrk_s` after a warm-up, the order rotated by the round. Adds a
    Record per (case, upstream); returns {server name: (kind, what)} of the names it added."""
    from bench.harness import Record

    only = {u for u, (n, _) in SUITE_NAMES.items() if n.split(" ")[0] in names}
    for case in CASES:
        title = f"{CASE_TITLES[case]} through nginx, wrk -c16"
        try:
            res = run_case(case, 1, h.mode.wrk_s, 16, first=rnd - 1, only=only, warmup_s=h.mode.warmup_s)
        except (SystemExit, OSError, RuntimeError) as e:
            res = {u: {"failed": True, "notes": [f"the case did not run: {e}"], "settings": "",
                       "rounds": {}} for u in only}
        for upstream, m in res.items():
            name = SUITE_NAMES[upstream][0]
            rec = Record("S11", title, name, rnd, "req/s", "higher", settings=m["settings"],
                         note="; ".join(m["notes"]))
            r = m["rounds"]
            if m["failed"] or not r.get("rps"):
                rec.status, rec.note = "failed", rec.note or "no request completed"
            else:
                rec.value, rec.requests, rec.errors = r["rps"][0], r["requests"][0], r["errors"][0]
                rec.cpu_us_per_req, rec.verified = r["server_us"][0], True
                rec.extra = {"nginx_us_per_req": r["nginx_us"][0]}
            h.add(rec)
    return {"sluicegate uwsgi_pass": ("ours", "sluicegate over the uwsgi protocol (nginx uwsgi_pass)")}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--out", type=Path)


def main(args: argparse.Namespace) -> int | None:
    results = {}
    lines = [f"S11 behind nginx: wrk -t1 -c{args.conns} -d{args.seconds:g}s, {args.rounds} rounds "
             "interleaved, medians", "",
             "| case | upstream | req/s | server µs/req | nginx µs/req |", "|---|---|---:|---:|---:|"]
    for case in CASES:
        results[case] = run_case(case, args.rounds, args.seconds, args.conns)
        for name, m in results[case].items():
            if m["failed"]:
                lines.append(f"| {case} | {name} | failed: {'; '.join(m['notes'])} | | |")
                continue
            lines.append(f"| {case} | {name} | {m['rps']:,.0f} | {m['server_us']:.1f} | "
                         f"{m['nginx_us']:.1f} |")
    report = "\n".join(lines)
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "s11.json").write_text(json.dumps(results, indent=1))
        (args.out / "s11.md").write_text(report + "\n\ncommand: "
                                         f"python3 benchmarks/run.py s11 --rounds {args.rounds} "
                                         f"--seconds {args.seconds:g} --conns {args.conns}\n")
