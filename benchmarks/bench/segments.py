"""Count the TCP payload segments a server sends per HTTP response (tcpdump on lo).

Owns S4's third measurement, and is usable alone:
    benchmarks/segments.sh http://127.0.0.1:8000/pong [--requests 50] [--new-connections | --close]
prints one JSON object: requests, segments, segments_per_response, payload bytes per response,
and how many payload segments carried the server's FIN. With `--close` every request says
`Connection: close`, as ab's HTTP/1.0 requests do in effect: a server that knows it closes can
send its FIN in the answer's segment (one segment fewer per connection) instead of after it.
A server that writes the status line, each header and the body with separate send() calls puts
them in separate segments (BaseHTTPServer's unbuffered wfile: one per header), which costs the
client a wake-up each and lets a health checker see a truncated answer. Only segments carrying
payload from the server's port are counted (no SYN/FIN/ACK-only). IPv4 loopback only; needs
root for tcpdump: without it the result says "skipped" and why.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import rawhttp  # noqa: E402

# IPv4 total length minus IP header minus TCP header: the TCP payload length.
PAYLOAD_FILTER = "(((ip[2:2] - ((ip[0]&0xf)<<2)) - ((tcp[12]&0xf0)>>2)) != 0)"


def count_segments(port: int, path: str = "/", requests: int = 20, new_connections: bool = False,
                   close: bool = False) -> dict:
    if os.geteuid() != 0:
        return {"skipped": "tcpdump needs root"}
    if not shutil.which("tcpdump"):
        return {"skipped": "tcpdump not installed (benchmarks/setup.sh)"}
    filt = f"tcp and src host 127.0.0.1 and src port {port} and {PAYLOAD_FILTER}"
    argv = ["tcpdump", "-i", "lo", "-nn", "-l", "-s", "96", "-B", "8192", "--immediate-mode", filt]
    dump = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        if not _wait_listening(dump, 10.0):
            return {"skipped": "tcpdump did not start within 10 s"}
        statuses, wire = [], 0
        conn = rawhttp.Connection(port, timeout=10)
        try:
            for _ in range(requests):
                r = conn.request("GET", path, headers={"Connection": "close"} if close else None)
                statuses.append(r.status)
                wire += r.wire_bytes
                if new_connections:
                    conn.close()
        finally:
            conn.close()
        time.sleep(0.3)  # let tcpdump read the last packets before it is stopped
    finally:
        try:
            os.killpg(dump.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        try:
            out, _err = dump.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(dump.pid, signal.SIGKILL)
            out, _err = dump.communicate()
    # Lines look like `... Flags [FP.], seq 1:490, ack 83, ..., length 489`.
    segs = [(m.group(1), int(m.group(2))) for m in re.finditer(rb"Flags \[([^\]]*)\].*?length (\d+)", out)]
    lengths = [n for _, n in segs]
    return {"requests": requests, "segments": len(lengths),
            "fin_in_payload_segments": sum(1 for flags, _ in segs if b"F" in flags),
            "segments_per_response": round(len(lengths) / requests, 2),
            "payload_bytes_per_response": round(sum(lengths) / requests, 1),
            "wire_bytes_per_response": round(wire / requests, 1),
            "statuses": sorted(set(statuses)), "new_connections": new_connections or close,
            "connection_close": close}


def _wait_listening(dump: subprocess.Popen, timeout: float) -> bool:
    """Read tcpdump's stderr unbuffered until it says it is capturing."""
    fd = dump.stderr.fileno()
    seen = b""
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    try:
        while b"listening on" not in seen:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(timeout=left):
                return False
            chunk = os.read(fd, 4096)
            if not chunk:
                return False
            seen += chunk
        return True
    finally:
        sel.close()


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("url", help="http://127.0.0.1:PORT/PATH")
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--new-connections", action="store_true", help="one connection per request")
    ap.add_argument("--close", action="store_true",
                    help="one connection per request, each asking `Connection: close` (the server closes)")


def main(args: argparse.Namespace) -> int | None:
    u = urlsplit(args.url)
    if u.hostname not in ("127.0.0.1", "localhost") or not u.port:
        raise SystemExit("segments: give http://127.0.0.1:PORT/PATH (IPv4 loopback only)")
    res = count_segments(u.port, (u.path or "/") + (f"?{u.query}" if u.query else ""), args.requests,
                         args.new_connections, args.close)
    print(json.dumps(res))
    return 1 if "skipped" in res else 0
