"""S17c: a 64 MiB answer over an emulated lossy link, HTTP/3 beside HTTP/2 (root only).

Two network namespaces made here (bench/lossy_link.py: a veth pair with `tc netem loss 1%
delay 20ms` on the server's end, or, where the kernel has no netem, TUN devices and a
user-space forwarder that drops and delays the same way). sluicegate runs in one
(`--bind https:192.0.2.1:PORT --certfile --keyfile --http3`, apps/s14_https.py, whose
`/file/64MiB` is S1's 64 MiB file through `wsgi.file_wrapper`), the client in the other:

- HTTP/3: `h3load -n1 --expect-sha256 HEX https://192.0.2.1:PORT/file/64MiB`;
- HTTP/2: `curl -sk --http2 -o FILE`, and the file's SHA-256 compared here.

Each fetch gets a fresh server; reported per fetch: wall time, whether the body was byte-exact,
the server's RSS before the fetch and its peak RSS (VmHWM of every process of its session,
from /proc), and what the link delivered and dropped during the fetch. h3load's receive window
per stream is 16 MiB (`--h3-stream-window`): quinn's default, 1.25 MB, would cap a 20 ms link
near 11 MB/s by itself. The host's TCP congestion control (HTTP/2's sender) is printed: BBR
does not back off on random loss, CUBIC (quinn's default for QUIC) and Reno do. Without
`--http3` in the build only the HTTP/2 fetches run (and the report says so).

    sudo python3 benchmarks/run.py h3-lossy [--rounds 1] [--loss 1] [--delay-ms 20] [--both-ways]
                                            [--link auto|netem|tun] [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import procs
from bench.lossy_link import SRV_ADDR, Link, LinkError
from bench.s17 import H3LOAD, SLUICEGATE_PY, ensure_h3load, h3_json, has_http3

BENCH = Path(__file__).resolve().parent.parent
APPS = BENCH / "apps"
PATH = "/file/64MiB"


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--python", default=str(SLUICEGATE_PY), help="sluicegate's Python")
    ap.add_argument("--h3load", default=str(H3LOAD))
    ap.add_argument("--rounds", type=int, default=1, help="fetches per protocol (interleaved)")
    ap.add_argument("--loss", type=float, default=1.0, help="loss, percent")
    ap.add_argument("--delay-ms", type=float, default=20.0)
    ap.add_argument("--both-ways", action="store_true", help="loss and delay on the client's packets too")
    ap.add_argument("--link", choices=("auto", "netem", "tun"), default="auto")
    ap.add_argument("--timeout", type=float, default=900, help="limit of one fetch, seconds")
    ap.add_argument("--protocols", default="h3,h2")
    ap.add_argument("--h3-stream-window", type=int, default=16 << 20,
                    help="h3load's QUIC receive window per stream (quinn's default, 1.25 MB, caps a "
                         "20 ms link near 11 MB/s; browsers use several MB)")
    ap.add_argument("--out", default="", help="a directory for lossy.json")


def body_sha256() -> tuple[str, int]:
    sys.path.insert(0, str(APPS))
    import payloads

    p = payloads.body_path("64MiB")
    h = hashlib.sha256()
    with open(p, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest(), p.stat().st_size


def start_server(link: Link, py: str, port: int, cert: Path, key: Path, http3: bool) -> procs.ServerProcess:
    argv = ["ip", "netns", "exec", link.srv_ns, py, "-m", "sluicegate", "--bind", f"https:{SRV_ADDR}:{port}",
            "--certfile", str(cert), "--keyfile", str(key), *(["--http3"] if http3 else []), "s14_https:app"]
    env = dict(os.environ, PYTHONPATH=str(APPS))
    srv = procs.start("sluicegate", argv, APPS, env, port, BENCH / ".work" / "h3_lossy" / "sluicegate.log")
    # Ready when a hello world comes back inside the server's namespace (not over the link).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and srv.alive():
        r = subprocess.run(["ip", "netns", "exec", link.srv_ns, "curl", "-sk", "--max-time", "2",
                            f"https://{SRV_ADDR}:{port}/"], capture_output=True, timeout=30)
        if r.stdout == b"Hello, World!":
            return srv
        time.sleep(0.2)
    srv.stop()
    raise RuntimeError(f"sluicegate did not start in the namespace: {srv.log_tail()}")


def fetch_h3(link: Link, h3load: str, url: str, sha: str, timeout: float, window: int) -> dict:
    cmd = ["ip", "netns", "exec", link.cli_ns, h3load, "-n", "1", "--timeout", f"{timeout:g}",
           "--stream-window", str(window), "--expect-sha256", sha, url]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 60)
    wall = time.monotonic() - t0
    j = h3_json(r.stdout) or {}
    exact = r.returncode == 0 and j.get("ok") == 1
    return {"cmd": cmd, "seconds": wall, "exact": exact, "bytes": j.get("body_bytes"),
            "why": "" if exact else (j.get("first_problem") or r.stdout[-300:] + r.stderr[-300:])}


def fetch_h2(link: Link, url: str, sha: str, timeout: float, tmp: Path) -> dict:
    out = tmp / "h2.body"
    cmd = ["ip", "netns", "exec", link.cli_ns, "curl", "-sk", "--http2", "--max-time", f"{timeout:g}",
           "-o", str(out), "-w", "%{http_version} %{http_code} %{size_download} %{time_total}", url]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 60)
    wall = time.monotonic() - t0
    h = hashlib.sha256()
    if out.exists():
        with open(out, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        size = out.stat().st_size
        out.unlink()
    else:
        size = 0
    version = r.stdout.split()[0] if r.stdout.split() else "?"
    exact = r.returncode == 0 and version == "2" and h.hexdigest() == sha
    return {"cmd": cmd, "seconds": wall, "exact": exact, "bytes": size,
            "why": "" if exact else f"curl exit {r.returncode}, {r.stdout.strip()!r}, sha256 {h.hexdigest()[:16]}…"}


def one_fetch(link: Link, args, proto: str, port: int, cert: Path, key: Path, sha: str, tmp: Path,
              http3: bool, h3load: str) -> dict:
    srv = start_server(link, args.python, port, cert, key, http3)
    try:
        before = srv.sample()
        link_before = link.snapshot()
        url = f"https://{SRV_ADDR}:{port}{PATH}"
        m = fetch_h3(link, h3load, url, sha, args.timeout, args.h3_stream_window) if proto == "h3" else \
            fetch_h2(link, url, sha, args.timeout, tmp)
        after = srv.sample()
        m.update(proto=proto, rss_before=before.rss, peak_rss=after.peak_rss,
                 link=Link.describe(link_before, link.snapshot()) or link.counters())
        return m
    finally:
        srv.stop()


def tcp_cc() -> str:
    try:
        return Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    except OSError as e:
        return f"unknown ({e})"


def main(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        print("h3-lossy: network namespaces and tc need root")
        return 1
    http3, why = has_http3(args.python)
    protos = [p for p in args.protocols.split(",") if p in ("h3", "h2")]
    if not http3:
        print(f"h3-lossy: HTTP/3 skipped: {why}")
        protos = [p for p in protos if p == "h2"]
    h3load = ensure_h3load(args.h3load) if "h3" in protos else ""
    if "h3" in protos and not h3load:
        print("h3-lossy: h3load is missing (cargo build --release --manifest-path benchmarks/h3load/Cargo.toml)")
        return 1
    sha, size = body_sha256()
    link = Link(args.link, args.loss, args.delay_ms, args.both_ways)
    results = []
    try:
        try:
            desc = link.setup()
        except (LinkError, OSError) as e:
            print(f"h3-lossy: the link could not be made: {e}\n" + "\n".join(link.log))
            return 1
        print(f"link: {desc}")
        print(f"TCP congestion control (HTTP/2's sender, the host's): {tcp_cc()}; QUIC's is the server's own")
        if link.netem_error:
            print(f"  (netem refused: {link.netem_error})")
        with tempfile.TemporaryDirectory(prefix="h3-lossy-") as tmp:
            from bench.s17 import make_cert
            cert, key = make_cert(Path(tmp))
            for rnd in range(args.rounds):
                for proto in protos if rnd % 2 == 0 else protos[::-1]:
                    m = one_fetch(link, args, proto, procs.free_port(), cert, key, sha, Path(tmp), http3, h3load)
                    results.append(m)
                    print(f"round {rnd + 1} {'HTTP/3' if proto == 'h3' else 'HTTP/2'}: {m['seconds']:.2f} s, "
                          f"{'byte-exact' if m['exact'] else 'NOT exact: ' + m['why']}, {m['bytes']} bytes, "
                          f"server RSS {m['rss_before'] / 2**20:.1f} MiB before, peak {m['peak_rss'] / 2**20:.1f} MiB",
                          flush=True)
                    print(f"  link: {m['link']}\n  $ {' '.join(m['cmd'])}", flush=True)
    finally:
        link.teardown()
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "lossy.json").write_text(json.dumps({"link": desc, "netem_error": link.netem_error, "tcp_cc": tcp_cc(),
                                                    "body_bytes": size,
                                                    "sha256": sha, "fetches": results, "log": link.log}, indent=1))
    return 0 if results and all(m["exact"] for m in results) else 1
