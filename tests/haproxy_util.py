"""A real HAProxy (Debian's package) in front of a server under test, on loopback ports, with
its own configuration and an admin socket to read its counters. Started and stopped by PID.

HAProxy is what the founding report's health checks ran on: `option httpchk` every 100 ms,
`fall 2 rise 2`, `timeout check 300ms`. Its `show stat` CSV gives, for the backend's server,
the failed checks (`chkfail`), the UP→DOWN transitions (`chkdown`) and its status, and for the
frontend the 5xx answers clients saw (`hrsp_5xx`: HAProxy answers 503 when no server is up).
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from typing import Dict, Optional

from tests.helpers import wait_for

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
START_TIMEOUT = 10.0


def available() -> bool:
    return os.path.exists(HAPROXY)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HAProxy:
    """`haproxy -db` with a frontend on a free port (IPv4, and IPv6 `[::1]` on the same port
    with `ipv6=True`) and backend servers checked with `GET check_path`: `app` on
    `server_port`, plus `more_ports` as `app2`, `app3`…; `server_options` are added to each
    server line (`send-proxy`), `backend_options` to the backend (retries, redispatch).
    `check_path=None` is TCP mode (`mode tcp`, the bytes passed through, e.g. TLS to a server
    that terminates it) with connect-only checks."""

    def __init__(self, server_port: int, check_path: Optional[str], inter_ms: int = 100,
                 check_timeout_ms: int = 300, server_options: str = "",
                 more_ports: tuple = (), backend_options: str = "", ipv6: bool = False):
        self.dir = tempfile.mkdtemp(prefix="sg-haproxy-")
        self.port = free_port()
        servers = "\n".join(
            f"    server {name} 127.0.0.1:{port} check inter {inter_ms}ms fall 2 rise 2 "
            f"{server_options}"
            for name, port in [("app", server_port)]
            + [(f"app{i + 2}", p) for i, p in enumerate(more_ports)])
        v6_bind = f"\n    bind [::1]:{self.port}" if ipv6 else ""
        mode = "tcp" if check_path is None else "http"
        http_check = ("" if check_path is None else
                      f"    option httpchk GET {check_path}\n    http-check expect status 200\n")
        self.admin = os.path.join(self.dir, "admin.sock")
        cfg = os.path.join(self.dir, "haproxy.cfg")
        with open(cfg, "w") as f:
            f.write(f"""
global
    stats socket {self.admin} mode 600 level admin
    maxconn 4000

defaults
    mode {mode}
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout check {check_timeout_ms}ms

frontend fe
    bind 127.0.0.1:{self.port}{v6_bind}
    default_backend be

backend be
{http_check}{backend_options}
{servers}
""")
        self.proc = subprocess.Popen([HAPROXY, "-db", "-f", cfg], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        last = {}

        def up() -> bool:
            if self.proc.poll() is not None:
                out = self.proc.stdout.read().decode(errors="replace")
                raise AssertionError(f"haproxy exited with {self.proc.returncode}: {out}")
            last["row"] = row = self._server_row(quiet=True)
            return bool(row and row.get("status") == "UP")

        wait_for(up, "the server to come UP behind haproxy", START_TIMEOUT, interval=0.05,
                 context=lambda: f"last row: {last.get('row')}")

    def command(self, cmd: str) -> str:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(self.admin)
            s.sendall(cmd.encode() + b"\n")
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
        return b"".join(chunks).decode()

    def stats(self) -> Dict[str, Dict[str, str]]:
        """`show stat` rows by svname (FRONTEND, BACKEND, app)."""
        text = self.command("show stat").lstrip("# ")
        return {row["svname"]: row for row in csv.DictReader(io.StringIO(text))}

    def _server_row(self, quiet: bool = False, name: str = "app") -> Optional[Dict[str, str]]:
        try:
            return self.stats().get(name)
        except OSError:
            if quiet:
                return None
            raise

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR1)  # soft stop
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)
