"""One client at a time, servers side by side: per round and server, start the server with
S4's pong app (or another of benchmarks/apps), warm it, then `wrk -t1 -c1 --latency` for a few
seconds and `ab -c1` (a new connection each), reading the server's CPU time (every process of
its session, all threads: /proc/PID/stat) around each load. Prints req/s, p50 and CPU µs per
request per server and round, servers interleaved within each round.

Usage (from the repository's root):
    python3 benchmarks/results/2026-11-27-one-client/c1_probe.py [--rounds 3] [--seconds 3]
        [--ab 3000] [--app s4_pong:app --path /pong] SERVER...
SERVER is NAME=KIND[:PYTHON[:PYTHONPATH]] with KIND `sg` (sluicegate, `-m sluicegate` with the
given python, default .venv/bin/python; PYTHONPATH first puts another build's package first) or
`uwsgi` (benchmarks' uWSGI, --http11-socket, one process, one thread, as the suite runs it).
Extra sluicegate options: NAME=sg::: --spin off (everything after the third colon, split).
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
APPS = ROOT / "benchmarks" / "apps"
UWSGI = Path(os.environ.get("UWSGI_BIN", "/work/main/benchmarks/.venv/bin/uwsgi"))
TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def session_cpu(sid: int) -> float:
    total = 0
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            raw = Path(f"/proc/{e}/stat").read_text()
        except OSError:
            continue
        f = raw[raw.rindex(")") + 2:].split()
        if int(f[3]) == sid:
            total += int(f[11]) + int(f[12])
    return total / TCK


def launch(kind: str, port: int, app: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(APPS)
    name, _, rest = kind.partition(":")
    if name == "sg":
        py, _, rest = rest.partition(":")
        extra_path, _, opts = rest.partition(":")
        if extra_path:
            env["PYTHONPATH"] = f"{extra_path}:{APPS}"
        argv = [py or str(ROOT / ".venv/bin/python"), "-m", "sluicegate", "--bind",
                f"127.0.0.1:{port}", *shlex.split(opts), app]
    elif name == "uwsgi":
        argv = [str(UWSGI), "--master", "--die-on-term", "--http11-socket", f"127.0.0.1:{port}",
                "--processes", "1", "--threads", "1", "--module", app, "--chdir", str(APPS),
                "--pythonpath", str(APPS), "--disable-logging", "--listen", "1024",
                "--socket-timeout", "30", "--buffer-size", "32768", "--need-app", "--tcp-nodelay"]
    else:
        raise SystemExit(f"unknown kind {kind}")
    return subprocess.Popen(argv, cwd=APPS, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_ready(port: int, path: str) -> None:
    for _ in range(600):
        r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                            f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True)
        if r.stdout == "200":
            return
        time.sleep(0.1)
    raise SystemExit("server not ready")


def to_us(text: str) -> float:
    m = re.match(r"([\d.]+)(us|ms|s)", text)
    v = float(m.group(1))
    return v * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]


def run_wrk(sid: int, url: str, seconds: float) -> tuple[float, float, float]:
    c0 = session_cpu(sid)
    out = subprocess.run(["wrk", "-t1", "-c1", f"-d{int(seconds)}s", "--latency", url],
                         capture_output=True, text=True).stdout
    c1 = session_cpu(sid)
    n = int(re.search(r"(\d+) requests in", out).group(1))
    p50 = to_us(re.search(r"50%\s+(\S+)", out).group(1))
    return n / seconds, p50, (c1 - c0) / n * 1e6


def run_ab(sid: int, url: str, n: int) -> tuple[float, float, float]:
    c0 = session_cpu(sid)
    out = subprocess.run(["ab", "-q", "-c1", "-n", str(n), url], capture_output=True, text=True).stdout
    c1 = session_cpu(sid)
    rate = float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1))
    done = int(re.search(r"Complete requests:\s+(\d+)", out).group(1))
    p50 = float(re.search(r"\n\s+50%\s+(\d+)", out).group(1)) * 1000
    return rate, p50, (c1 - c0) / done * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--ab", type=int, default=3000)
    ap.add_argument("--app", default="s4_pong:app")
    ap.add_argument("--path", default="/pong")
    ap.add_argument("servers", nargs="+")
    a = ap.parse_args()
    servers = [s.partition("=")[::2] for s in a.servers]
    rows = []
    for rnd in range(a.rounds):
        for name, kind in servers:
            port = free_port()
            p = launch(kind, port, a.app)
            try:
                wait_ready(port, a.path)
                url = f"http://127.0.0.1:{port}{a.path}"
                subprocess.run(["wrk", "-t1", "-c1", "-d1s", url], capture_output=True)
                w = run_wrk(p.pid, url, a.seconds)
                b = run_ab(p.pid, url, a.ab) if a.ab else (0, 0, 0)
            finally:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(10)
            rows.append((rnd, name, w, b))
            print(f"round {rnd} {name:12} wrk -c1 {w[0]:8.0f} req/s p50 {w[1]:6.1f} us cpu {w[2]:5.1f} us/req"
                  f" | ab -c1 {b[0]:8.0f} req/s p50 {b[1]:5.0f} us cpu {b[2]:5.1f} us/conn", flush=True)
    print("medians:")
    for name, _ in servers:
        mine = [r for r in rows if r[1] == name]
        med = lambda xs: sorted(xs)[len(xs) // 2]
        print(f"  {name:12} wrk -c1 {med([r[2][0] for r in mine]):8.0f} req/s p50 {med([r[2][1] for r in mine]):6.1f} us"
              f" cpu {med([r[2][2] for r in mine]):5.1f} us/req | ab -c1 {med([r[3][0] for r in mine]):8.0f} req/s"
              f" cpu {med([r[3][2] for r in mine]):5.1f} us/conn")


if __name__ == "__main__":
    sys.exit(main())
