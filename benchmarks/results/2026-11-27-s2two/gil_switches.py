"""gil_switches.py THREADS SECONDS: S2's app called from THREADS threads at once in one process
(no server); per call: CPU µs and the process's voluntary and involuntary context switches
(/proc/self/task/*/status). With two threads, a voluntary switch per GIL-releasing system call
would show the waiting thread woken at each of the app's ten windows."""
import os, re, sys, threading, time
sys.path.insert(0, "/work/main/benchmarks/apps")
import s2_static
ENV = {"PATH_INFO": "/read/file_21324.bin", "REQUEST_METHOD": "GET"}
def sr(status, headers, exc_info=None):
    return None
def switches():
    v = nv = 0
    for t in os.listdir("/proc/self/task"):
        st = open(f"/proc/self/task/{t}/status").read()
        v += int(re.search(r"\nvoluntary_ctxt_switches:\s+(\d+)", st).group(1))
        nv += int(re.search(r"nonvoluntary_ctxt_switches:\s+(\d+)", st).group(1))
    return v, nv
k, secs = int(sys.argv[1]), float(sys.argv[2])
stop, counts = [False], [0] * k
def work(i):
    while not stop[0]:
        for _ in range(50):
            s2_static.app(dict(ENV), sr)
        counts[i] += 50
ts = [threading.Thread(target=work, args=(i,)) for i in range(k)]
for t in ts:
    t.start()
time.sleep(0.3)  # the counts are taken while every thread runs (an ended thread's /proc entry is gone)
v0, c0, n0 = switches(), time.process_time(), sum(counts)
time.sleep(secs)
v1, c1, n1 = switches(), time.process_time(), sum(counts)
stop[0] = True
for t in ts:
    t.join()
n = n1 - n0
print(f"{k} threads: {n} calls, {(c1 - c0) * 1e6 / n:.1f} us CPU/call, voluntary {(v1[0] - v0[0]) / n:.2f}/call, involuntary {(v1[1] - v0[1]) / n:.2f}/call")
