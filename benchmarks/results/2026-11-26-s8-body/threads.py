import os, sys, subprocess, time, shlex, signal, collections
n = int(sys.argv[1]); client = sys.argv[2]
def tree(pid):
    out = [pid]
    for t in os.listdir(f"/proc/{pid}/task"):
        for c in open(f"/proc/{pid}/task/{t}/children").read().split():
            out += tree(int(c))
    return out
def snap(pid):
    per = {}; total = 0
    for q in tree(pid):
        f = open(f"/proc/{q}/stat").read().rsplit(")", 1)[1].split()
        total += int(f[11]) + int(f[12])
        for t in os.listdir(f"/proc/{q}/task"):
            try:
                s = open(f"/proc/{q}/task/{t}/stat").read()
            except OSError: continue
            comm = s[s.index("(")+1:s.rindex(")")]
            g = s.rsplit(")", 1)[1].split()
            per[(q, int(t), comm)] = int(g[11]) + int(g[12])
    return total, per
port = 18970
for spec in sys.argv[3:]:
    name, cmd = spec.split("=", 1); port += 1
    p = subprocess.Popen(shlex.split(cmd.format(port=port)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(3)
    subprocess.run(["python3", client, str(port), "2"], capture_output=True)
    t0, p0 = snap(p.pid)
    subprocess.run(["python3", client, str(port), str(n)], capture_output=True)
    t1, p1 = snap(p.pid)
    by = collections.Counter()
    for k, v in p1.items():
        by[k[2]] += v - p0.get(k, 0)
    shown = sum(by.values())
    parts = ", ".join(f"{c} {v/n*10:.1f}" for c, v in by.most_common() if v)
    print(f"{name}: total {(t1-t0)/n*10:.1f} ms/upload; threads alive: {parts}; exited threads {(t1-t0-shown)/n*10:.1f}")
    os.killpg(p.pid, signal.SIGTERM)
