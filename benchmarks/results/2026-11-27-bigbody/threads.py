import os, sys, subprocess, time
pid = int(sys.argv[1]); cmd = sys.argv[2:]
def snap():
    d = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            s = open(f"/proc/{pid}/task/{t}/stat").read()
            name = s[s.index("(")+1:s.rindex(")")]
            f = s[s.rindex(")")+2:].split()
            d[t] = (name, int(f[11]), int(f[12]))
        except OSError: pass
    return d
a = snap(); t0 = time.time()
out = subprocess.run(cmd, capture_output=True, text=True).stdout
b = snap(); dt = time.time() - t0
print(out.strip())
import re
n = int(re.search(r"(\d+) fetches|Requests: (\d+)", out).group(1) or 0) if re.search(r"(\d+) fetches", out) else None
tot = 0
for t, (name, u, s) in sorted(b.items()):
    ua, sa = a.get(t, (name, 0, 0))[1:]
    du, ds = (u-ua)*10, (s-sa)*10  # ms (CLK_TCK 100)
    tot += du + ds
    if du + ds: print(f"  {t} {name:14} user {du} ms sys {ds} ms")
print(f"total {tot} ms over {dt:.2f}s" + (f", {tot*1000/n:.1f} us/req" if n else ""))
