"""strace attached to a running server for part of a test: which system calls a request
made (one send per small response, `sendfile` for a file). Skips the test where strace is
missing or ptrace is not permitted."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess

import pytest

from tests.helpers import wait_for
from tests.http_util import TIMEOUT, WaitTimeout

WRITE_CALLS = "sendmsg,sendmmsg,sendto,write,writev,pwrite64,pwritev,pwritev2,sendfile"


@contextlib.contextmanager
def straced(pid: int, out: str, calls: str = WRITE_CALLS):
    """strace `pid` into `out` (see `strace_attach`) for the body of the `with`, then detach."""
    tracer = strace_attach(pid, out, calls)
    try:
        yield
    finally:
        tracer.send_signal(signal.SIGINT)  # detaches from the server
        try:
            tracer.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            tracer.kill()
            tracer.wait()


def strace_attach(pid: int, out: str, calls: str = WRITE_CALLS) -> subprocess.Popen:
    """strace every thread of `pid` (and threads started later), writes only unless `calls`
    says otherwise; returns once attached, or skips the test when strace is missing or ptrace
    is not permitted."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed (the one-syscall check needs it; ./dev test "
                    "installs it as root)")
    proc = subprocess.Popen(["strace", "-f", "-qq", "-s", "65536", "-e", f"trace={calls}",
                             "-o", out, "-p", str(pid)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    # strace prints "Process N attached" when ptrace worked; with -qq it prints nothing then,
    # so wait for the output file to appear instead (strace opens it before attaching) and for
    # the attach to be visible in /proc (TracerPid of every thread).
    def attached() -> bool:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace")
            pytest.skip(f"strace cannot attach (ptrace not permitted?): {err.strip()}")
        tracers = []
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/status") as f:
                    tracers.append(int(re.search(r"TracerPid:\s+(\d+)", f.read()).group(1)))
            except FileNotFoundError:
                continue
        return bool(tracers) and all(t == proc.pid for t in tracers)

    try:
        wait_for(attached, "strace to attach to every thread", TIMEOUT)
    except WaitTimeout:
        proc.kill()
        pytest.skip("strace did not attach within the deadline")
    return proc
