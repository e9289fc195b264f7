"""S15: HTTP/2 (BENCHMARKS.md, "The scenarios").

- S15a, multiplexing: one connection, 100 concurrent streams of S5's sleeping app
  (`h2load -c1 -m100`); the ideal is 1,000 req/s (100 streams / 0.1 s).
- S15b, hello world over h2c, `h2load -c16 -m10`; beside it sluicegate's own HTTP/1.1 with
  `wrk -t1 -c64` (S6), so the ratio of the two comes from one run.

Each server is started fresh per case (sluicegate from this work tree's `.venv`, or
`--python`; granian if `--granian` names its binary: `--http 2` for h2c; gunicorn if
`--gunicorn-python` names a Python with gunicorn ≥ 26.2 and the `h2` library, as this work
tree's `.venv` has them: gthread worker, `--http-protocols h2,h1 --http2-cleartext
prior-knowledge`; its S15a runs `--gunicorn-s15a-requests`, fewer, since its gthread worker runs
the streams of one connection one after another, ~10 req/s), rounds are
interleaved, and each row records requests/s and the server's CPU per request (user + system
of every process in its session, from /proc, over the measured run). h2load comes from Debian's
`nghttp2-client`. The exact commands are printed with the results.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from bench import procs

BENCH = Path(__file__).resolve().parent.parent
APPS = BENCH / "apps"
SLUICEGATE_PY = BENCH.parent / ".venv" / "bin" / "python"


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--python", default=str(SLUICEGATE_PY), help="sluicegate's Python")
    ap.add_argument("--granian", default=shutil.which("granian") or "",
                    help="granian's binary (empty: not measured)")
    ap.add_argument("--gunicorn-python", default=_gunicorn_python(),
                    help="a Python with gunicorn and h2 (empty: gunicorn not measured)")
    ap.add_argument("--gunicorn-s15a-requests", type=int, default=200,
                    help="requests of each gunicorn S15a run (its streams run one by one)")
    ap.add_argument("--base-python", default="",
                    help="another build's Python, measured as sluicegate-base in the same rounds "
                         "(empty: not measured)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5, help="length of each S15b and S6 run")
    ap.add_argument("--s15a-requests", type=int, default=3000, help="requests of each S15a run")


def _gunicorn_python() -> str:
    """This work tree's `.venv` Python if it has gunicorn with HTTP/2 (the `h2` library):
    benchmarks/.venv's gunicorn has no `h2`, and without it gunicorn refuses `h2`."""
    py = str(SLUICEGATE_PY)
    probe = "import gunicorn.http2 as g, sys; sys.exit(0 if g.is_http2_available() else 1)"
    try:
        ok = subprocess.run([py, "-c", probe], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return py if ok else ""


def _start(name: str, argv: list[str], port: int) -> procs.ServerProcess:
    env = dict(os.environ, PYTHONPATH=str(APPS))
    log = BENCH / ".work" / "s15" / f"{name}.log"
    srv = procs.start(name, argv, APPS, env, port, log)
    if not procs.wait_port(port, time.monotonic() + 20, srv):
        srv.stop()
        raise RuntimeError(f"{name} did not start: {srv.log_tail()}")
    return srv


def _sluicegate(py: str, app: str, port: int) -> list[str]:
    return [py, "-m", "sluicegate", "--bind", f"127.0.0.1:{port}", app]


def _granian(binary: str, app: str, port: int) -> list[str]:
    return [binary, "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port),
            "--http", "2", "--no-ws", "--blocking-threads", "128", "--log-level", "warning",
            "--no-access-log", "--working-dir", str(APPS), app]


def _gunicorn(py: str, app: str, port: int) -> list[str]:
    # One worker (like granian's one and sluicegate's one process), threads for S5's sleeps.
    return [py, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1",
            "--worker-class", "gthread", "--threads", "100", "--http-protocols", "h2,h1",
            "--http2-cleartext", "prior-knowledge", "--log-level", "warning", app]


def _rate(out: str) -> float:
    m = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out) or \
        re.search(r"Requests/sec:\s+([\d.]+)", out)
    return float(m.group(1)) if m else 0.0


