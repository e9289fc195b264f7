"""S13 probe, one server at a time, interleaved: requests/s, CPU per request (all threads), voluntary and
involuntary context switches per request (/proc/PID/task/*/status), PostgreSQL connections at the end
and wrk's p99, under `wrk -t1 -cCLIENTS` on /item/4242 with `CONN_MAX_AGE=AGE` (1 s warm-up, SECS s run,
default 4). A server named `sluicegate@MIN:MAX` runs with `--threads MIN:MAX`. SUITE=1 adds the
suite's sampler (a request on a new connection every 0.25 s) and connection counter. TRACE=1:
`perf trace -s` of the server's first process into /tmp/trace-NAME.txt.
argv: AGE CLIENTS ROUNDS SERVER..."""
import os, re, subprocess, sys, threading, time
from pathlib import Path
BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH)); os.chdir(BENCH)
import servers
from bench import s13, procs

def ctx(pids):
    v = n = 0
    for pid in pids:
        for t in Path(f"/proc/{pid}/task").glob("*"):
            try:
                s = (t / "status").read_text()
            except OSError:
                continue
            v += int(re.search(r"voluntary_ctxt_switches:\s+(\d+)", s).group(1))
            n += int(re.search(r"nonvoluntary_ctxt_switches:\s+(\d+)", s).group(1))
    return v, n

age, clients, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
names = sys.argv[4:]
trace = os.environ.get("TRACE")
s13._configure(age)
url_path = "/item/4242"
for rnd in range(rounds):
    for name in names:
        base, _, th = name.partition("@")
        srv = servers.SERVERS[base]
        ours = srv.kind == "ours"
        target = servers.Target("s13_django", "/hello", b"hello", pool=None if ours else 8, ours_threads=th or None)
        port = procs.free_port()
        l = srv.launch(target, port)
        p = procs.start(name, l.argv, l.cwd, l.env, port, Path(f"/tmp/probe-{base}.log"))
        assert procs.wait_port(port, time.monotonic() + 30, p), p.log_tail()
        url = f"http://127.0.0.1:{port}{url_path}"
        subprocess.run(["curl", "-s", "-o", "/dev/null", url])
        subprocess.run(["wrk", "-t1", f"-c{clients}", "-d1s", url], capture_output=True)
        pids = p.pids()
        counter = s13.ConnectionCounter(s13._postgres()) if os.environ.get("SUITE") else None
        stop_s = threading.Event()
        def sample():
            while not stop_s.wait(0.25):
                subprocess.run(["curl", "-s", "-o", "/dev/null", url])
        if counter:
            counter.start(); threading.Thread(target=sample, daemon=True).start()
        c0, (v0, n0) = procs.cpu_seconds(pids), ctx(pids)
        tr = None
        if trace:
            tr = subprocess.Popen(["perf", "trace", "-s", "-o", f"/tmp/trace-{name}.txt"] + sum((["-p", str(x)] for x in pids[:1]), []))
            time.sleep(0.5)
        w = subprocess.run(["wrk", "-t1", f"-c{clients}", f"-d{os.environ.get('SECS', 4)}s", "--latency", url], capture_output=True, text=True).stdout
        stop_s.set()
        if counter:
            counter.finish()
        if tr:
            tr.send_signal(2); tr.wait()
        pids = p.pids()
        c1, (v1, n1) = procs.cpu_seconds(pids), ctx(pids)
        reqs = int(re.search(r"(\d+) requests in", w).group(1))
        rps = float(re.search(r"Requests/sec:\s+([\d.]+)", w).group(1))
        conns = s13._postgres().connections()
        p.stop()
        p99 = re.search(r"99%\s+(\S+)", w).group(1)
        print(f"r{rnd} {name:18s} {rps:7.1f} req/s  cpu {1000*(c1-c0)/reqs:5.2f} ms/req  vol {(v1-v0)/reqs:5.1f} invol {(n1-n0)/reqs:5.1f} /req  pg {conns}  p99 {p99}", flush=True)
