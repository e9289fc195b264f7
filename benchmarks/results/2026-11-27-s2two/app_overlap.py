"""S2's app (`/read/file_21324.bin`) called with no server: one thread against two or four threads
calling it at once in one process (the overlap granian's blocking threads get: one thread in
`open`/`read`/`stat`, GIL released, while another runs Python). Interleaved rounds; per round and
mode: calls/s (wall), CPU µs per call (all threads), cores used.

    python app_overlap.py [ROUNDS] [SECONDS]
"""
import sys, threading, time
sys.path.insert(0, "/work/main/benchmarks/apps")
import s2_static

ENV = {"PATH_INFO": "/read/file_21324.bin", "REQUEST_METHOD": "GET"}


def start_response(status, headers, exc_info=None):
    return None


def worker(stop, counts, i):
    app = s2_static.app
    n = 0
    while not stop[0]:
        for _ in range(50):
            body = app(dict(ENV), start_response)
            assert len(body[0]) == 21324
        n += 50
    counts[i] = n


def run(threads, seconds):
    stop, counts = [False], [0] * threads
    ts = [threading.Thread(target=worker, args=(stop, counts, i)) for i in range(threads)]
    c0, w0 = time.process_time(), time.perf_counter()
    for t in ts:
        t.start()
    time.sleep(seconds)
    stop[0] = True
    for t in ts:
        t.join()
    c1, w1 = time.process_time(), time.perf_counter()
    n = sum(counts)
    return n / (w1 - w0), (c1 - c0) * 1e6 / n, (c1 - c0) / (w1 - w0)


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 2
    sys.setswitchinterval(0.005)
    modes = [1, 2, 4]
    for r in range(rounds):
        for k in modes[r % 3:] + modes[:r % 3]:
            rate, cpu, cores = run(k, secs)
            print(f"round {r} threads {k}: {rate:8.0f} calls/s  {cpu:6.1f} us CPU/call  {cores:4.2f} cores", flush=True)
