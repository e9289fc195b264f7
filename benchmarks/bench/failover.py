"""S11's failover and draining counts: two instances of a server behind one HAProxy (Debian's,
the test suite's harness `tests/haproxy_util.py`), `retries 3`, `retry-on all-retryable-errors`,
`option redispatch 1`, health checks every 100 ms with `fall 2 rise 2`; `wrk -c16` sends hello
world (S6's app) through HAProxy for 12 s, and 4 s in, one instance is

- killed with SIGKILL (`kill -9`), or
- stopped with SIGTERM (each server's graceful stop; sluicegate with `--health-path /healthz
  --drain-delay 1`, so HAProxy takes it out before its listener closes).

Counted: what the clients saw fail (non-2xx answers and socket errors, from wrk), and whether
HAProxy marked the stopped instance DOWN before its listener closed (sluicegate only has a
health path that fails first; the peers are checked on the app's route). Every server gets one
process and 4 threads. The response size is verified (a fetch before the run, wrk's byte
count during it).

    python3 benchmarks/run.py failover [--rounds 1] [--out results/DATE-s11]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
APPS = BENCH / "apps"
sys.path.insert(0, str(ROOT))
from bench.loadgen import wrk  # noqa: E402
from bench.harness import PEERS, SG, env_for, fetch_wire, wait_ready  # noqa: E402
from tests import haproxy_util  # noqa: E402

SECONDS = 12
DISTURB_AT = 4
BACKEND = "    retries 3\n    retry-on all-retryable-errors\n    option redispatch 1\n"


def command(server: str, port: int) -> tuple[list[str], str]:
    """argv and health-check path of one instance on `port`."""
    app = "s6_hello:app"
    if server == "sluicegate":
        return ([str(SG), "-m", "sluicegate", "--bind", f"127.0.0.1:{port}", "--threads", "1:4",
                 "--health-path", "/healthz", "--drain-delay", "1", app], "/healthz")
    if server == "gunicorn-gthread":
        return ([str(PEERS / "gunicorn"), "-w", "1", "-k", "gthread", "--threads", "4", "--bind",
                 f"127.0.0.1:{port}", "--keep-alive", "120", "--log-level", "warning", "--chdir",
                 str(APPS), app], "/")
    if server == "uwsgi":
        return ([str(PEERS / "uwsgi"), "--master", "--die-on-term", "--http11-socket",
                 f"127.0.0.1:{port}", "--processes", "1", "--threads", "4", "--module", app,
                 "--chdir", str(APPS), "--pythonpath", str(APPS), "--disable-logging",
                 "--need-app", "--tcp-nodelay"], "/")
    if server == "granian":
        return ([str(PEERS / "granian"), "--interface", "wsgi", "--host", "127.0.0.1", "--port",
                 str(port), "--workers", "1", "--blocking-threads", "4", "--http", "1", "--no-ws",
                 "--log-level", "warning", "--no-access-log", "--working-dir", str(APPS), app], "/")
    raise ValueError(server)


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return False
    except OSError:
        return True


def one_run(server: str, how: str) -> dict:
    ports = [haproxy_util.free_port(), haproxy_util.free_port()]
    procs = []
    for port in ports:
        argv, check = command(server, port)
        procs.append(subprocess.Popen(argv, cwd=APPS, env=env_for(argv[0]), start_new_session=True,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        for port in ports:
            wait_ready(f"127.0.0.1:{port}", time.monotonic() + 30)
        proxy = haproxy_util.HAProxy(ports[0], check, more_ports=(ports[1],),
                                     backend_options=BACKEND)
        try:
            deadline = time.monotonic() + 10
            while proxy.stats()["app2"]["status"] != "UP" and time.monotonic() < deadline:
                time.sleep(0.05)
            size, body = fetch_wire(proxy.port, "/")
            assert body == b"Hello, World!", body
            seen = {}

            def disturb() -> None:
                time.sleep(DISTURB_AT)
                victim = procs[1]
                os.killpg(victim.pid, signal.SIGKILL if how == "kill -9" else signal.SIGTERM)
                # Which comes first: HAProxy's DOWN or the listener's close?
                until = time.monotonic() + 15
                while time.monotonic() < until:
                    down = proxy.stats()["app2"]["status"].startswith("DOWN")
                    closed = refused(ports[1])
                    if down or closed:
                        seen["down_before_close"] = down and not closed
                        return
                    time.sleep(0.005)

            t = threading.Thread(target=disturb)
            t.start()
            out = wrk(f"http://127.0.0.1:{proxy.port}/", 16, SECONDS, size)
            t.join()
            return {"requests": out.requests, "failed": out.errors, "verified": out.verified,
                    "note": out.note, "down_before_close": seen.get("down_before_close")}
        finally:
            proxy.stop()
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(10)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--servers", default="sluicegate,gunicorn-gthread,uwsgi,granian")
    ap.add_argument("--out", type=Path)


def main(args: argparse.Namespace) -> int | None:
    results = {}
    lines = ["Failover behind HAProxy: 2 instances, wrk -c16 -d12s, one instance stopped at 4 s",
             "", "| server | stop | requests | failed at the client | HAProxy DOWN before the "
             "listener closed |", "|---|---|---:|---:|---|"]
    for how in ("kill -9", "SIGTERM"):
        for server in args.servers.split(","):
            r = results.setdefault(server, {})[how] = one_run(server, how)
            dbc = {True: "yes", False: "no", None: "n/a"}[r["down_before_close"]]
            if how == "kill -9":
                dbc = "n/a (killed)"
            lines.append(f"| {server} | {how} | {r['requests']:,} | {r['failed']:,} | {dbc} |")
            print(lines[-1], flush=True)
    report = "\n".join(lines)
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "failover.json").write_text(json.dumps(results, indent=1))
        (args.out / "failover.md").write_text(
            report + "\n\ncommand: python3 benchmarks/run.py failover\n")
