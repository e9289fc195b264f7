"""Start one server of benchmarks/servers.py for an app module, print its pid.

    python3 start.py NAME PORT MODULE      (NAME: sluicegate, sluicegate-base, bjoern, granian, ...)
sluicegate-base is the build at SLUICEGATE_BASE_PY (here main's venv: /work/main/.venv/bin/python).
Logs go to /tmp/bf/NAME-PORT.log.
"""

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH))
import servers  # noqa: E402

name, port, module = sys.argv[1], int(sys.argv[2]), sys.argv[3]
target = servers.Target(module=module, probe="/", expect=b"")
if name == "sluicegate-base":
    launch = servers._sluicegate(target, port, servers.SLUICEGATE_BASE_PY)
else:
    launch = servers.SERVERS[name].launch(target, port)
log = open(f"/tmp/bf/{name}-{port}.log", "w")
p = subprocess.Popen(launch.argv, env=launch.env, cwd=launch.cwd, stdout=log, stderr=subprocess.STDOUT,
                     start_new_session=True)
print(p.pid)
