"""abcpu.py ROUNDS NAME=PORT,PID ...: ab -c16 over TLS (a full handshake per request) against
servers already running, interleaved; per run: requests/s, ab's own CPU (user + system, from
wait4's rusage) per request and as a share of the run's wall time, the server's CPU per request
(user + system of PID and its threads, /proc/PID/stat).

    python3 abcpu.py 5 sg=18901,PID gr=18902,PID
"""
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.procs import cpu_seconds  # noqa: E402

N = 3000


def server_cpu(pid: int) -> float:
    return cpu_seconds([pid])


def one(port: int, pid: int) -> tuple[float, float, float, float]:
    s0, t0 = server_cpu(pid), time.monotonic()
    p = subprocess.Popen(["ab", "-q", "-c16", f"-n{N}", f"https://127.0.0.1:{port}/"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    s1 = server_cpu(pid)
    assert os.waitstatus_to_exitcode(status) == 0, out
    failed = [ln for ln in out.splitlines() if ln.startswith("Failed requests")]
    assert failed and failed[0].split()[-1] == "0", out
    rate = float([ln for ln in out.splitlines() if ln.startswith("Requests per second")][0].split()[3])
    ab_cpu = ru.ru_utime + ru.ru_stime
    return rate, ab_cpu / N * 1e6, ab_cpu / wall, (s1 - s0) / N * 1e6


def main() -> None:
    rounds = int(sys.argv[1])
    targets = [(a.split("=")[0], *map(int, a.split("=")[1].split(","))) for a in sys.argv[2:]]
    rows: dict[str, list] = {name: [] for name, _, _ in targets}
    for r in range(rounds):
        order = targets[r % len(targets):] + targets[:r % len(targets)]
        for name, port, pid in order:
            res = one(port, pid)
            rows[name].append(res)
            print(f"round {r + 1} {name:8} {res[0]:8.0f} req/s  ab {res[1]:6.0f} µs/req  ab busy {res[2] * 100:4.0f}%  "
                  f"server {res[3]:6.0f} µs/req", flush=True)
    print("# medians")
    for name, rs in rows.items():
        med = [statistics.median(x[i] for x in rs) for i in range(4)]
        print(f"{name:8} {med[0]:8.0f} req/s  ab {med[1]:6.0f} µs/req (1/rate {1e6 / med[0]:6.0f})  "
              f"ab busy {med[2] * 100:4.0f}%  server {med[3]:6.0f} µs/req")


if __name__ == "__main__":
    main()
