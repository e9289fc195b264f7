"""Per thread of a running server, during one `wrk -t1 -c64` run against PORT: voluntary and
involuntary context switches and CPU time per request (from /proc/PID/task/*).

    python3 threads_per_request.py SERVER_PID PORT SECONDS
"""
import sys, subprocess, glob, re, time
pid, port, secs = sys.argv[1], sys.argv[2], sys.argv[3]
def snap():
    d = {}
    for t in glob.glob(f"/proc/{pid}/task/*"):
        try:
            comm = open(t + "/comm").read().strip(); st = open(t + "/status").read()
            v = int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", st, re.M).group(1))
            nv = int(re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", st, re.M).group(1))
            f = open(t + "/stat").read().rsplit(")", 1)[1].split()
            d[t] = (comm, v, nv, int(f[11]) + int(f[12]))
        except OSError: pass
    return d
a = snap()
out = subprocess.run(["wrk", "-t1", "-c64", f"-d{secs}s", f"http://127.0.0.1:{port}/"], capture_output=True, text=True).stdout
b = snap()
m = re.search(r"(\d+) requests in", out); n = int(m.group(1))
print(f"requests {n}  req/s {n/float(secs):.0f}")
for t in b:
    if t in a:
        c, v, nv, cpu = b[t]; print(f"  {c:12s} vol {(v-a[t][1])/n:.3f}/req  invol {(nv-a[t][2])/n:.3f}/req  cpu {(cpu-a[t][3])*10000/n:.1f} us/req")
