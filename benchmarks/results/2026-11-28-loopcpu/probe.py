"""(This directory's copy of ../2026-11-27-dj15/probe.py: it also prints each thread by tid with where
20 ms samples found it (running, or its system call's number), the takeovers and inline calls since
the server started, and with --strace-loop an `strace -c` of the thread found in epoll_wait.)

S18's Django case at one quota, sluicegate (this tree, and optionally a base build; a server named
`sluicegate|OPTIONS` runs with those options too) and granian interleaved, with what sluicegate's threads do during the run: every 20 ms, its threads' count and
where each is (running, in futex, in another system call), and its Prometheus counters
before/after (--metrics-bind). Root (cgroup v1).

    python3 benchmarks/results/2026-11-27-dj15/probe.py [--cpus 0.5] [--rounds 3]
        [--servers sluicegate,granian] [--seconds 5] [--extra "--threads 8"]
"""
import argparse, os, re, sys, threading, time, urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH)); sys.path.insert(0, str(BENCH / "apps"))
from bench import s18, procs, s13  # noqa
from bench.loadgen import wrk  # noqa
import servers  # noqa


SYSCALLS = {}  # tid -> {syscall number: samples}


def sample(pids, stop, out):
    while not stop.is_set():
        n = run = fut = other = 0
        for pid in pids:
            for t in Path(f"/proc/{pid}/task").glob("*"):
                try:
                    st = (t / "stat").read_text()
                    state = st[st.rindex(")") + 2]
                    sc = (t / "syscall").read_text().split()[0]
                except (OSError, IndexError):
                    continue
                n += 1
                h = SYSCALLS.setdefault(t.name, {})
                key = "R" if state == "R" else sc
                h[key] = h.get(key, 0) + 1
                if state == "R":
                    run += 1
                elif sc == "202":
                    fut += 1
                else:
                    other += 1
        out.append((n, run, fut, other))
        time.sleep(0.02)


def per_thread(pids):
    """CPU ticks per thread, by tid: (comm, utime+stime)."""
    out = {}
    for pid in pids:
        for t in Path(f"/proc/{pid}/task").glob("*"):
            try:
                st = (t / "stat").read_text()
            except OSError:
                continue
            comm = st[st.index("(") + 1:st.rindex(")")]
            f = st[st.rindex(")") + 2:].split()
            out[t.name] = (comm, int(f[11]) + int(f[12]))
    return out


def loop_tid(pids):
    """The thread that drives the loop, whatever its name: the one found in epoll_wait (232) or
    epoll_pwait (281) most often over 50 looks 2 ms apart (app threads wait in futex and poll)."""
    seen = {}
    for _ in range(50):
        for pid in pids:
            for t in Path(f"/proc/{pid}/task").glob("*"):
                try:
                    sc = (t / "syscall").read_text().split()[0]
                except (OSError, IndexError):
                    continue
                if sc in ("232", "281"):
                    seen[t.name] = seen.get(t.name, 0) + 1
        time.sleep(0.002)
    return max(seen, key=seen.get)


def stats(port):
    import json
    try:
        return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/__stats", timeout=5).read())
    except OSError:
        return {}


def metrics(port):
    if not port:
        return {}
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except OSError:
        return {}
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(sluicegate_[a-z_]+(?:\{[^}]*\})?) ([0-9.e+-]+)$", text, re.M)}


WARM_NONE, TRACE, SHARES, STRACE, STRACE_LOOP, PERF_LOOP = 5.0, False, 0, False, False, False
KEYS = ("sluicegate_inline_calls_total", "sluicegate_pool_calls_total", "sluicegate_takeovers_total",
        "sluicegate_pool_threads", "sluicegate_admission_waits_total", "sluicegate_admission_queue")


