"""strace -c -f of the server over 2,000 hello-world requests (waves of 20 streams on one
connection): `.venv/bin/python benchmarks/results/2026-11-25-h3/strace_run.py h3|h2`
(from the repository root); the counts go to /tmp/strace-h3.txt or /tmp/strace-h2.txt."""

import os, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, os.getcwd())
sys.path.insert(0, "benchmarks/results/2026-11-25-h3")
from tests.tls_certs import make_certs
from measure import start, h3_run, h2_run
which = sys.argv[1]
certs = make_certs(Path(tempfile.mkdtemp()))
p, port = start(certs)
run = h3_run if which == "h3" else h2_run
run(port, certs, 200)
out = f"/tmp/strace-{which}.txt"
tr = subprocess.Popen(["strace", "-c", "-f", "-p", str(p.pid), "-o", out], stderr=subprocess.DEVNULL)
time.sleep(1)
run(port, certs, 2000)
time.sleep(0.5)
tr.send_signal(2); tr.wait()
p.terminate(); p.wait()
