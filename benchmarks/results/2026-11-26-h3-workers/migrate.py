"""Does a QUIC connection survive its client's address changing (a NAT rebinding: new source
port) with worker processes? Each connection: one GET /pid, then the client's socket is
replaced by one on a new port (same connection, same keys), then one more GET /pid.

    python benchmarks/results/2026-11-26-h3-workers/migrate.py WORKERS CONNECTIONS

(WORKERS 0: a single process, no --workers.)

Prints, per outcome, how many connections: `same` (the second answer came from the same
worker), `lost` (no answer within 2 s: the packets reached a worker that does not know the
connection). Runs against a server it starts on 127.0.0.1 (tests/apps/workers.py).
"""

import re
import socket
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.h3_step_client import StepClient  # noqa: E402
from tests.tls_certs import make_certs  # noqa: E402


def main(workers: int, n: int) -> None:
    certs = make_certs(Path(tempfile.mkdtemp()))
    cmd = [sys.executable, "-m", "sluicegate", "--bind", "127.0.0.1:0",
           *(["--workers", str(workers)] if workers else []), "--certfile", str(certs.server_chain), "--keyfile",
           str(certs.server_key), "--http3", "tests.apps.workers:app"]
    srv = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    port, ready = None, 0
    for line in srv.stderr:
        m = re.search(r"Listening at: https://127.0.0.1:(\d+)", line)
        port = port or (m and int(m.group(1)))
        ready += bool(re.search(r"Worker \d+ ready", line))
        if port and ready >= workers:
            break
    outcomes = Counter()
    try:
        for _ in range(n):
            with StepClient(port, str(certs.ca_cert)) as c:
                first = int(c.response(c.request("GET", "/pid")).body)
                c.sock.close()
                c.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                c.sock.connect(c.addr)
                try:
                    second = int(c.response(c.request("GET", "/pid"), timeout=2).body)
                    outcomes["same" if second == first else "other"] += 1
                except (TimeoutError, ValueError):
                    outcomes["lost"] += 1
    finally:
        srv.terminate()
        srv.wait(30)
    print(f"workers={workers} connections={n} " +
          " ".join(f"{k}={v}" for k, v in sorted(outcomes.items())))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
