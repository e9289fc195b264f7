"""S12's first second: fast-route probes on a freshly started sluicegate beside CPU-bound calls.

Owns the reproduction of S12's rare ~400 ms probe (BENCHMARKS.md, S12): each trial
starts sluicegate afresh with `benchmarks/apps/s12_busy.py`, lets `wrk -c2` keep
`/cpu?ms=200` calls running (pure Python), and fetches `/hello` on a fresh connection every
100 ms for 4 s. It prints each trial's median and every probe slower than 30 ms, with when it
started (seconds after the first probe). Extra arguments go to sluicegate (e.g. `--scheduler
pool`, which measured no slow probe in 6 trials, against 4 of 6 trials with slow probes under
the adaptive default).

    python3 benchmarks/run.py s12-startup [--trials 6] [-- SLUICEGATE OPTIONS...]
"""

import argparse
import signal
import subprocess
import time
from pathlib import Path

from bench import rawhttp
from bench.procs import free_port

APPS = Path(__file__).resolve().parents[1] / "apps"
PYTHON = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "python"


def trial(options: list[str]) -> list[tuple[float, float]]:
    port = free_port()
    srv = subprocess.Popen([str(PYTHON), "-m", "sluicegate", "--bind", f"127.0.0.1:{port}",
                            *options, "s12_busy:app"], cwd=APPS,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                if rawhttp.get(port, "/hello", timeout=1).status == 200:
                    break
            except (rawhttp.HttpError, OSError):
                time.sleep(0.05)
        wrk = subprocess.Popen(["wrk", "-t1", "-c2", "-d5s", "--timeout", "30s",
                                f"http://127.0.0.1:{port}/cpu?ms=200"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)  # the CPU-bound calls are in the app
        started, probes = time.monotonic(), []
        while time.monotonic() - started < 4:
            t = time.monotonic()
            resp = rawhttp.get(port, "/hello", timeout=2)
            took = time.monotonic() - t
            if resp.status != 200:
                raise SystemExit(f"/hello: status {resp.status}")
            probes.append((t - started, took))
            time.sleep(max(0.0, 0.1 - took))
        wrk.wait()
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(30)
    return probes


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--trials", type=int, default=6)
    ap.add_argument("options", nargs="*", help="sluicegate options (after --)")


def main(args: argparse.Namespace) -> int | None:
    for i in range(args.trials):
        probes = trial(args.options)
        median = sorted(took for _, took in probes)[len(probes) // 2]
        slow = [f"{at:.2f} s: {took * 1e3:.0f} ms" for at, took in probes if took > 0.03]
        print(f"trial {i}: {len(probes)} probes, median {median * 1e3:.1f} ms; slow: "
              f"{', '.join(slow) or 'none'}", flush=True)
