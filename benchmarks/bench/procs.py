"""Server processes: start in a session of their own, wait until ready, measure, stop by PID.

Owns everything that touches a server's processes: the launch (new session, raised fd limit,
log to a file), readiness (the port accepts and a probe returns the expected bytes), the
server's own CPU time and memory read from /proc for every process of its session (workers,
Apache children as www-data, all threads), and the bounded stop (SIGTERM to the process group,
then SIGKILL to every process left in the session). Nothing here knows about scenarios.

Why /proc and the session: on a 2-core machine the load generator often saturates first, so the
server's own CPU time per request is the figure that separates servers; a server may fork
(uWSGI master + worker, Apache + its daemon process), so all processes of its session count.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
FD_TARGET = 65536  # wanted for S5/S7; the machine's hard limit may be lower (20,000 here)
STOP_WAIT_S = 5.0  # SIGTERM grace before SIGKILL


def raise_fd_limit() -> int:
    """Raise RLIMIT_NOFILE (inherited by servers, wrk and the idle-connection holder)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = FD_TARGET if hard == resource.RLIM_INFINITY else min(FD_TARGET, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(want, hard) if hard != resource.RLIM_INFINITY else hard))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A port free now and never handed out before by this process. A port handed out is not
    bound at once (S16 chooses nginx's ports while it starts its servers one by one): a second
    call could return it again, and nginx then could not bind it and exited."""
    for _ in range(1000):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
    raise OSError("no port free that this process has not handed out already")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    return raw[raw.rindex(")") + 2 :].split()


def session_pids(sid: int) -> list[int]:
    """Every live process whose session id is `sid` (the server's whole tree)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        f = _stat_fields(int(entry))
        # fields after comm: state(0) ppid(1) pgrp(2) session(3)
        if f is not None and int(f[3]) == sid and f[0] != "Z":
            pids.append(int(entry))
    return pids


def cpu_seconds(pids: list[int]) -> float:
    """user + system time of the processes (all their threads), seconds."""
    total = 0
    for pid in pids:
        f = _stat_fields(pid)
        if f is not None:
            total += int(f[11]) + int(f[12])  # utime, stime (fields 14, 15 of stat)
    return total / CLK_TCK


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_bytes(pids: list[int], peak: bool) -> int:
    """Sum over processes of VmHWM (peak=True) or VmRSS, bytes."""
    key = "VmHWM" if peak else "VmRSS"
    return sum(_status_kb(p, key) for p in pids) * 1024


@dataclass
class Sample:
    cpu_s: float
    rss: int
    peak_rss: int
    nprocs: int


@dataclass
class ServerProcess:
    """A running server: its session leader, port and log."""

    name: str
    popen: subprocess.Popen
    port: int
    log: Path
    extra_pids: list[int] = field(default_factory=list)

    @property
    def sid(self) -> int:
        return self.popen.pid

    def pids(self) -> list[int]:
        return session_pids(self.sid)

    def sample(self) -> Sample:
        pids = self.pids()
        return Sample(cpu_seconds(pids), rss_bytes(pids, False), rss_bytes(pids, True), len(pids))

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, n: int = 5) -> str:
        try:
            lines = [ln for ln in self.log.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return " | ".join(lines[-n:])[-600:]

    def stop(self) -> None:
        stop_session(self.popen, self.sid)


def stop_session(popen: subprocess.Popen, sid: int) -> None:
    """SIGTERM the process group, wait STOP_WAIT_S, then SIGKILL whatever is left in the session."""
    try:
        os.killpg(sid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        if popen.poll() is not None and not session_pids(sid):
            break
        time.sleep(0.05)
    for pid in session_pids(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        popen.wait(timeout=STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        pass


def start(name: str, argv: list[str], cwd: Path, env: dict[str, str], port: int, log: Path) -> ServerProcess:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        popen = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return ServerProcess(name, popen, port, log)


def wait_port(port: int, deadline: float, proc: ServerProcess | None = None) -> bool:
    while time.monotonic() < deadline:
        if proc is not None and not proc.alive():
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False
