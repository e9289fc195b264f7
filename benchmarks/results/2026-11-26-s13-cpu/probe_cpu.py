"""Where a server's CPU goes on S13 (Django + PostgreSQL): per thread name, per request.

Starts PostgreSQL (bench.s13), then for each round and each server (interleaved): start it, warm
up with wrk for WARM s, run wrk for SECONDS, and print req/s, p99, server CPU per request, the
CPU per request of each thread name (utime+stime from /proc/PID/task/*/stat), voluntary and
involuntary context switches per request, the PostgreSQL backends' CPU per request and the most
PostgreSQL connections seen. Run from benchmarks/ with benchmarks/.venv/bin/python:

    probe_cpu.py --servers sluicegate,granian --clients 16 --age 60 --seconds 10 --rounds 2
    (SLUICEGATE_PROBE_ENV='SLUICEGATE_THREADS=1:4' adds environment to sluicegate's launches)
"""
import argparse, collections, json, os, subprocess, sys, threading, time
sys.path.insert(0, os.getcwd())
import servers
from bench import procs, s13

TICK = os.sysconf("SC_CLK_TCK")


def tasks(pids):
    out = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                stat = open(f"/proc/{pid}/task/{tid}/stat").read()
                status = open(f"/proc/{pid}/task/{tid}/status").read()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            f = stat[stat.rindex(")") + 2:].split()
            cpu = (int(f[11]) + int(f[12])) / TICK
            sw = {k: int(v) for k, v in (ln.split(":") for ln in status.splitlines()
                                          if ln.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")))}
            out[(pid, tid)] = (comm, cpu, sw.get("voluntary_ctxt_switches", 0), sw.get("nonvoluntary_ctxt_switches", 0))
    return out


def pg_backends():
    r = subprocess.run(["pgrep", "-u", "postgres"], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


def wrk(port, clients, seconds):
    r = subprocess.run(["wrk", "-t2", f"-c{clients}", f"-d{seconds}", "--latency", "--timeout", "5",
                        f"http://127.0.0.1:{port}{s13.PATH}"], capture_output=True, text=True)
    reqs, p99 = 0, ""
    for ln in r.stdout.splitlines():
        ln = ln.strip()
        if "requests in" in ln:
            reqs = int(ln.split()[0])
        if ln.startswith("99%"):
            p99 = ln.split()[1]
        if ln.startswith("Non-2xx"):
            p99 += " ERR " + ln
    return reqs, p99


def one(name, clients, seconds, warm, extra_env):
    # NAME@MIN:MAX: sluicegate (or sluicegate-base) with SLUICEGATE_THREADS=MIN:MAX
    name, _, cap = name.partition("@")
    if cap:
        extra_env = {**extra_env, "SLUICEGATE_THREADS": cap}
    stats = name == "sluicegate-stats"  # in-process, printing its readings (serve_stats.py)
    server = servers.SERVERS["sluicegate" if stats else name]
    target = servers.Target("s13_django", "/hello", b"hello", pool=None if server.kind == "ours" else 8)
    port = procs.free_port()
    launch = server.launch(target, port)
    if stats:
        here = os.path.dirname(os.path.abspath(__file__))
        launch = servers.Launch([str(servers.SLUICEGATE_PY), os.path.join(here, "serve_stats.py"), str(port)],
                                launch.env, "in-process", launch.cwd)
    env = dict(launch.env)
    if name.startswith("sluicegate"):
        env.update(extra_env)
    p = procs.start(name, launch.argv, launch.cwd, env, port, servers.WORK / "probe" / f"{name}.log")
    try:
        assert procs.wait_port(port, time.monotonic() + 30, p), p.log_tail()
        wrk(port, clients, warm)
        pg = s13._postgres()
        peak = [0]
        stop = threading.Event()

        def count():
            while not stop.wait(0.1):
                try:
                    peak[0] = max(peak[0], pg.connections())
                except Exception:
                    pass
        t = threading.Thread(target=count, daemon=True)
        pgb = pg_backends()
        a, pa = tasks(p.pids()), tasks(pgb)
        t.start()
        perf = subprocess.Popen(["perf", "stat", "-x,", "-e", "instructions:u,instructions:k,context-switches",
                                 "-p", ",".join(str(x) for x in p.pids()), "--", "sleep", str(seconds)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        rec = None
        if os.environ.get("PROBE_PERF"):  # a cpu-clock profile of the measured seconds into PROBE_PERF.NAME
            rec = subprocess.Popen(["perf", "record", "-F", "2000", "-g", "-o", f"{os.environ['PROBE_PERF']}.{name}",
                                    "-p", ",".join(str(x) for x in p.pids()), "--", "sleep", str(seconds)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        n, p99 = wrk(port, clients, seconds)
        if rec:
            rec.wait()
        wall = time.monotonic() - t0
        counts = {}
        for ln in perf.communicate()[1].splitlines():
            f = ln.split(",")
            if len(f) > 2 and f[0].replace(".", "").isdigit():
                counts[f[2]] = float(f[0])
        b, pb = tasks(p.pids()), tasks(pg_backends())
        stop.set(); t.join()
        by = collections.defaultdict(lambda: [0.0, 0, 0, 0])
        for k, (comm, cpu, v, nv) in b.items():
            c0, v0, nv0 = (a[k][1], a[k][2], a[k][3]) if k in a else (0.0, 0, 0)
            e = by[comm]
            e[0] += cpu - c0; e[1] += v - v0; e[2] += nv - nv0; e[3] += 1
        pgcpu = sum(cpu - (pa[k][1] if k in pa else 0.0) for k, (_, cpu, _, _) in pb.items())
        total = sum(e[0] for e in by.values())
        print(f"{name + ('@' + cap if cap else ''):16s} c{clients} {n / wall:7.1f} req/s p99 {p99:>9s} cpu {total * 1e3 / n:5.2f} ms/req "
              f"pg {pgcpu * 1e3 / n:5.2f} ms/req conns {peak[0]:3d} threads {sum(e[3] for e in by.values())} "
              + " ".join(f"{k.split(':')[0][:5]}{k[-2:] if ':' in k else ''} {v / n / (1e3 if 'instr' in k else 1):.1f}"
                         + ("k" if "instr" in k else "") for k, v in counts.items()) + "/req")
        for comm, (cpu, v, nv, cnt) in sorted(by.items(), key=lambda kv: -kv[1][0]):
            print(f"    {comm:18s} x{cnt:<4d} {cpu * 1e6 / n:7.0f} us/req  vol {v / n:6.2f}/req  invol {nv / n:5.2f}/req")
        sys.stdout.flush()
    finally:
        p.stop()
        if stats:
            lines = p.log.read_text().splitlines()
            print("    readings:", *lines[-(seconds + warm + 2):], sep="\n      ")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--servers", default="sluicegate,granian")
    ap.add_argument("--clients", default="16")
    ap.add_argument("--age", type=int, default=60)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    extra = dict(kv.split("=", 1) for kv in os.environ.get("SLUICEGATE_PROBE_ENV", "").split() if kv)
    s13._configure(args.age)
    s13._expected(s13.PATH)
    for r in range(args.rounds):
        for clients in [int(c) for c in args.clients.split(",")]:
            for name in args.servers.split(","):
                one(name, clients, args.seconds, args.warm, extra)


if __name__ == "__main__":
    main()
