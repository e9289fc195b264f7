"""Per thread of running servers, during load runs against each one's port, interleaved:
wake-ups (voluntary context switches) and CPU time per request, CPU from
/proc/PID/task/TID/schedstat (nanoseconds, not clock ticks). LOAD: a number of seconds of
`wrk -t1 -c64` (S16a: PORT is the server's nginx front), or `ab1:N`, N requests of `ab -c1`
(a new connection each: S4; PORT is the server's own).

    python3 threads_ns.py LOAD ROUNDS NAME=PID,PORT [NAME=PID,PORT ...]
"""
import glob
import re
import statistics
import subprocess
import sys


def snap(pid):
    d = {}
    for t in glob.glob(f"/proc/{pid}/task/*"):
        try:
            comm = open(t + "/comm").read().strip()
            st = open(t + "/status").read()
            v = int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", st, re.M).group(1))
            ns = int(open(t + "/schedstat").read().split()[0])
            d[t] = (comm, v, ns)
        except OSError:
            pass
    return d


secs, rounds = sys.argv[1], int(sys.argv[2])
targets = [(a.split("=")[0], *a.split("=")[1].split(",")) for a in sys.argv[3:]]
res = {}
for r in range(rounds):
    for name, pid, port in targets:
        a = snap(pid)
        if secs.startswith("ab1:"):
            out = subprocess.run(["ab", "-q", "-c1", "-n", secs[4:], f"http://127.0.0.1:{port}/"],
                                 capture_output=True, text=True).stdout
            b = snap(pid)
            n = int(secs[4:])
            rps = float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1))
        else:
            out = subprocess.run(["wrk", "-t1", "-c64", f"-d{secs}s", f"http://127.0.0.1:{port}/"],
                                 capture_output=True, text=True).stdout
            b = snap(pid)
            n = int(re.search(r"(\d+) requests in", out).group(1))
            rps = n / float(secs)
        row = res.setdefault(name, {"rps": [], "total": []})
        row["rps"].append(rps)
        tot = 0
        for t, (comm, v, ns) in b.items():
            if t not in a:
                continue
            dv, dns = v - a[t][1], ns - a[t][2]
            tot += dns
            if dv or dns:
                row.setdefault(comm + " wake", []).append(dv / n)
                row.setdefault(comm + " us", []).append(dns / 1000 / n)
        row["total"].append(tot / 1000 / n)
for name, row in res.items():
    print(f"{name}: req/s median {statistics.median(row['rps']):.0f} "
          f"(rounds {', '.join(f'{x:.0f}' for x in row['rps'])}); "
          f"all threads {statistics.median(row['total']):.2f} us/req")
    for k, xs in row.items():
        if k in ("rps", "total"):
            continue
        unit = "/req" if k.endswith("wake") else " us/req"
        print(f"  {k:22s} median {statistics.median(xs):.4f}{unit}  [{', '.join(f'{x:.3f}' for x in xs)}]")
