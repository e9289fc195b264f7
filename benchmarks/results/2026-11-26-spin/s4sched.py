"""`perf sched record -a` for 0.5 s during `ab -c1` against one server (argv: NAME); per task, from
`perf sched timehist`: switches, on which CPUs, and the mean wait, scheduling delay (woken to
running) and run time."""
import re, subprocess, sys, time, collections
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from pong import start
name = sys.argv[1]
p, url = start(name)
ab = subprocess.Popen(["ab", "-q", "-c1", "-n30000", url], stdout=subprocess.DEVNULL)
time.sleep(0.3)
subprocess.run(["perf", "sched", "record", "-a", "-o", f"/tmp/sched-{name}.data", "--", "sleep", "0.5"], capture_output=True)
ab.wait(); p.stop()
out = subprocess.run(["perf", "sched", "timehist", "-i", f"/tmp/sched-{name}.data"], capture_output=True, text=True).stdout
runs = collections.defaultdict(list)  # task -> (cpu, wait, sch delay, run time) per switch-out, ms
for line in out.splitlines()[3:]:
    f = line.split()
    if len(f) < 6 or not f[3].replace(".", "").isdigit():
        continue
    runs[re.sub(r"\[\d+(/\d+)?\]", "", f[2])].append((f[1], float(f[3]), float(f[4]), float(f[5])))
for task, r in sorted(runs.items(), key=lambda kv: -len(kv[1]))[:6]:
    cpus = collections.Counter(x[0] for x in r)
    print(f"{task:20s} switches {len(r):6d}  on {dict(cpus)}  mean wait {1000 * sum(x[1] for x in r) / len(r):6.1f} us"
          f"  sch delay {1000 * sum(x[2] for x in r) / len(r):5.1f} us  run {1000 * sum(x[3] for x in r) / len(r):5.1f} us")
