"""S4's pong under ab -c1 -nN, one server at a time: req/s, server CPU/request, context switches
and migrations per request (perf stat on the server's process), where threads ran. argv: N ROUNDS SERVER..."""
import re, subprocess, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from pong import start
from bench import procs
n, rounds = int(sys.argv[1]), int(sys.argv[2])
for rnd in range(rounds):
    for name in sys.argv[3:]:
        p, url = start(name)
        pids = p.pids()
        c0 = procs.cpu_seconds(pids)
        ps = subprocess.Popen(["perf", "stat", "-e", "context-switches,cpu-migrations", "-x,", "-o", f"/tmp/s4stat-{name}.txt", "-p", ",".join(map(str, pids))])
        time.sleep(0.3)
        out = subprocess.run(["perf", "stat", "-e", "context-switches,cpu-migrations", "-x,", "ab", "-q", "-c1", f"-n{n}", url], capture_output=True, text=True)
        ps.send_signal(2); ps.wait()
        c1 = procs.cpu_seconds(pids)
        rps = float(re.search(r"Requests per second:\s+([\d.]+)", out.stdout).group(1))
        st = {l.split(",")[2]: float(l.split(",")[0]) for l in Path(f"/tmp/s4stat-{name}.txt").read_text().splitlines() if l and l[0].isdigit()}
        ab = {l.split(",")[2]: float(l.split(",")[0]) for l in out.stderr.splitlines() if l and l[0].isdigit()}
        p.stop()
        print(f"r{rnd} {name:12s} {rps:8.0f} req/s  cpu {1e6*(c1-c0)/n:5.1f} us/req  server cs {st.get('context-switches',0)/n:.2f} migr {st.get('cpu-migrations',0)/n:.3f}  ab cs {ab.get('context-switches',0)/n:.2f} migr {ab.get('cpu-migrations',0)/n:.3f}", flush=True)
