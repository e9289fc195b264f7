"""Start PostgreSQL (bench.s13), serve the S13 Django app with sluicegate (argv[2]: its Python) at
CONN_MAX_AGE=argv[1], run wrk -c16 for 4 s, print the PostgreSQL connections every 0.1 s and the
server's threads by name. Run from benchmarks/ with benchmarks/.venv/bin/python."""
import os, subprocess, sys, time, collections
sys.path.insert(0, os.getcwd())
import servers
from bench import s13, procs
pg = s13._postgres()
age = int(sys.argv[1]); py = sys.argv[2]
s13._configure(age)
port = procs.free_port()
env = servers._env(None)
p = subprocess.Popen([py, "-m", "sluicegate", "--bind", f"127.0.0.1:{port}", "s13_django:app"], env=env, cwd=servers.APPS,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(2)
peak = 0
w = subprocess.Popen(["wrk", "-t2", "-c16", "-d4", f"http://127.0.0.1:{port}/item/4242"], stdout=subprocess.PIPE, text=True)
samples = []
while w.poll() is None:
    c = pg.connections(); samples.append(c); time.sleep(0.1)
out = w.stdout.read()
names = collections.Counter(open(f"/proc/{p.pid}/task/{t}/comm").read().strip() for t in os.listdir(f"/proc/{p.pid}/task"))
print("age", age, "conns over time", samples[:12], "...", max(samples), "threads", dict(names))
print([l for l in out.splitlines() if "Requests/sec" in l])
p.terminate(); p.wait(10)
