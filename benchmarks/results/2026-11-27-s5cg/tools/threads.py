"""threads.py PID SECONDS: per thread-name (and top threads) voluntary/involuntary switches and CPU over SECONDS."""
import sys, time, collections
from pathlib import Path
pid, secs = int(sys.argv[1]), float(sys.argv[2])
def snap():
    out = {}
    for t in Path(f"/proc/{pid}/task").glob("*"):
        try:
            st = (t / "status").read_text()
            stat = (t / "stat").read_text()
        except OSError:
            continue
        name = st.split("\n", 1)[0].split(":", 1)[1].strip()
        v = int(st.split("voluntary_ctxt_switches:")[1].split()[0])
        iv = int(st.split("nonvoluntary_ctxt_switches:")[1].split()[0])
        f = stat.rsplit(")", 1)[1].split()
        cpu = int(f[11]) + int(f[12])
        out[t.name] = (name, v, iv, cpu)
    return out
a = snap(); time.sleep(secs); b = snap()
agg = collections.defaultdict(lambda: [0, 0, 0, 0])
per = []
for tid, (name, v, iv, cpu) in b.items():
    v0, iv0, c0 = a.get(tid, (name, 0, 0, 0))[1:]
    g = agg[name]; g[0] += 1; g[1] += v - v0; g[2] += iv - iv0; g[3] += cpu - c0
    per.append((v - v0, iv - iv0, cpu - c0, tid, name))
for name, g in sorted(agg.items(), key=lambda x: -x[1][1]):
    print(f"{name:16} threads {g[0]:5} vol {g[1]:8} invol {g[2]:7} cpu_ticks {g[3]}")
for p in sorted(per, reverse=True)[:8]:
    print("  top", p)
