"""perf sched record -a for 1 s during ab -c1 against one server; prints per-task CPU run counts."""
import os, re, subprocess, sys, time, collections
from pathlib import Path
BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH)); os.chdir(BENCH)
import servers
from bench import procs
name = sys.argv[1]
srv = servers.SERVERS[name]
t = servers.Target("s4_pong", "/pong", b"")
port = procs.free_port()
l = srv.launch(t, port)
p = procs.start(name, l.argv, l.cwd, l.env, port, Path(f"/tmp/s4-{name}.log"))
assert procs.wait_port(port, time.monotonic() + 30, p)
url = f"http://127.0.0.1:{port}/pong"
subprocess.run(["ab", "-q", "-c1", "-n2000", url], capture_output=True)
ab = subprocess.Popen(["ab", "-q", "-c1", "-n30000", url], stdout=subprocess.DEVNULL)
time.sleep(0.3)
subprocess.run(["perf", "sched", "record", "-a", "-o", f"/tmp/sched-{name}.data", "--", "sleep", "0.5"], capture_output=True)
ab.wait(); p.stop()
out = subprocess.run(["perf", "sched", "timehist", "-i", f"/tmp/sched-{name}.data"], capture_output=True, text=True).stdout
cnt = collections.Counter()
for line in out.splitlines()[3:]:
    f = line.split()
    if len(f) < 6: continue
    cpu, task = f[1], f[2]
    cnt[(re.sub(r"\[\d+(/\d+)?\]", "", task), cpu)] += 1
for (task, cpu), n in cnt.most_common(14):
    print(f"{task:30s} {cpu} {n}")
