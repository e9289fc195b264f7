"""Interleaved wrk rounds; per thread name: CPU us/req, voluntary and involuntary switches/req;
futex and sendmsg calls/req (perf stat on the syscall tracepoints, all threads)."""
import os, re, subprocess, sys, statistics, collections
def snap(pid):
    d = collections.defaultdict(lambda: [0, 0, 0])
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            s = open(f"/proc/{pid}/task/{t}/stat").read(); f = s[s.rindex(")")+2:].split()
            name = s[s.index("(")+1:s.rindex(")")]
            st = open(f"/proc/{pid}/task/{t}/status").read()
            v = int(re.search(r"\nvoluntary_ctxt_switches:\s+(\d+)", st).group(1))
            nv = int(re.search(r"nonvoluntary_ctxt_switches:\s+(\d+)", st).group(1))
            d[(name, t)] = [int(f[11]) + int(f[12]), v, nv]
        except (OSError, AttributeError): pass
    return d
targets = [a.split("=") for a in sys.argv[1].split(",")]
rounds, secs = int(sys.argv[2]), sys.argv[3]
agg = collections.defaultdict(list)
for r in range(rounds):
    order = targets[r % len(targets):] + targets[:r % len(targets)]
    for name, spec in order:
        port, pid, path = spec.split(":", 2)
        a = snap(int(pid))
        out = subprocess.run(["perf", "stat", "-x,", "-e", "syscalls:sys_enter_futex,syscalls:sys_enter_sendmsg", "-p", pid, "--",
                              "wrk", "-t1", "-c100", f"-d{secs}s", f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True)
        b = snap(int(pid))
        n = int(re.search(r"(\d+) requests in", out.stdout).group(1))
        calls = {m.group(2).split(":")[1]: int(m.group(1)) for m in re.finditer(r"^(\d+),,(syscalls:\S+?),", out.stderr, re.M)}
        line = [f"round {r} {name:7} {n/float(secs):7.0f} req/s"]
        byname = collections.defaultdict(lambda: [0, 0, 0])
        for k, v in b.items():
            o = a.get(k, [0, 0, 0])
            for i in range(3): byname[k[0]][i] += v[i] - o[i]
        for tn, (c, v, nv) in sorted(byname.items()):
            if c or v or nv:
                line.append(f"{tn}: cpu {c*1e4/n:.1f} us, vol {v/n:.2f}, invol {nv/n:.2f}")
                agg[(name, tn, "invol")].append(nv/n); agg[(name, tn, "cpu")].append(c*1e4/n); agg[(name, tn, "vol")].append(v/n)
        for k, v in calls.items():
            line.append(f"{k} {v/n:.2f}/req"); agg[(name, k, "")].append(v/n)
        print(" | ".join(line), flush=True)
for k, v in sorted(agg.items()):
    print("MEDIAN", " ".join(x for x in k if x), f"{statistics.median(v):.2f}")
