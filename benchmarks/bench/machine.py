"""What a report must state to be reproducible: machine, kernel, tools, versions, limits.

Owns the collection of that context (nproc, CPU model, memory, kernel, Python, the load tools'
versions, every server's version and install outcome, the fd limit, the sluicegate commit). A
ratio measured on a 2-core machine shared with compilers only means something with these beside it.
"""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import servers


def _out(argv: list[str], pattern: str | None = None) -> str | None:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (p.stdout + p.stderr).strip()
    if pattern:
        m = re.search(pattern, text)
        return m.group(1) if m else None
    return text.splitlines()[0] if text else None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mem_total_gib() -> float | None:
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        return round(kb / 2**20, 1)
    except (OSError, AttributeError):
        return None


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def collect(server_names: list[str]) -> dict:
    repo = servers.BENCH.parent
    commit = _out(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"])
    dirty = _out(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"])
    install_path = servers.WORK / "install.json"
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {
            "nproc": os.cpu_count(),
            "cpu": cpu_model(),
            "memory_gib": mem_total_gib(),
            "kernel": platform.release(),
            "os": _out(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"]),
            "loadavg_at_start": loadavg(),
            "fd_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            "somaxconn": _read("/proc/sys/net/core/somaxconn"),
        },
        "python": platform.python_version(),
        "tools": {
            "wrk": _out(["wrk", "-v"], r"wrk (\S+)"),
            "ab": _out(["ab", "-V"], r"Version (\S+)"),
            "httperf": _out(["dpkg-query", "-W", "-f=${Version}", "httperf"]),
            "tcpdump": _out(["tcpdump", "--version"], r"tcpdump version (\S+)"),
        },
        "sluicegate_commit": (commit or "?") + ("+dirty" if dirty else ""),
        "servers": {
            name: {
                "version": servers.SERVERS[name].version(),
                "available": servers.SERVERS[name].available()[0],
                "why_not": servers.SERVERS[name].available()[1],
                "describe": servers.SERVERS[name].describe,
            }
            for name in server_names
        },
        "install": json.loads(install_path.read_text()) if install_path.exists() else {},
        "settings": {
            "fast_threads": servers.FAST_THREADS,
            "blocking_threads": servers.BLOCKING_THREADS,
            "keepalive_s": servers.KEEPALIVE_S,
            "backlog": servers.BACKLOG,
            "max_connections": servers.MAX_CONNECTIONS,
        },
    }


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None
