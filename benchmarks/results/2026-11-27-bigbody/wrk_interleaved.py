"""Interleaved wrk rounds: req/s, server CPU/request, context switches/request (all threads)."""
import os, re, subprocess, sys, statistics
def pids_of(pid):
    out = [pid]
    try:
        out += [int(c) for c in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    except OSError: pass
    return out
def snap(pids):
    cpu = cs = 0
    for p in pids:
        f = open(f"/proc/{p}/stat").read(); f = f[f.rindex(")")+2:].split()
        cpu += int(f[11]) + int(f[12])
        for t in os.listdir(f"/proc/{p}/task"):
            try:
                st = open(f"/proc/{p}/task/{t}/status").read()
                cs += sum(int(x) for x in re.findall(r"ctxt_switches:\s+(\d+)", st))
            except OSError: pass
    return cpu / 100.0, cs
targets = [a.split("=") for a in sys.argv[1].split(",")]  # name=port:pid:path
rounds, secs, conns = int(sys.argv[2]), sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "100"
res = {n: [] for n, _ in targets}
for r in range(rounds):
    order = targets[r % len(targets):] + targets[:r % len(targets)]
    for name, spec in order:
        port, pid, path = spec.split(":", 2); pids = pids_of(int(pid))
        c0, s0 = snap(pids)
        out = subprocess.run(["wrk", "-t1", f"-c{conns}", f"-d{secs}s", f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True).stdout
        c1, s1 = snap(pids)
        n = int(re.search(r"(\d+) requests in", out).group(1)); rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
        bad = re.search(r"Non-2xx", out)
        res[name].append((rps, (c1-c0)/n*1e6, (s1-s0)/n))
        print(f"round {r} {name:10} {rps:9.0f} req/s  cpu {(c1-c0)/n*1e6:6.1f} us/req  cs {(s1-s0)/n:5.2f}/req {'BAD' if bad else ''}", flush=True)
for name, v in res.items():
    print(f"MEDIAN {name:10} {statistics.median(x[0] for x in v):9.0f} req/s  cpu {statistics.median(x[1] for x in v):6.1f} us/req  cs {statistics.median(x[2] for x in v):5.2f}/req")
