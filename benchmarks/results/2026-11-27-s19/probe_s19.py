"""S19 probes (text copy of the helper used for this folder): `mem` (RSS/PSS per process, -v: by mapping), `cpu`, `perf` (syscalls per request from perf tracepoints, user/sys µs and minor faults per request from /proc), `strace` (strace -c -f), `hold` (start both behind nginx, print pids and ports, wait HOLD seconds). XENV="K=V ..." adds variables to the servers environment. Usage: WT=WORKTREE python3 probe_s19.py MODE [sluicegate,uwsgi]"""
import os, sys, time, subprocess, tempfile, json, shutil, signal
os.makedirs("/tmp/s19", exist_ok=True)  # where strace/perf outputs go
from pathlib import Path
WT = Path(os.environ.get("WT", "/work/wt/s19"))
BENCH = WT / "benchmarks"
sys.path.insert(0, str(BENCH / "apps")); sys.path.insert(0, str(BENCH))
import payloads, servers
URLPATH = os.environ.get("URLPATH", "/")  # e.g. /static/<S2 file> for the static case
from bench import procs, s19
from bench.harness import fetch_wire
from bench.loadgen import wrk

if os.environ.get("XENV"):
    _orig = s19.env_for
    def _env_for(argv0):
        e = _orig(argv0)
        for kv in os.environ["XENV"].split():
            k, v = kv.split("=", 1); e[k] = v
        return e
    s19.env_for = _env_for

def tree(name, started):
    return started[name].pids()

def smaps(pid):
    out = {}
    for line in open(f"/proc/{pid}/smaps_rollup"):
        p = line.split()
        if len(p) >= 3 and p[2] == "kB":
            out[p[0].rstrip(":")] = int(p[1])
    return out

def top_maps(pid, n=12):
    res, cur = [], None
    for line in open(f"/proc/{pid}/smaps"):
        p = line.split()
        if "-" in p[0] and not p[0].endswith(":"):
            cur = {"name": (p[5] if len(p) > 5 else "[anon]"), "range": p[0], "perm": p[1]}
            res.append(cur)
        elif p[0] in ("Rss:", "Pss:", "Private_Dirty:"):
            cur[p[0][:-1]] = int(p[1])
    agg = {}
    for m in res:
        a = agg.setdefault((os.path.basename(m["name"]), m["perm"]), [0, 0, 0, 0])
        a[0] += m.get("Rss", 0); a[1] += m.get("Pss", 0); a[2] += m.get("Private_Dirty", 0); a[3] += 1
    return sorted(agg.items(), key=lambda kv: -kv[1][0])[:n]

def nthreads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))

