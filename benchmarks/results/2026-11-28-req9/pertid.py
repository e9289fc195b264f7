"""pertid.py PID PORT SECONDS: one wrk -t1 -c100 run (URL_PATH, default S2's /read/file_21324.bin); CPU µs per request and switches per request
for every thread of PID (by TID, with its name), and the number of threads busy over 10% of it."""
import os, re, subprocess, sys
def snap(pid):
    d = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            s = open(f"/proc/{pid}/task/{t}/stat").read(); f = s[s.rindex(")") + 2:].split()
            st = open(f"/proc/{pid}/task/{t}/status").read()
            v = int(re.search(r"\nvoluntary_ctxt_switches:\s+(\d+)", st).group(1))
            nv = int(re.search(r"nonvoluntary_ctxt_switches:\s+(\d+)", st).group(1))
            d[t] = (s[s.index("(") + 1:s.rindex(")")], int(f[11]) + int(f[12]), v, nv)
        except (OSError, AttributeError):
            pass
    return d
pid, port, secs = sys.argv[1], sys.argv[2], sys.argv[3]
a = snap(pid)
out = subprocess.run(["wrk", "-t1", "-c100", f"-d{secs}s", f"http://127.0.0.1:{port}" + os.environ.get("URL_PATH", "/read/file_21324.bin")], capture_output=True, text=True).stdout
b = snap(pid)
n = int(re.search(r"(\d+) requests in", out).group(1))
print(f"{n / float(secs):.0f} req/s")
tot = 0
for t, (name, c, v, nv) in sorted(b.items(), key=lambda kv: -(kv[1][1] - a.get(kv[0], ("", 0, 0, 0))[1])):
    o = a.get(t, (name, 0, 0, 0))
    dc = (c - o[1]) * 1e4 / n; tot += dc
    if dc or v - o[2] or nv - o[3]:
        print(f"  {t:>7} {name:16} cpu {dc:6.1f} us/req  vol {(v - o[2]) / n:5.2f}  invol {(nv - o[3]) / n:5.2f}  cores {(c - o[1]) / 100 / float(secs):4.2f}")
print(f"  total cpu {tot:.1f} us/req")