def _done(out: str) -> int:
    m = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", out)
    if m:
        return int(m.group(2))
    m = re.search(r"(\d+) requests in", out)
    return int(m.group(1)) if m else 0


def _measure(srv: procs.ServerProcess, cmd: list[str]) -> tuple[float, float, int, str]:
    before = srv.sample().cpu_s
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    cpu = srv.sample().cpu_s - before
    done = _done(out)
    return _rate(out), (cpu / done * 1e6 if done else 0.0), done, out


def main(args: argparse.Namespace) -> int:
    if not shutil.which("h2load"):
        print("h2load is missing: apt-get install nghttp2-client")
        return 1
    port = procs.free_port()
    url = f"http://127.0.0.1:{port}/"
    cases = [
        ("S15a sluicegate h2c", "sluicegate", "s5_sleepy:app",
         ["h2load", "-c1", "-m100", "-n", str(args.s15a_requests), url]),
        ("S15b sluicegate h2c", "sluicegate", "s6_hello:app",
         ["h2load", "-c16", "-m10", "-D", str(args.seconds), url]),
        ("S6 sluicegate HTTP/1.1", "sluicegate", "s6_hello:app",
         ["wrk", "-t1", "-c64", f"-d{args.seconds}s", url]),
    ]
    if args.base_python:
        cases += [(label.replace("sluicegate", "sluicegate-base"), "sluicegate-base", app, cmd)
                  for label, _, app, cmd in list(cases)]
    if args.granian:
        cases += [
            ("S15a granian h2c", "granian", "s5_sleepy:app",
             ["h2load", "-c1", "-m100", "-n", str(args.s15a_requests), url]),
            ("S15b granian h2c", "granian", "s6_hello:app",
             ["h2load", "-c16", "-m10", "-D", str(args.seconds), url]),
        ]
    if args.gunicorn_python:
        cases += [
            ("S15a gunicorn h2c", "gunicorn", "s5_sleepy:app",
             ["h2load", "-c1", "-m100", "-n", str(args.gunicorn_s15a_requests), url]),
            ("S15b gunicorn h2c", "gunicorn", "s6_hello:app",
             ["h2load", "-c16", "-m10", "-D", str(args.seconds), url]),
        ]
    rows: dict[str, list[tuple[float, float]]] = {c[0]: [] for c in cases}
    for r in range(args.rounds):
        for label, server, app, cmd in cases:
            argv = {"sluicegate": lambda: _sluicegate(args.python, app, port),
                    "sluicegate-base": lambda: _sluicegate(args.base_python, app, port),
                    "granian": lambda: _granian(args.granian, app, port),
                    "gunicorn": lambda: _gunicorn(args.gunicorn_python, app, port)}[server]()
            srv = _start(server, argv, port)
            try:
                # Warm-up: the first requests start threads and fill caches.
                subprocess.run(["h2load", "-c1", "-m10", "-n", "200", url],
                               capture_output=True, timeout=60)
                rate, cpu_us, done, out = _measure(srv, cmd)
            finally:
                srv.stop()
            rows[label].append((rate, cpu_us))
            print(f"round {r + 1}: {label}: {rate:,.0f} req/s, {cpu_us:.1f} us CPU/req "
                  f"({done} requests)", flush=True)
    print("\nS15, medians of", args.rounds, "rounds")
    for label, _, _, cmd in cases:
        vals = sorted(rows[label])
        mid = vals[len(vals) // 2]
        lo, hi = vals[0][0], vals[-1][0]
        print(f"  {label:<26} {mid[0]:>9,.0f} req/s ({lo:,.0f}-{hi:,.0f})  "
              f"{mid[1]:6.1f} us CPU/req   $ {' '.join(cmd)}")
    return 0
