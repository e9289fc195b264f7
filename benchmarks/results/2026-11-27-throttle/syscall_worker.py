"""Inside a cgroup of 0.1 CPU: 200 one-byte writes to /dev/null (each a return from a system call,
where 6.18 stops a throttled thread), then a little Python arithmetic, for 4 s. See
syscall_sampler.py."""
import os, time
fd = os.open("/dev/null", os.O_WRONLY)
end = time.monotonic() + 4
while time.monotonic() < end:
    for _ in range(200):
        os.write(fd, b"x")   # a syscall, then back to user space
    x = 0
    for i in range(2000):
        x += i
