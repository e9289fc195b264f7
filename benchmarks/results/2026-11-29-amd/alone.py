"""S13's "app alone" floor, by itself: the Django view called in a loop by one Python thread,
no server and no sockets in front (`bench/s13.py`'s `_ALONE_CODE`), `CONN_MAX_AGE` 60, three
runs of 8 s. Run from the repository root: python3 benchmarks/results/2026-11-29-amd/alone.py"""
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "apps"))
import servers  # noqa: E402
from bench import s13  # noqa: E402

s13._configure(60)
for _ in range(3):
    r = subprocess.run([str(servers.SLUICEGATE_PY), "-c", s13._ALONE_CODE, s13.PATH, "8"], capture_output=True,
                       env=servers._env(None), cwd=servers.APPS, timeout=200)
    n, cpu, wall = r.stdout.split(b"\n")[0].split()
    n, cpu, wall = int(n), float(cpu), float(wall)
    print(f"alone: {n / wall:.1f} calls/s, {cpu * 1e6 / n:.0f} us CPU per call", flush=True)