def main():
    mode = sys.argv[1]
    names = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else s19.SERVERS
    procs.raise_fd_limit(); payloads.ensure()
    nproc = 2 if mode == "mem" else 1
    d = tempfile.mkdtemp(prefix="sg-s19x-"); os.chmod(d, 0o755)
    started, nginx, ports = s19.start(names, "s6_hello", nproc, d)
    try:
        for name, port in ports.items():
            wrk(f"http://127.0.0.1:{port}/", 8, 1, None)
        if mode == "mem":
            for name, port in ports.items():
                for _ in range(20):
                    fetch_wire(port, "/")
                pids = tree(name, started)
                tot = {"Rss": 0, "Pss": 0}
                print(f"== {name}")
                for pid in pids:
                    s = smaps(pid)
                    tot["Rss"] += s["Rss"]; tot["Pss"] += s["Pss"]
                    comm = open(f"/proc/{pid}/cmdline").read().replace("\0", " ")[:60]
                    print(f"  pid {pid} thr {nthreads(pid)} Rss {s['Rss']} Pss {s['Pss']} Anon {s.get('Anonymous')} "
                          f"Shared_Clean {s.get('Shared_Clean')} Shared_Dirty {s.get('Shared_Dirty')} Private_Clean {s.get('Private_Clean')} Private_Dirty {s.get('Private_Dirty')}  {comm}")
                    if "-v" in sys.argv:
                        for k, v in top_maps(pid):
                            print(f"      {k[0][:40]:40s} {k[1]} rss {v[0]} pss {v[1]} privdirty {v[2]} n {v[3]}")
                print(f"  TOTAL Rss {tot['Rss']/1024:.1f} MiB Pss {tot['Pss']/1024:.1f} MiB")
            if "-wait" in sys.argv:
                print(json.dumps({n: tree(n, started) for n in names}), flush=True)
                time.sleep(int(os.environ.get("HOLD", "60")))
        elif mode == "cpu":
            secs = int(os.environ.get("SECS", "3"))
            for r in range(int(os.environ.get("ROUNDS", "2"))):
                for name in (names if r % 2 == 0 else names[::-1]):
                    pids = tree(name, started)
                    b, nb = procs.cpu_seconds(pids), procs.cpu_seconds(nginx.pids())
                    out = wrk(f"http://127.0.0.1:{ports[name]}{URLPATH}", 64, secs, None)
                    a, na = procs.cpu_seconds(pids), procs.cpu_seconds(nginx.pids())
                    print(f"{name}: {out.rps:,.0f} req/s  server {(a-b)*1e6/out.requests:.1f} us/req  nginx {(na-nb)*1e6/out.requests:.1f}", flush=True)
        elif mode == "strace":
            for name in names:
                pids = tree(name, started)
                outf = f"/tmp/s19/strace-{name}.txt"
                st = subprocess.Popen(["strace", "-c", "-f", "-o", outf] + sum((["-p", str(p)] for p in pids), []))
                time.sleep(1)
                out = wrk(f"http://127.0.0.1:{ports[name]}{URLPATH}", 64, 3, None)
                time.sleep(0.3)
                st.send_signal(signal.SIGINT); st.wait()
                print(f"== {name}: {out.requests} requests"); 
                txt = open(outf).read()
                for line in txt.splitlines():
                    p = line.split()
                    if len(p) >= 5 and p[0][0].isdigit():
                        calls = int(p[3]); sc = p[-1]
                        print(f"   {sc:20s} {calls:8d} {calls/out.requests:6.2f}/req")
        elif mode == "perf":
            secs = int(os.environ.get("SECS", "3"))
            for r in range(int(os.environ.get("ROUNDS", "1"))):
                for name in (names if r % 2 == 0 else names[::-1]):
                    pids = tree(name, started)
                    def ut(ps):
                        u = s_ = 0
                        for p in ps:
                            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
                            u += int(f[11]); s_ += int(f[12]); mf.append(int(f[7]))
                        return u / 100, s_ / 100
                    pf = subprocess.Popen(["perf", "stat", "-x", ",", "-o", f"/tmp/s19/perf-{name}.txt", "-e",
                        "syscalls:sys_enter_epoll_wait,syscalls:sys_enter_sendfile64,syscalls:sys_enter_openat,syscalls:sys_enter_newfstat,syscalls:sys_enter_newfstatat,syscalls:sys_enter_statx,syscalls:sys_enter_shutdown,syscalls:sys_enter_setsockopt,syscalls:sys_enter_accept4,syscalls:sys_enter_recvfrom,syscalls:sys_enter_read,syscalls:sys_enter_sendmsg,syscalls:sys_enter_writev,syscalls:sys_enter_write,syscalls:sys_enter_close,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_sched_yield,raw_syscalls:sys_enter,context-switches",
                        "-p", ",".join(map(str, pids))])
                    time.sleep(0.5)
                    mf = []
                    (u0, s0) = ut(pids); m0 = sum(mf); mf.clear()
                    out = wrk(f"http://127.0.0.1:{ports[name]}{URLPATH}", 64, secs, None)
                    (u1, s1) = ut(pids); m1 = sum(mf)
                    print(f"   minflt/req {(m1-m0)/out.requests:.2f}")
                    pf.send_signal(signal.SIGINT); pf.wait()
                    if pf.returncode not in (0, -2, 130): raise SystemExit("perf failed")
                    n = out.requests
                    print(f"{name}: {out.rps:,.0f} req/s user {(u1-u0)*1e6/n:.1f} sys {(s1-s0)*1e6/n:.1f} us/req", flush=True)
                    for line in open(f"/tmp/s19/perf-{name}.txt"):
                        p = line.split(",")
                        if len(p) > 3 and p[0].strip().isdigit():
                            print(f"    {p[2]:40s} {int(p[0])/n:7.2f}/req")
        elif mode == "hold":
            print(json.dumps({n: [tree(n, started), ports[n]] for n in names}), flush=True)
            time.sleep(int(os.environ.get("HOLD", "60")))
    finally:
        nginx.stop()
        for p in started.values():
            p.stop()
        shutil.rmtree(d, ignore_errors=True)

main()