def one(spec_name, cpus, seconds, extra):
    name, _, own = spec_name.partition("|")  # "sluicegate|--threads 1:8": that server with those options
    extra = f"{extra} {own}"
    mport = procs.free_port() if name.startswith("sluicegate") else 0
    orig = servers._LAUNCHERS[name]

    def launch(t, port):
        spec = orig(t, port)
        if mport:
            spec.argv[-1:-1] = ["--metrics-bind", f"127.0.0.1:{mport}", *extra.split()]
            spec.argv[-1] = "probe_app:app"
            spec.env["PYTHONPATH"] = f"{Path(__file__).parent}:{spec.env['PYTHONPATH']}"
        return spec
    servers._LAUNCHERS[name] = launch
    d = Path("/tmp/loopcpu-logs"); d.mkdir(exist_ok=True)
    proc, settings, size, path = s18.start(name, "django", d)
    servers._LAUNCHERS[name] = orig
    cg = s18.Cgroup(f"dj15-{os.getpid()}", cpus or None)  # 0: no quota
    if SHARES:
        (cg.dir / "cpu.shares").write_text(str(SHARES))
    try:
        pids = proc.pids()
        if WARM_NONE:  # as S18 runs it: 5 s unconstrained first, then moved into the cgroup
            wrk(f"http://127.0.0.1:{proc.port}{path}", 16, WARM_NONE, size, timeout_s=5.0)
        cg.add(pids)
        wrk(f"http://127.0.0.1:{proc.port}{path}", 16, 1, size, timeout_s=5.0)
        m0 = metrics(mport)
        st0 = stats(proc.port) if mport else {}
        pt0 = per_thread(pids)
        thr0, cpu0, sw0 = cg.throttled(), procs.cpu_seconds(pids), s18.switches(pids)
        stop, samples, rooms = threading.Event(), [], []
        th = threading.Thread(target=sample, args=(pids, stop, samples)); th.start()
        if mport and TRACE:
            def trace():
                while not stop.wait(0.5):
                    rooms.append(stats(proc.port).get("blocking_room"))
            tr = threading.Thread(target=trace); tr.start()
        st_proc = None
        if STRACE_LOOP:
            import subprocess
            tid = loop_tid(pids)
            print(f"    strace -c of the loop's thread {tid} ({per_thread(pids)[tid][0]})", flush=True)
            st_proc = subprocess.Popen(["strace", "-c", "-o", f"/tmp/loopcpu-strace-{name}-{tid}.txt", "-p", tid])
        if PERF_LOOP:
            import subprocess
            tid = loop_tid(pids)
            print(f"    perf record of the loop's thread {tid} ({per_thread(pids)[tid][0]})", flush=True)
            st_proc = subprocess.Popen(["perf", "record", "-q", "-F", "4999", "-o", f"/tmp/loopcpu-perf-{name}.data", "-t", tid],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if STRACE:
            import subprocess
            st_proc = subprocess.Popen(["strace", "-c", "-f", "-o", f"/tmp/dj15-strace-{name}.txt", "-p", str(proc.popen.pid)])
        r = wrk(f"http://127.0.0.1:{proc.port}{path}", 16, seconds, size, timeout_s=5.0)
        if st_proc:
            import signal
            st_proc.send_signal(signal.SIGINT); st_proc.wait()
            if PERF_LOOP:
                rep = subprocess.run(["perf", "report", "-i", f"/tmp/loopcpu-perf-{name}.data", "--stdio", "--no-children",
                                      "--sort", "dso,sym", "--percent-limit", "1.5"], capture_output=True, text=True).stdout
                print("\n".join(l for l in rep.splitlines() if l.strip() and not l.startswith("#")), flush=True)
            if STRACE_LOOP:
                print(Path(f"/tmp/loopcpu-strace-{name}-{tid}.txt").read_text(), flush=True)
        stop.set(); th.join()
        pt1 = per_thread(pids)
        ticks = sorted(((v[1] - pt0.get(k, (0, 0))[1], v[0], k) for k, v in pt1.items()), reverse=True)
        print("    thread CPU ms:", [(c, int(t * 1000 / procs.CLK_TCK)) for t, c, _ in ticks if t], flush=True)
        # Each thread by tid: its name, CPU ms, and where the 20 ms samples found it (R: running;
        # else the system call's number: 232/281 epoll_wait/epoll_pwait, 202 futex, 7 poll ...).
        for t, c, k in ticks:
            h = SYSCALLS.get(k, {})
            top = sorted(h.items(), key=lambda kv: -kv[1])[:3]
            if t or c == "sg-loop":
                print(f"      {k} {c} {int(t * 1000 / procs.CLK_TCK)} ms samples {top}", flush=True)
        SYSCALLS.clear()
        if rooms:
            print("    room every 0.5 s:", rooms, flush=True)
        cpu = procs.cpu_seconds(proc.pids()) - cpu0
        sw = s18.switches(proc.pids())
        m1 = metrics(mport)
        st = stats(proc.port) if mport else {}
        if st0:
            print("    before:", {k: st0.get(k) for k in ("blocking_room", "blocking_room_least", "threads", "mode")}, flush=True)
        n = max(r.requests, 1)
        avg = [sum(s[i] for s in samples) / max(len(samples), 1) for i in range(4)]
        print(f"{spec_name:12s} {cpus} {r.rps:7.1f} req/s p50 {r.detail.get('p50_us',0)/1000:6.1f} p99 {r.detail.get('p99_us',0)/1000:6.1f} ms "
              f"{cpu*1e6/n:6.0f} us/req thr {cg.throttled()-thr0} vcsw/req {(sw[0]-sw0[0])/n:5.1f} ivcsw/req {(sw[1]-sw0[1])/n:5.1f} "
              f"threads {avg[0]:.1f} R {avg[1]:.2f} futex {avg[2]:.2f} other {avg[3]:.2f} maxthr {max((s[0] for s in samples), default=0)}",
              flush=True)
        if m1:
            print("    takeovers since start:", m1.get("sluicegate_takeovers_total"),
                  "inline calls since start:", m1.get("sluicegate_inline_calls_total"), flush=True)
            print("   ", {k.replace('sluicegate_', ''): m1.get(k, 0) - (m0.get(k, 0) if k.endswith('_total') else 0) for k in KEYS
                         }, {k: v for k, v in st.items() if any(w in k for w in ('blocking', 'runnable', 'mode', 'threads', 'demotion', 'lengthened'))}, flush=True)
    finally:
        proc.stop(); time.sleep(0.3); cg.remove()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpus", type=float, default=0.5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--servers", default="sluicegate,granian")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--extra", default="")
    ap.add_argument("--warm-none", type=float, default=5.0, help="seconds of load before the move (0: none)")
    ap.add_argument("--shares", type=int, default=0,
                    help="cgroup v1 cpu.shares of the server's cgroup and of this process's (PostgreSQL, "
                         "wrk): on a machine others load, the quota then binds as on a quiet one")
    ap.add_argument("--strace", action="store_true", help="strace -c -f the server over the run")
    ap.add_argument("--perf-loop", action="store_true", help="perf record the loop's thread alone over the run")
    ap.add_argument("--strace-loop", action="store_true", help="strace -c the loop's thread alone over the run")
    ap.add_argument("--trace", action="store_true", help="sluicegate's blocking room every 0.5 s")
    a = ap.parse_args()
    WARM_NONE = a.warm_none
    TRACE = a.trace
    STRACE = a.strace
    STRACE_LOOP = a.strace_loop
    PERF_LOOP = a.perf_loop
    procs.raise_fd_limit()
    SHARES = a.shares
    if SHARES:  # this process, and so PostgreSQL, wrk and the server before its move: one
        aux = s18.Cgroup(f"dj15-aux-{os.getpid()}", None)  # group weighted like SHARES tasks
        (aux.dir / "cpu.shares").write_text(str(SHARES))
        aux.add([os.getpid()])
    names = a.servers.split(",")
    for r in range(a.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            one(name, a.cpus, a.seconds, a.extra)
