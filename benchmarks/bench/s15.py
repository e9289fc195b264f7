"""S15: HTTP/2 (BENCHMARKS.md, "The scenarios").

- S15a, multiplexing: one connection, 100 concurrent streams of S5's sleeping app
  (`h2load -c1 -m100`); the ideal is 1,000 req/s (100 streams / 0.1 s).
- S15b, hello world over h2c, `h2load -c16 -m10`; beside it sluicegate's own HTTP/1.1 with
  `wrk -t1 -c64` (S6), so the ratio of the two comes from one run.

Each server is started fresh per case (sluicegate from this work tree's `.venv`, or
`--python`; granian if `--granian` names its binary: `--http 2` for h2c; gunicorn if
`--gunicorn-python` names a Python with gunicorn ≥ 26.2 and the `h2` library, as this work
tree's `.venv` has them: gthread worker, `--http-protocols h2,h1 --http2-cleartext
prior-knowledge`; its S15a runs a fifteenth of the requests, since its gthread worker runs
the streams of one connection one after another, ~10 req/s), rounds are
interleaved, and each row records requests/s and the server's CPU per request (user + system
of every process in its session, from /proc, over the measured run). The bytes are checked:
a fetch over h2c (curl `--http2-prior-knowledge`) must return the exact body before and after
each measured run, and h2load's DATA byte count must be whole bodies for the answers it
counted, every status 2xx (`check_h2load`). h2load comes from Debian's `nghttp2-client`. The
exact commands are printed with the results.

    python3 benchmarks/run.py s15 [--granian PATH] [--gunicorn-python PY] [--rounds 3] [--seconds 5]
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
    peers_granian = BENCH / ".venv" / "bin" / "granian"
    ap.add_argument("--granian", default=str(peers_granian) if peers_granian.exists() else shutil.which("granian") or "",
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


def check_h2load(out: str, body: bytes) -> str:
    """Why h2load's run is not a verified one ("" if it is): every request succeeded with a
    2xx, and the DATA bytes received are exactly the successes × the body's length."""
    req = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                    r"(\d+) errored, (\d+) timeout", out)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    data = re.search(r"\((\d+)\) data", out)
    if not (req and codes and data):
        return "h2load's summary is missing: " + out.strip()[-200:]
    ok, failed, n2xx, data_bytes = int(req.group(3)), int(req.group(4)), int(codes.group(1)), int(data.group(1))
    if failed or n2xx < ok or any(int(codes.group(i)) for i in (2, 3, 4)):
        return f"{failed} failed, {codes.group(0)}"
    # A timed run (-D) counts as done only the answers completed before its end, but the bytes
    # and status codes of those that arrive during the stop as well: between the two, whole bodies.
    if data_bytes % len(body) or not ok * len(body) <= data_bytes <= n2xx * len(body):
        return f"{data_bytes} DATA bytes for {ok}-{n2xx} answers of {len(body)} bytes"
    return ""


def fetch_check(url: str, body: bytes, h2: bool = True) -> str:
    """One fetch with curl (h2c with prior knowledge): "" if the body is exactly `body`."""
    flags = ["--http2-prior-knowledge"] if h2 else []
    r = subprocess.run(["curl", "-s", "--max-time", "20", *flags, url], capture_output=True, timeout=60)
    if r.returncode != 0:
        return f"fetch: curl exit {r.returncode}"
    return "" if r.stdout == body else f"fetch: body of {len(r.stdout)} bytes, expected {len(body)}"


# case -> (app, its exact body)
CASE_APPS = {"S15a": ("s5_sleepy:app", b"HelloWorld"), "S15b": ("s6_hello:app", b"Hello, World!"),
        "S6": ("s6_hello:app", b"Hello, World!")}


def command(case: str, url: str, requests: int, seconds: float) -> list[str]:
    if case == "S15a":
        return ["h2load", "-c1", "-m100", "-n", str(requests), url]
    if case == "S15b":
        return ["h2load", "-c16", "-m10", "-D", f"{round(seconds * 1000)}ms", url]
    return ["wrk", "-t1", "-c64", f"-d{seconds:g}s", url]


def measure(server: str, argv: list[str], case: str, cmd: list[str], port: int) -> dict:
    """Start `argv`, warm up, verify, run `cmd`, verify again, stop: the run's figures."""
    body = CASE_APPS[case][1]
    url = f"http://127.0.0.1:{port}/"
    srv = _start(server, argv, port)
    try:
        # Warm-up: the first requests start threads and fill caches.
        subprocess.run(["h2load", "-c1", "-m10", "-n", "200", url], capture_output=True, timeout=60)
        why = fetch_check(url, body, h2=case != "S6")
        if why:
            return {"rate": 0.0, "cpu_us": 0.0, "done": 0, "why": f"before the run: {why}"}
        rate, cpu_us, done, out = _measure(srv, cmd)
        why = check_h2load(out, body) if case != "S6" else ("" if done else "wrk did not run")
        why = why or fetch_check(url, body, h2=case != "S6")
    finally:
        srv.stop()
    return {"rate": rate, "cpu_us": cpu_us, "done": done, "why": why}


def _measure(srv: procs.ServerProcess, cmd: list[str]) -> tuple[float, float, int, str]:
    before = srv.sample().cpu_s
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    cpu = srv.sample().cpu_s - before
    done = _done(out)
    return _rate(out), (cpu / done * 1e6 if done else 0.0), done, out


