"""S8's 64 MiB Content-Length upload over one keep-alive connection, one server at a time: wall
time and the server's CPU per upload (every process of it), each answer checked. argv: N ROUNDS SERVER..."""
import hashlib, os, sys, time
from pathlib import Path
BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH)); os.chdir(BENCH)
import servers
from bench import procs, rawhttp

n, rounds = int(sys.argv[1]), int(sys.argv[2])
data = os.urandom(64 << 20)
want = b"%d %s" % (len(data), hashlib.sha256(data).hexdigest().encode())
for rnd in range(rounds):
    for name in sys.argv[3:]:
        launch = servers.SERVERS[name].launch(servers.Target("s8_upload", "/", b""), port := procs.free_port())
        p = procs.start(name, launch.argv, launch.cwd, launch.env, port, Path(f"/tmp/s8-{name}.log"))
        assert procs.wait_port(port, time.monotonic() + 30, p)
        conn = rawhttp.Connection(port, 30)

        def upload():
            r = conn.request("POST", "/", body=data, chunked=False, keep_body=True)
            assert r.status == 200 and bytes(r.body) == want, bytes(r.body[:100])

        upload()
        pids = p.pids()
        c0, t0 = procs.cpu_seconds(pids), time.monotonic()
        for _ in range(n):
            upload()
        c1, t1 = procs.cpu_seconds(p.pids()), time.monotonic()
        conn.close()
        p.stop()
        print(f"r{rnd} {name:16s} time {1e3 * (t1 - t0) / n:6.1f} ms  cpu {1e3 * (c1 - c0) / n:6.1f} ms/upload", flush=True)
