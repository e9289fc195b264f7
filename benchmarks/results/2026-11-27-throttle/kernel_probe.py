"""A thread computing 400 calls of 0.3 ms of CPU (every 50th sleeps 2 ms), run inside a cgroup with a
CPU quota: for each call longer than 1 ms on the wall, its wall and CPU time, its voluntary and
involuntary context switches (getrusage RUSAGE_THREAD) and its run delay (schedstat), in ms.

    mkdir /sys/fs/cgroup/cpu/P; echo 10000 > /sys/fs/cgroup/cpu/P/cpu.cfs_quota_us
    sh -c 'echo $$ > /sys/fs/cgroup/cpu/P/cgroup.procs; exec python3 kernel_probe.py'
"""
import resource
import time


def sched():
    with open('/proc/thread-self/schedstat') as f:
        return int(f.read().split()[1])
slowcalls=[]
for i in range(400):
    r0=resource.getrusage(resource.RUSAGE_THREAD); c0=time.clock_gettime(time.CLOCK_THREAD_CPUTIME_ID); w0=time.monotonic(); d0=sched()
    x=0
    while time.clock_gettime(time.CLOCK_THREAD_CPUTIME_ID)-c0 < 0.0003: x+=1
    if i%50==49: time.sleep(0.002)
    r1=resource.getrusage(resource.RUSAGE_THREAD); c1=time.clock_gettime(time.CLOCK_THREAD_CPUTIME_ID); w1=time.monotonic(); d1=sched()
    if w1-w0>0.001: slowcalls.append((round((w1-w0)*1e3,2), round((c1-c0)*1e3,2), r1.ru_nvcsw-r0.ru_nvcsw, r1.ru_nivcsw-r0.ru_nivcsw, round((d1-d0)/1e6,2)))
print("wall_ms cpu_ms nvcsw nivcsw run_delay_ms")
for s in slowcalls[:30]: print(s)
print(len(slowcalls))
