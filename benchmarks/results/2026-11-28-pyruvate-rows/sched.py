"""Per fetch of S3's `/8192`, what each server thread did: run time, runqueue wait, slices, CPU.

    python3 sched.py PORT PID COUNT

One keep-alive connection (a new one when the server closes, as pyruvate does after every
answer) fetches COUNT times; around each fetch the script reads every thread's
`/proc/PID/task/TID/schedstat` (time on a CPU, time runnable but waiting, slices, all in
nanoseconds) and the CPU it last ran on (`stat` field 39), and this client thread's CPU. It
prints 40 fetches spread over the sorted times: the fetch's time, then per thread that ran
`name:tid:run…us,wait…us,sl…,cpuA->B`. The readings cost time of their own (about 0.3 ms a
fetch): the times are for sorting fetches, not for comparing servers.
"""

import os
import socket
import sys
import time

END = b"\r\n0\r\n\r\n"


def tasks(pid: int) -> dict:
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            comm = open(f"/proc/{pid}/task/{t}/comm").read().strip()
            run, wait, slices = map(int, open(f"/proc/{pid}/task/{t}/schedstat").read().split())
            cpu = int(open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()[36])
            out[t] = (comm, run, wait, slices, cpu)
        except OSError:
            pass
    return out


def my_cpu() -> int:
    return int(open("/proc/thread-self/stat").read().rsplit(")", 1)[1].split()[36])


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def main() -> None:
    port, pid, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    s = connect(port)
    rows = []
    for _ in range(n):
        before, c0 = tasks(pid), my_cpu()
        t = time.perf_counter()
        s.sendall(b"GET /8192 HTTP/1.1\r\nHost: x\r\n\r\n")
        raw = bytearray()
        while not raw.endswith(END):  # chunked: the last chunk; unframed: the close
            d = s.recv(262144)
            if not d:
                s.close()
                s = connect(port)
                break
            raw += d
        took = time.perf_counter() - t
        c1, after = my_cpu(), tasks(pid)
        moved = {}
        for k, v in after.items():
            if k in before and v[3] > before[k][3]:
                b = before[k]
                moved[f"{v[0]}:{k}"] = ((v[1] - b[1]) // 1000, (v[2] - b[2]) // 1000, v[3] - b[3], b[4], v[4])
        rows.append((took * 1e3, c0, c1, moved))
    rows.sort(key=lambda r: r[0])
    for r in rows[:: max(1, n // 40)]:
        threads = " ".join(f"{k}:run{v[0]}us,wait{v[1]}us,sl{v[2]},cpu{v[3]}->{v[4]}" for k, v in sorted(r[3].items()))
        print(f"{r[0]:.2f}ms client cpu{r[1]}->{r[2]} {threads}")


if __name__ == "__main__":
    main()
