"""start.py AGE SPEC...: S13's PostgreSQL (bench.s13, CONN_MAX_AGE=AGE) and one server per SPEC:
`sg[NAME][:VAR=V;VAR=V][@PYTHON]` a sluicegate with those environment variables (and that venv's
Python), or a peer's name as servers.py knows it (8 threads). Prints `run.py wrk-cpu` targets,
then holds everything until killed."""
import os, sys, time, signal, json
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import servers
from bench import s13, procs
age = int(sys.argv[1])
s13._configure(age)
exp = s13._expected(s13.PATH)
out = []
started = []
for spec in sys.argv[2:]:
    name, _, rest = spec.partition(":")
    port = procs.free_port()
    if name.startswith("sg"):
        envs, _, py = rest.partition("@")
        py = py or str(servers.SLUICEGATE_PY)
        t = servers.Target("s13_django", "/hello", b"hello")
        la = servers._sluicegate(t, port, Path(py))
        env = dict(la.env)
        for kv in filter(None, envs.split(";")):
            k, v = kv.split("=", 1); env[k] = v
        argv = la.argv
    else:
        t = servers.Target("s13_django", "/hello", b"hello", pool=8)
        srv = servers.SERVERS[name]
        la = srv.launch(t, port)
        argv, env = la.argv, la.env
    p = procs.start(name, argv, servers.APPS, env, port, Path(f"{name}.log"))
    assert procs.wait_port(port, time.monotonic() + 60, p), name
    started.append(p)
    time.sleep(1)
    pids = p.pids()
    out.append(f"{name}={port},{s13.PATH},{max(pids) if name.startswith('uwsgi') else p.popen.pid},{len(exp)}")
print(" ".join(out), flush=True)
def bye(*a):
    for p in started: p.stop()
    sys.exit(0)
signal.signal(signal.SIGTERM, bye); signal.signal(signal.SIGINT, bye)
while True: time.sleep(1)
