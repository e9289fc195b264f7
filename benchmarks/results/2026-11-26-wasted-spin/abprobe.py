"""S6's hello under `ab -cC -nN` (a new connection per request), one server at a time: req/s,
the server's CPU per request, and ab's own (perf stat: task-clock, context switches). Shows
whether ab is the ceiling: a load generator that never sleeps (context switches near 0) and
spends 1/rate of CPU per request runs as fast as it can. argv: C N ROUNDS SERVER..."""
import os, re, subprocess, sys, time
from pathlib import Path
BENCH = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(BENCH), str(BENCH / "apps")]; os.chdir(BENCH)
import payloads
import servers
from bench import procs

c, n, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for rnd in range(rounds):
    for name in sys.argv[4:]:
        launch = servers.SERVERS[name].launch(servers.Target("s6_hello", "/", payloads.HELLO), port := procs.free_port())
        p = procs.start(name, launch.argv, launch.cwd, launch.env, port, Path(f"/tmp/ab-{name}.log"))
        assert procs.wait_port(port, time.monotonic() + 30, p)
        url = f"http://127.0.0.1:{port}/"
        subprocess.run(["ab", "-q", f"-c{c}", "-n5000", url], capture_output=True)
        pids = p.pids()
        c0 = procs.cpu_seconds(pids)
        out = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock,context-switches", "ab", "-q", f"-c{c}", f"-n{n}", url],
                             capture_output=True, text=True)
        c1 = procs.cpu_seconds(pids)
        p.stop()
        assert f"Complete requests:      {n}" in out.stdout and "Failed requests:        0" in out.stdout, out.stdout
        rps = float(re.search(r"Requests per second:\s+([\d.]+)", out.stdout).group(1))
        st = {l.split(",")[2]: float(l.split(",")[0]) for l in out.stderr.splitlines() if l and l[0].isdigit()}
        busy = st["task-clock"] / 1e3 * rps / n  # ab's CPU over its wall time (task-clock is in ms)
        print(f"r{rnd} {name:16s} {rps:8.0f} req/s  server cpu {1e6 * (c1 - c0) / n:5.1f} us/req  "
              f"ab cpu {1e3 * st['task-clock'] / n:5.1f} us/req ({busy:.0%} busy), "
              f"context switches {st['context-switches'] / n:.2f}/req", flush=True)