def argv_of(server: str, app: str, port: int, py: str, granian: str, gunicorn_py: str) -> list[str]:
    return {"sluicegate": lambda: _sluicegate(py, app, port),
            "sluicegate-base": lambda: _sluicegate(py, app, port),
            "granian": lambda: _granian(granian, app, port),
            "gunicorn": lambda: _gunicorn(gunicorn_py, app, port)}[server]()


SETTINGS = {"sluicegate": "defaults (h2c on the HTTP/1.1 port)",
            "granian": "--http 2 --blocking-threads 128",
            "gunicorn": "-k gthread --threads 100 --http-protocols h2,h1 --http2-cleartext prior-knowledge"}
SUITE_NAMES = {"sluicegate": "sluicegate", "granian": "granian", "gunicorn": "gunicorn-gthread"}
CASE_TITLES = {"S15a": "S15a: 100 streams of S5's app on one connection, h2load -c1 -m100",
               "S15b": "S15b: hello world over h2c, h2load -c16 -m10"}


def suite_round(h, rnd: int, names: list[str]) -> dict[str, tuple[str, str]]:
    """One round of S15 inside the suite (`run.py --standing`): sluicegate, granian (the peers'
    venv) and gunicorn (a Python with `h2`) where the run has them, S15a with
    `h.mode.s15a_requests` (gunicorn a fifteenth) and S15b for `h.mode.wrk_s`, every server
    started fresh, the order rotated by the round. Adds a Record per (case, server)."""
    from bench.harness import PEERS, Record

    gunicorn_py = _gunicorn_python() if "gunicorn-gthread" in names else ""
    have = [s for s in ("sluicegate", "granian", "gunicorn") if SUITE_NAMES[s] in names]
    have = [s for s in have if s != "gunicorn" or gunicorn_py]
    k = (rnd - 1) % len(have) if have else 0
    for case in ("S15a", "S15b"):
        for server in have[k:] + have[:k]:
            port = procs.free_port()
            url = f"http://127.0.0.1:{port}/"
            n = h.mode.s15a_requests // (15 if server == "gunicorn" else 1)
            cmd = command(case, url, n, h.mode.wrk_s)
            argv = argv_of(server, CASE_APPS[case][0], port, str(SLUICEGATE_PY), str(PEERS / "granian"), gunicorn_py)
            rec = Record("S15", CASE_TITLES[case], SUITE_NAMES[server], rnd, "req/s", "higher",
                         settings=SETTINGS[server] + (f"; {n:,} requests" if case == "S15a" else ""))
            try:
                m = measure(server, argv, case, cmd, port)
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                m = {"why": f"{type(e).__name__}: {e}"[:300], "done": 0}
            if m["why"] or not m["done"]:
                rec.status, rec.note = "failed", m["why"] or "no request completed"
            else:
                rec.value, rec.cpu_us_per_req, rec.requests = m["rate"], m["cpu_us"], m["done"]
                rec.verified = True
            if case == "S15a":
                rec.extra["ideal_rps"] = 1000
            h.add(rec)
    return {}


def main(args: argparse.Namespace) -> int:
    if not shutil.which("h2load"):
        print("h2load is missing: apt-get install nghttp2-client")
        return 1
    port = procs.free_port()
    url = f"http://127.0.0.1:{port}/"
    servers = ["sluicegate"] + (["sluicegate-base"] if args.base_python else []) + \
        (["granian"] if args.granian else []) + \
        (["gunicorn"] if args.gunicorn_python else [])
    cases = []
    for server in servers:
        for case in ("S15a", "S15b") + (("S6",) if server.startswith("sluicegate") else ()):
            n = args.gunicorn_s15a_requests if server == "gunicorn" else args.s15a_requests
            label = f"{case} {server} {'HTTP/1.1' if case == 'S6' else 'h2c'}"
            cases.append((label, server, case, command(case, url, n, args.seconds)))
    rows: dict[str, list[tuple[float, float]]] = {c[0]: [] for c in cases}
    for r in range(args.rounds):
        for label, server, case, cmd in cases:
            py = args.base_python if server == "sluicegate-base" else args.python
            argv = argv_of(server, CASE_APPS[case][0], port, py, args.granian, args.gunicorn_python)
            m = measure(server, argv, case, cmd, port)
            if m["why"]:
                print(f"round {r + 1}: {label}: FAILED: {m['why']}", flush=True)
                continue
            rows[label].append((m["rate"], m["cpu_us"]))
            print(f"round {r + 1}: {label}: {m['rate']:,.0f} req/s, {m['cpu_us']:.1f} us CPU/req "
                  f"({m['done']} requests, bytes verified)", flush=True)
    print("\nS15, medians of", args.rounds, "rounds")
    for label, _, _, cmd in cases:
        vals = sorted(rows[label])
        if not vals:
            print(f"  {label:<26} failed in every round   $ {' '.join(cmd)}")
            continue
        mid = vals[len(vals) // 2]
        lo, hi = vals[0][0], vals[-1][0]
        print(f"  {label:<26} {mid[0]:>9,.0f} req/s ({lo:,.0f}-{hi:,.0f})  "
              f"{mid[1]:6.1f} us CPU/req   $ {' '.join(cmd)}")
    return 0
