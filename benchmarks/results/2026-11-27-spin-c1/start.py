"""Start servers for an interleaved run with `benchmarks/servers.py`'s own launchers (the suite's
settings: one process, 4 threads, no access log) and print one `NAME=PORT,PATH,PID` line each for
`run.py wrk-cpu` / `run.py ab-interleaved` (PID: every process of the server's session,
joined by `+`). Runs until interrupted (SIGINT or SIGTERM), then stops them.

    python3 benchmarks/results/2026-11-27-spin-c1/start.py APP NAME[:EXTRA ARGS] ...

APP is `s4_pong` or `s6_hello`. NAME is a server of servers.py (`sluicegate`, `sluicegate-base`,
`uwsgi`, `bjoern`, `granian`); extra arguments after a colon go to sluicegate's command line, e.g.
`sluicegate:--spin off`. A sluicegate name may carry a label: `sluicegate/off:--spin off`.
"""

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH))
import servers  # noqa: E402

PATHS = {"s4_pong": "/pong", "s6_hello": "/"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def session_pids(sid: int) -> list[int]:
    """The processes of session `sid` (a server and the workers it forked)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = d.joinpath("stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid:  # field 6 of stat: the session
                out.append(int(d.name))
    return sorted(out)


def up(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def main() -> None:
    app, specs = sys.argv[1], sys.argv[2:]
    target = servers.Target(app, PATHS[app], b"")
    procs = []
    for spec in specs:
        name, _, extra = spec.partition(":")
        label, _, _ = name.partition("/")
        server = servers.SERVERS[label]
        port = free_port()
        launch = server.launch(target, port)
        argv = list(launch.argv)
        if extra:
            argv[-1:-1] = extra.split()  # before the app argument
        p = subprocess.Popen(argv, cwd=launch.cwd, env=launch.env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append((name, port, p))
    deadline = time.monotonic() + 30
    for name, port, p in procs:
        while not up(port):
            if time.monotonic() > deadline or p.poll() is not None:
                raise SystemExit(f"{name} did not start")
            time.sleep(0.05)
    time.sleep(1)  # workers forked after the listener is up
    for name, port, p in procs:
        pids = "+".join(str(x) for x in session_pids(p.pid))
        print(f"{name}={port},{PATHS[app]},{pids}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        signal.pause()
    finally:
        for _, _, p in procs:
            p.terminate()
        for _, _, p in procs:
            p.wait(10)


if __name__ == "__main__":
    main()
