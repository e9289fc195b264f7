"""probe: S5's app, a fresh server per run, wrk -t1 -cN, servers interleaved round by round.
Per run: req/s, p50/p99, server CPU µs/request, wrk's CPU µs/request, the machine's busy and
steal share over the run (/proc/stat), the load average after, the server's threads and, once a
second, how many of them wait in futex (the GIL) and in clock_nanosleep (the app's sleep).
usage: probe.py SERVERS ROUNDS CLIENTS[,CLIENTS] [SECS]   (env SG_PY: sluicegate's python;
a server named sg=/path/to/venv/bin/python: sluicegate run by that python)"""
import os, sys, time, threading
from pathlib import Path
BENCH = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(BENCH)); sys.path.insert(0, str(BENCH / "apps"))
import servers
from bench import procs, s18
from bench.loadgen import wrk

names, rounds, clients = sys.argv[1].split(","), int(sys.argv[2]), [int(c) for c in sys.argv[3].split(",")]
secs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
py = os.environ.get("SG_PY")
for name in list(names):  # sg=PATH: sluicegate run by that venv's python
    if name.startswith("sg="):
        def launch(t, port, p=Path(name[3:])):
            return servers._sluicegate(t, port, p)
        srv = servers.dataclasses.replace(servers.SERVERS["sluicegate"], name=name)
        object.__setattr__(srv, "launch", launch)
        servers.SERVERS[name] = srv
for name in list(names):  # sluicegate@N: sluicegate with --threads 16:N
    if name.startswith("sluicegate@"):
        n = name.split("@")[1]
        def launch(t, port, n=n, p=Path(py) if py else servers.SLUICEGATE_PY):
            l = servers._sluicegate(t, port, p)
            l.argv[l.argv.index("16:" + str(servers.BLOCKING_THREADS))] = "16:" + n
            return l
        srv = servers.dataclasses.replace(servers.SERVERS["sluicegate"], name=name)
        object.__setattr__(srv, "launch", launch)
        servers.SERVERS[name] = srv
if py:
    object.__setattr__(servers.SERVERS["sluicegate"], "launch",
                       lambda t, port: servers._sluicegate(t, port, Path(py)))
procs.raise_fd_limit()
logs = Path("/tmp/s5k/logs"); logs.mkdir(parents=True, exist_ok=True)

def stat():
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return f[0] + f[1] + f[2] + f[5] + f[6], f[3] + f[4], f[7]  # busy, idle, steal

class Watch(threading.Thread):
    def __init__(self, pids):
        super().__init__(daemon=True); self.pids = pids; self.stop = threading.Event()
        self.threads = self.futex = self.sleep = 0
    def run(self):
        while not self.stop.wait(1.0):
            n = fx = sl = 0
            for pid in self.pids:
                for t in Path(f"/proc/{pid}/task").glob("*"):
                    n += 1
                    try:
                        s = (t / "syscall").read_text().split(" ", 1)[0]
                    except OSError:
                        continue
                    fx += s == "202"; sl += s == "230"
            self.threads, self.futex, self.sleep = max(self.threads, n), max(self.futex, fx), max(self.sleep, sl)

for rnd in range(rounds):
    order = names if rnd % 2 == 0 else names[::-1]
    for name in order:
        for c in clients:
            proc, settings, size, path = s18.start(name, "s5", logs)
            try:
                pids = proc.pids(); cpu0 = procs.cpu_seconds(pids); s0 = stat()
                w = Watch(pids); w.start()
                r = wrk(f"http://127.0.0.1:{proc.port}/", c, secs, size, timeout_s=2.0)
                w.stop.set(); s1 = stat()
                cpu = procs.cpu_seconds(proc.pids()) - cpu0
            finally:
                proc.stop()
            n = r.requests or 1
            busy, idle, steal = (s1[i] - s0[i] for i in range(3))
            tot = busy + idle + steal or 1
            print(f"r{rnd+1} {name[-30:]:16} c{c:<5} {r.rps or 0:7,.0f} req/s  p50 {r.detail.get('p50_us',0)/1000:7.1f} "
                  f"p99 {r.detail.get('p99_us',0)/1000:7.1f} ms  srv {cpu*1e6/n:6.1f} us/req  wrk "
                  f"{(r.detail.get('client_cpu_s') or 0)*1e6/n:5.1f} us/req  machine busy {100*busy/tot:3.0f}% steal "
                  f"{100*steal/tot:3.1f}%  load {os.getloadavg()[0]:5.1f}  threads {w.threads} futex {w.futex} "
                  f"sleep {w.sleep}  err {r.errors}", flush=True)
            time.sleep(1)
