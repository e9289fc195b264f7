"""Telling systemd what the server is doing (`Type=notify` / `Type=notify-reload` units):
`READY=1` once it serves, `RELOADING=1` during a reload (`HUP`), `STOPPING=1` when it stops,
and a `STATUS=` line. Sent as datagrams to `$NOTIFY_SOCKET` (a path, or `@name` for the
abstract namespace), as sd_notify(3) describes; without the variable nothing is sent. Never
raises: a server does not fail because its supervisor is gone.
"""

from __future__ import annotations

import os
import socket
import time


def notify(*fields: str) -> bool:
    """Send `fields` (e.g. "READY=1", "STATUS=serving") as one message; True if sent."""
    path = os.environ.get("NOTIFY_SOCKET")
    if not path:
        return False
    address = "\0" + path[1:] if path.startswith("@") else path
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
            s.sendto("\n".join(fields).encode(), address)
        return True
    except OSError:
        return False


def monotonic_usec() -> str:
    """The `MONOTONIC_USEC=` field systemd wants with `RELOADING=1`."""
    return f"MONOTONIC_USEC={time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000}"
