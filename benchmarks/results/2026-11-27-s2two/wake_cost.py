"""wake_cost.py N: what one hand-off between two threads of one Python process costs on this
machine: two threads pass a byte back and forth over two pipes N times (each pass: a write that
wakes the other thread, asleep in read with the GIL released, and the GIL taken again by it).
Prints wall µs per pass and CPU µs per pass (both threads)."""
import os, sys, threading, time
n = int(sys.argv[1])
a_r, a_w = os.pipe(); b_r, b_w = os.pipe()
def echo():
    for _ in range(n):
        os.read(a_r, 1); os.write(b_w, b"x")
t = threading.Thread(target=echo); t.start()
c0, w0 = time.process_time(), time.perf_counter()
for _ in range(n):
    os.write(a_w, b"x"); os.read(b_r, 1)
t.join()
c1, w1 = time.process_time(), time.perf_counter()
print(f"{(w1 - w0) * 1e6 / (2 * n):.1f} us wall, {(c1 - c0) * 1e6 / (2 * n):.1f} us CPU per hand-off")
