"""thr.py PID PORT N [PATH]: each thread's CPU (schedstat, µs) and voluntary/involuntary switches per fetch over N keep-alive curl fetches."""
import os, sys, subprocess, time
pid, port, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
path = sys.argv[4] if len(sys.argv) > 4 else "/8192"
tck = os.sysconf("SC_CLK_TCK")
def snap():
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            st = open(f"/proc/{pid}/task/{tid}/stat").read()
            name = st[st.index("(")+1:st.rindex(")")]
            f = st[st.rindex(")")+2:].split()
            cpu = int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0]) / 1e9
            s = dict(l.split(":\t") for l in open(f"/proc/{pid}/task/{tid}/status").read().splitlines() if ":\t" in l)
            out[tid] = (name, cpu, int(s["voluntary_ctxt_switches"]), int(s["nonvoluntary_ctxt_switches"]))
        except FileNotFoundError:
            pass
    return out
args = ["curl", "-s"]
for _ in range(n): args += ["-o", "/dev/null", f"http://127.0.0.1:{port}{path}"]
subprocess.run(args[:2] + args[2:8])
a = snap(); t0 = time.time(); subprocess.run(args); dt = time.time() - t0; b = snap()
tot = [0, 0, 0]
for tid in sorted(b):
    if tid not in a: continue
    d = [b[tid][i] - a[tid][i] for i in (1, 2, 3)]
    if d[1] + d[2] == 0 and d[0] == 0: continue
    tot = [x + y for x, y in zip(tot, d)]
    print(f"  {b[tid][0]:14s} cpu {d[0]*1e6/n:7.1f} µs  vol {d[1]/n:6.1f}  invol {d[2]/n:5.1f}  per fetch")
print(f"total: cpu {tot[0]*1e6/n:7.0f} µs/fetch  vol {tot[1]/n:.1f}  invol {tot[2]/n:.1f}  wall {dt*1e3/n:.2f} ms/fetch")
