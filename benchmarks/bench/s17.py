"""S17: HTTP/3 beside sluicegate's own HTTP/2 over TLS (BENCHMARKS.md, "The scenarios").

- S17a, multiplexing: one QUIC connection, 100 concurrent streams of S5's sleeping app
  (`h3load -c1 -m100 -n N`); the ideal is 1,000 req/s (100 streams / 0.1 s), the target
  ≥ 900. Beside it the same over HTTP/2 with TLS (`h2load -c1 -m100`, h2 by ALPN).
- S17b, hello world, 16 connections × 10 streams: `h3load -c16 -m10 -D S` against
  `h2load -c16 -m10 -D S` over TLS; the targets are ≥ 0.8× HTTP/2's req/s at ≤ 1.3× its
  server CPU per request.

One sluicegate per run, started fresh from this work tree's `.venv` (or `--python`) with
`--bind https:127.0.0.1:PORT --certfile --keyfile --http3` (an ECDSA P-256 certificate made
here as S14 makes it), so both protocols are served by the same command line and only the
client's protocol differs. Rounds are interleaved (the order rotates), and each row records
requests/s, the server's CPU per request (user + system of every process in its session, from
/proc, over the measured run) and its peak RSS, and the load client's own CPU per request
(from the children's rusage: a client near one core's worth would be the limit, not the server). Bytes are checked: h3load checks the SHA-256
of every answer's body (a wrong body is a failure, not a fast answer); h2load's DATA byte
count must be whole bodies for the answers it counted, every status 2xx; and a fetch
(h3load -n1 for HTTP/3, curl `--http2` over TLS for HTTP/2) must return the exact body before
and after each run. h3load is benchmarks/h3load (built here with cargo if missing); h2load
comes from Debian's `nghttp2-client`.

When the sluicegate build has no `--http3` (its `--help` lists none), the scenario says so
and stops without measuring anything (exit status 0).

    python3 benchmarks/run.py s17 [--rounds 3] [--seconds 5] [--s17a-requests 3000] [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench import procs
from bench.s15 import check_h2load

BENCH = Path(__file__).resolve().parent.parent
APPS = BENCH / "apps"
SLUICEGATE_PY = BENCH.parent / ".venv" / "bin" / "python"
H3LOAD_DIR = BENCH / "h3load"
H3LOAD = H3LOAD_DIR / "target" / "release" / "h3load"
OPENSSL = "/usr/bin/openssl"

# case -> (app, its exact body)
CASE_APPS = {"S17a": ("s5_sleepy:app", b"HelloWorld"), "S17b": ("s6_hello:app", b"Hello, World!")}
TITLES = {"S17a": "100 streams of S5's app on one connection (-c1 -m100)",
          "S17b": "hello world, 16 connections x 10 streams (-c16 -m10)"}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--python", default=str(SLUICEGATE_PY), help="sluicegate's Python (its build needs --http3)")
    ap.add_argument("--h3load", default=str(H3LOAD), help="the h3load binary (built with cargo if missing)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5, help="length of each S17b run")
    ap.add_argument("--s17a-requests", type=int, default=3000, help="requests of each S17a run")
    ap.add_argument("--cases", default="S17a,S17b", help="which of S17a,S17b")
    ap.add_argument("--out", default="", help="a directory for results.json (empty: print only)")


def has_http3(py: str) -> tuple[bool, str]:
    """Does this sluicegate build take `--http3`? (yes/no, and why not)."""
    try:
        r = subprocess.run([py, "-m", "sluicegate", "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"{py} -m sluicegate --help: {e}"
    if r.returncode != 0:
        return False, f"{py} -m sluicegate --help exited {r.returncode}: {r.stderr.strip()[-300:]}"
    if not re.search(r"^\s*--http3\b", r.stdout, re.M):
        return False, f"this sluicegate build ({py}) has no --http3 option (its --help lists none)"
    return True, ""


def ensure_h3load(path: str) -> str:
    """The h3load binary: `path` if it exists, else built from benchmarks/h3load ("" if that fails)."""
    if Path(path).exists():
        return path
    if Path(path) != H3LOAD or not shutil.which("cargo"):
        return ""
    print(f"building h3load: cargo build --release --manifest-path {H3LOAD_DIR / 'Cargo.toml'}", flush=True)
    r = subprocess.run(["cargo", "build", "--release", "--manifest-path", str(H3LOAD_DIR / "Cargo.toml")])
    return str(H3LOAD) if r.returncode == 0 and H3LOAD.exists() else ""


def make_cert(d: Path) -> tuple[Path, Path]:
    """A self-signed ECDSA P-256 certificate for 127.0.0.1, as S14 makes it."""
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-days", "2", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


def sluicegate_argv(py: str, app: str, port: int, cert: Path, key: Path) -> list[str]:
    return [py, "-m", "sluicegate", "--bind", f"https:127.0.0.1:{port}", "--certfile", str(cert),
            "--keyfile", str(key), "--http3", app]


def h3_json(out: str) -> dict | None:
    """h3load's JSON line (its last line), or None."""
    lines = out.strip().splitlines()
    try:
        return json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None


