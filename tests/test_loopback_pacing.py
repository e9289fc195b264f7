"""A listener bound to a loopback address gives its connections a congestion control that does
not pace: where the system's default is BBR (which releases each connection's data on a pacing
timer), the server's side of a connection to 127.0.0.1 is on CUBIC or Reno, read from the
kernel with ``ss -tni`` while the connection is open. Where the default paces nothing the rule
has nothing to do and the test is skipped (the rule's own unit test in ``src/io/listen.rs``
sets BBR on a listener where the kernel has it).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.http_util import TIMEOUT

DEFAULT = Path("/proc/sys/net/ipv4/tcp_congestion_control")


def _server_side(port: int) -> str:
    """`ss -tni` of the established connections whose local port is the server's."""
    return subprocess.run(["ss", "-tniH", "state", "established", f"( sport = :{port} )"],
                          capture_output=True, text=True, timeout=TIMEOUT, check=True).stdout


def test_loopback_connection_does_not_pace(servers):
    default = DEFAULT.read_text().strip() if DEFAULT.exists() else ""
    if not default.startswith("bbr"):
        pytest.skip(f"the system's congestion control is {default or 'unknown'}, which does not pace")
    if shutil.which("ss") is None:
        pytest.skip("ss (iproute2) not installed")
    srv = servers.get("hello")
    with socket.create_connection(("127.0.0.1", srv.port), timeout=TIMEOUT) as c:
        c.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        assert c.recv(4096).startswith(b"HTTP/1.1 200"), "the server answers on that connection"
        out = _server_side(srv.port)
        assert out.strip(), "the server's side of the connection is listed"
        assert "bbr" not in out, f"the server's side still paces:\n{out}"
        assert "cubic" in out or "reno" in out, out
