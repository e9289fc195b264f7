"""Run sluicegate-uwsgi (S19 ini + http-socket) with the probe app; dump master's and a worker's sys.modules."""
import os, subprocess, sys, time, http.client, tempfile, socket
pydir = sys.argv[1]; out = sys.argv[2]
d = tempfile.mkdtemp()
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
os.mkdir(f"{d}/static")
open(f"{d}/uwsgi.ini", "w").write(f"""[uwsgi]
chdir = /work/main/benchmarks/results/2026-11-27-rss3-workers
pythonpath = /work/main/benchmarks/results/2026-11-27-rss3-workers
module = probe:app
master = true
processes = 2
socket = {d}/app.sock
http-socket = 127.0.0.1:{port}
chmod-socket = 666
vacuum = true
die-on-term = true
need-app = true
disable-logging = true
static-map = /static={d}/static
listen = 1024
""")
wrapper = f"""
import sys, threading, time
def dump():
    time.sleep(4)
    open({out + '.master'!r}, 'w').write('\\n'.join(sorted(sys.modules)))
threading.Thread(target=dump, daemon=True).start()
from sluicegate.uwsgi_cli import main
sys.exit(main(['--ini', {d + '/uwsgi.ini'!r}]))
"""
env = dict(os.environ, PYTHONPATH=pydir)
p = subprocess.Popen(["/work/main/.venv/bin/python", "-c", wrapper], env=env)
for _ in range(100):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5); c.request("GET", "/mods"); r = c.getresponse(); body = r.read().decode(); break
    except OSError:
        time.sleep(0.1)
open(out + ".worker", "w").write(body)
time.sleep(5)
p.terminate(); p.wait()