def check_h3load(j: dict | None, out: str) -> str:
    """Why h3load's run is not a verified one ("" if it is)."""
    if j is None:
        return "h3load printed no JSON: " + out.strip()[-300:]
    if not j["verified"]:
        return "h3load checked no body"
    if j["errors"] or j["bad_status"] or j["len_mismatch"] or j["sha_mismatch"] or not j["done"]:
        return (f"{j['done']} done, {j['errors']} errors, {j['bad_status']} bad status, "
                f"{j['len_mismatch'] + j['sha_mismatch']} wrong bodies: {j['first_problem']}")
    return ""


def fetch_check(proto: str, url: str, body: bytes, h3load: str) -> str:
    """One fetch over `proto` ("h3" or "h2"): "" if the body is exactly `body`."""
    if proto == "h3":
        r = subprocess.run([h3load, "-n", "1", "--timeout", "10", "--expect-sha256",
                            hashlib.sha256(body).hexdigest(), url], capture_output=True, text=True, timeout=60)
        return "" if r.returncode == 0 else "h3 fetch: " + check_h3load(h3_json(r.stdout), r.stdout)
    r = subprocess.run(["curl", "-sk", "--http2", "--max-time", "20", "-o", "-", "-w", "\n%{http_version}", url],
                       capture_output=True, timeout=60)
    got, _, version = r.stdout.rpartition(b"\n")
    if r.returncode != 0 or version != b"2":
        return f"h2 fetch: curl exit {r.returncode}, HTTP version {version.decode(errors='replace')!r}"
    return "" if got == body else f"h2 fetch: body of {len(got)} bytes, expected {len(body)}"


def command(proto: str, case: str, url: str, body: bytes, args: argparse.Namespace, h3load: str) -> list[str]:
    load = ["-c1", "-m100", "-n", str(args.s17a_requests)] if case == "S17a" else \
        ["-c16", "-m10", "-D", f"{round(args.seconds * 1000)}ms"]
    if proto == "h3":
        return [h3load, *load, "--expect-sha256", hashlib.sha256(body).hexdigest(), url]
    return ["h2load", *load, url]


def _wait_h3(url: str, body: bytes, h3load: str, srv: procs.ServerProcess, deadline: float) -> str:
    """Wait until the UDP side answers a fetch ("" once it has)."""
    why = "no attempt"
    while time.monotonic() < deadline and srv.alive():
        why = fetch_check("h3", url, body, h3load)
        if not why:
            return ""
        time.sleep(0.2)
    return why


def measure(argv: list[str], proto: str, case: str, cmd: list[str], port: int, h3load: str) -> dict:
    """Start sluicegate, warm up, verify, run `cmd`, verify again, stop: the run's figures."""
    body = CASE_APPS[case][1]
    url = f"https://127.0.0.1:{port}/"
    env = dict(os.environ, PYTHONPATH=str(APPS))
    srv = procs.start(f"sluicegate-{case}-{proto}", argv, APPS, env, port, BENCH / ".work" / "s17" / "sluicegate.log")
    try:
        if not procs.wait_port(port, time.monotonic() + 20, srv):
            return {"why": f"sluicegate did not start: {srv.log_tail()}"}
        why = _wait_h3(url, body, h3load, srv, time.monotonic() + 20)
        if why:
            return {"why": f"HTTP/3 not answering: {why} | {srv.log_tail()}"}
        warm = [h3load, "-c1", "-m10", "-n", "200", url] if proto == "h3" else \
            ["h2load", "-c1", "-m10", "-n", "200", url]
        subprocess.run(warm, capture_output=True, timeout=120)
        why = fetch_check(proto, url, body, h3load)
        if why:
            return {"why": f"before the run: {why}"}
        before, kids = srv.sample().cpu_s, resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
        sample, kids_after = srv.sample(), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = sample.cpu_s - before
        client_cpu = kids_after.ru_utime + kids_after.ru_stime - kids.ru_utime - kids.ru_stime
        if proto == "h3":
            j = h3_json(out)
            why = check_h3load(j, out)
            rate, done = (j["req_per_s"], j["ok"]) if j else (0.0, 0)
            p99 = j["latency_ms"]["p99"] if j else None
            dgrams = (j["udp_tx_datagrams"], j["udp_rx_datagrams"]) if j else (0, 0)
        else:
            why = check_h2load(out, body)
            m = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out)
            d = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out)
            rate, done, p99 = (float(m.group(1)) if m else 0.0), (int(d.group(1)) if d else 0), None
            dgrams = None
        why = why or fetch_check(proto, url, body, h3load)
        return {"why": why, "rate": rate, "done": done, "cpu_us": cpu / done * 1e6 if done else 0.0,
                "client_cpu_us": client_cpu / done * 1e6 if done else 0.0, "peak_rss": sample.peak_rss,
                "p99_ms": p99, "datagrams_per_req": [round(x / done, 3) for x in dgrams] if dgrams and done else None}
    finally:
        srv.stop()


