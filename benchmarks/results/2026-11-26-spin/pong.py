"""Start S4's pong app on one server of the suite, warmed by 2,000 `ab -c1` requests: `start(name)`
returns the process and the URL. Shared by s4probe.py and s4sched.py."""
import os, subprocess, sys, time
from pathlib import Path
BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH)); os.chdir(BENCH)
import servers
from bench import procs


def start(name):
    launch = servers.SERVERS[name].launch(servers.Target("s4_pong", "/pong", b""), port := procs.free_port())
    p = procs.start(name, launch.argv, launch.cwd, launch.env, port, Path(f"/tmp/s4-{name}.log"))
    assert procs.wait_port(port, time.monotonic() + 30, p)
    url = f"http://127.0.0.1:{port}/pong"
    subprocess.run(["ab", "-q", "-c1", "-n2000", url], capture_output=True)
    return p, url