def _median_row(vals: list[dict]) -> dict:
    by_rate = sorted(vals, key=lambda v: v["rate"])
    mid = by_rate[len(by_rate) // 2]
    return {"rate": mid["rate"], "rate_lo": by_rate[0]["rate"], "rate_hi": by_rate[-1]["rate"],
            "cpu_us": statistics.median(v["cpu_us"] for v in vals),
            "client_cpu_us": statistics.median(v.get("client_cpu_us", 0.0) for v in vals),
            "peak_rss": max(v["peak_rss"] for v in vals), "runs": len(vals)}


def summary(cases: list[str], rows: dict, cmds: dict) -> list[str]:
    """The medians table, the HTTP/3 ÷ HTTP/2 ratios and the targets, as lines."""
    lines = []
    med = {k: _median_row(v) for k, v in rows.items() if v}
    for case in cases:
        lines.append(f"{case}: {TITLES[case]}")
        for proto in ("h3", "h2"):
            m = med.get((case, proto))
            name = {"h3": "HTTP/3 (h3load)", "h2": "HTTP/2 TLS (h2load)"}[proto]
            if not m:
                lines.append(f"  {name:<20} failed in every round   $ {' '.join(cmds[(case, proto)])}")
                continue
            lines.append(f"  {name:<20} {m['rate']:>9,.0f} req/s ({m['rate_lo']:,.0f}-{m['rate_hi']:,.0f})  "
                         f"{m['cpu_us']:7.1f} us CPU/req (client {m['client_cpu_us']:.1f})  peak RSS {m['peak_rss'] / 2**20:.1f} MiB  "
                         f"$ {' '.join(cmds[(case, proto)])}")
        h3, h2 = med.get((case, "h3")), med.get((case, "h2"))
        if h3 and h2 and h2["rate"] and h2["cpu_us"]:
            rr, cr = h3["rate"] / h2["rate"], h3["cpu_us"] / h2["cpu_us"]
            lines.append(f"  HTTP/3 / HTTP/2: {rr:.2f}x req/s, {cr:.2f}x CPU per request")
            if case == "S17b":
                ok = "met" if rr >= 0.8 and cr <= 1.3 else "NOT met"
                lines.append(f"  target (>= 0.8x req/s at <= 1.3x CPU per request): {ok}")
        if case == "S17a" and h3:
            lines.append(f"  target (>= 900 req/s over HTTP/3): {'met' if h3['rate'] >= 900 else 'NOT met'}")
    return lines


def main(args: argparse.Namespace) -> int:
    ok, why = has_http3(args.python)
    if not ok:
        print(f"S17 skipped: {why}. Build a sluicegate with HTTP/3 (./dev build) or point --python at one.")
        return 0
    h3load = ensure_h3load(args.h3load)
    if not h3load or not shutil.which("h2load"):
        print("S17: h3load (cargo build --release --manifest-path benchmarks/h3load/Cargo.toml) "
              "or h2load (apt-get install nghttp2-client) is missing")
        return 1
    cases = [c.strip() for c in args.cases.split(",") if c.strip() in CASE_APPS]
    port = procs.free_port()
    url = f"https://127.0.0.1:{port}/"
    with tempfile.TemporaryDirectory(prefix="s17-") as tmp:
        cert, key = make_cert(Path(tmp))
        runs = [(c, p) for c in cases for p in ("h3", "h2")]
        cmds = {(c, p): command(p, c, url, CASE_APPS[c][1], args, h3load) for c, p in runs}
        rows: dict[tuple[str, str], list[dict]] = {r: [] for r in runs}
        for rnd in range(args.rounds):
            k = rnd % len(runs)
            for case, proto in runs[k:] + runs[:k]:
                argv = sluicegate_argv(args.python, CASE_APPS[case][0], port, cert, key)
                m = measure(argv, proto, case, cmds[(case, proto)], port, h3load)
                label = f"{case} {'HTTP/3' if proto == 'h3' else 'HTTP/2 TLS'}"
                if m["why"]:
                    print(f"round {rnd + 1}: {label}: FAILED: {m['why']}", flush=True)
                    continue
                rows[(case, proto)].append(m)
                print(f"round {rnd + 1}: {label}: {m['rate']:,.0f} req/s, {m['cpu_us']:.1f} us CPU/req "
                      f"(client {m['client_cpu_us']:.1f}), "
                      f"peak RSS {m['peak_rss'] / 2**20:.1f} MiB ({m['done']} requests, bytes verified)", flush=True)
    lines = summary(cases, rows, cmds)
    print(f"\nS17, medians of {args.rounds} rounds; sluicegate: {' '.join(sluicegate_argv('PY', 'APP', port, 'CERT', 'KEY')[1:])}")
    print("\n".join(lines))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "s17.json").write_text(json.dumps(
            {"rows": {f"{c} {p}": v for (c, p), v in rows.items()},
             "commands": {f"{c} {p}": cmds[(c, p)] for c, p in runs}, "summary": lines}, indent=1))
    return 0
