"""S14: HTTPS. One ECDSA P-256 certificate (made here with `openssl`), one app
(apps/s14_https.py), one process per server with 4 threads, and side by side in one run:

- sluicegate serving TLS itself (`--bind https:… --certfile --keyfile`);
- nginx terminating TLS in front of plain sluicegate (`proxy_pass` over a unix socket with
  upstream keep-alive: what people do today);
- granian with TLS (`--ssl-certificate`, rustls like sluicegate);
- gunicorn gthread with `--certfile` (Python's `ssl`);
- nginx alone answering hello world over TLS (`return 200`): the reference for the cost of a
  handshake, measured in the two hello-world cases only.

Cases (each round runs every server in a rotating order; medians of the rounds):

- `hello`: hello world, `wrk -c64` keep-alive;
- `new-conn`: hello world, `ab -c16`, a new TLS connection (a full handshake: ab never resumes a
  session) for every request;
- `file21k`: the 21,324-byte file through `wsgi.file_wrapper`, `wrk -c64` keep-alive;
- `64MiB`: a 64 MiB response through `wsgi.file_wrapper`, `wrk -c4` keep-alive (runs of at
  least `BIG_MIN_SECONDS`).

Reported: requests/s, CPU µs per request of the whole chain (the server's process tree, plus
nginx's where it terminates TLS in front) and its split, and the CPU of one full handshake:
µs per request of `new-conn` less µs per request of `hello` (what a request costs without a
handshake), for every server, nginx alone on the same certificate being the reference. Every wrk run is checked
by its byte count against a verified fetch; ab by its length check.

    python3 benchmarks/run.py s14 [--quick] [--rounds 3] [--seconds 5] [--out results/DATE-s14]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
APPS = BENCH / "apps"
sys.path.insert(0, str(APPS))
sys.path.insert(0, str(ROOT))
import payloads  # noqa: E402
from bench.harness import PEERS, SG, env_for, fetch_wire, wait_ready  # noqa: E402
from bench.loadgen import ab, wrk  # noqa: E402
from bench.procs import cpu_seconds, free_port, session_pids  # noqa: E402

THREADS = 4
APP = "s14_https:app"
NGINX = "/usr/sbin/nginx"
OPENSSL = "/usr/bin/openssl"

# case -> (path, expected body, load tool, connections)
CASES = {
    "hello": ("/", payloads.HELLO, "wrk", 64),
    "new-conn": ("/", payloads.HELLO, "ab", 16),
    "file21k": (f"/static/{payloads.S2_SMALL}", None, "wrk", 64),
    "64MiB": ("/file/64MiB", None, "wrk", 4),
}
# A 64 MiB response takes a good part of a second over TLS, more through nginx: its runs last
# at least this long and wait this long for an answer, so that every server completes some.
BIG_MIN_SECONDS = 10
BIG_TIMEOUT_S = 30
# The server that is only there for the handshake reference.
NGINX_ALONE = "nginx TLS alone (return 200)"


def make_cert(d: Path) -> tuple[Path, Path]:
    """A self-signed ECDSA P-256 certificate for 127.0.0.1 (PKCS#8 key: granian wants it)."""
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-days", "2", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


def nginx_conf(d: Path, cert: Path, key: Path, front_port: int, alone_port: int, upstream: str) -> Path:
    """One worker, TLS with the same certificate on two ports: in front of sluicegate, and alone."""
    for sub in ("logs", "tmp"):
        (d / sub).mkdir(exist_ok=True)
    user = "user root;" if os.getuid() == 0 else ""
    conf = d / "nginx.conf"
    conf.write_text(f"""{user}
daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/logs/error.log warn;
events {{ worker_connections 4096; multi_accept on; }}
http {{
    access_log off;
    keepalive_requests 1000000000;
    keepalive_timeout 120s;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    upstream sg {{ server {upstream}; keepalive 64; }}
    server {{
        listen 127.0.0.1:{front_port} ssl backlog=4096;
        location / {{
            proxy_pass http://sg;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_buffering off;
        }}
    }}
    server {{
        listen 127.0.0.1:{alone_port} ssl backlog=4096;
        location = / {{ default_type text/plain; return 200 "{payloads.HELLO.decode()}"; }}
    }}
}}
""")
    return conf


def servers(d: Path, cert: Path, key: Path) -> tuple[dict, tuple[int, int, str]]:
    """(name -> (argv, or None where nginx alone serves; the port clients use; settings),
    (nginx's port in front, nginx's port alone, the upstream sluicegate's unix socket))."""
    sg_port, gr_port, gu_port = free_port(), free_port(), free_port()
    front_port, alone_port = free_port(), free_port()
    sock = d / "sg.sock"
    table = {
        "sluicegate TLS": ([str(SG), "-m", "sluicegate", "--bind", f"https:127.0.0.1:{sg_port}",
                            "--certfile", str(cert), "--keyfile", str(key), "--threads",
                            f"1:{THREADS}", APP], sg_port, "--bind https: --certfile --threads 1:4"),
        "nginx TLS -> sluicegate": ([str(SG), "-m", "sluicegate", "--bind", f"unix:{sock}",
                                     "--threads", f"1:{THREADS}", APP], front_port,
                                    "nginx 1 worker, proxy_pass unix keepalive; --threads 1:4"),
        "granian TLS": ([str(PEERS / "granian"), "--interface", "wsgi", "--host", "127.0.0.1",
                         "--port", str(gr_port), "--workers", "1", "--blocking-threads", str(THREADS),
                         "--http", "1", "--no-ws", "--log-level", "warning", "--no-access-log",
                         "--ssl-certificate", str(cert), "--ssl-keyfile", str(key), "--working-dir",
                         str(APPS), APP], gr_port, "--workers 1 --blocking-threads 4 --ssl-*"),
        "gunicorn --certfile": ([str(PEERS / "gunicorn"), "-w", "1", "-k", "gthread", "--threads",
                                 str(THREADS), "--bind", f"127.0.0.1:{gu_port}", "--certfile",
                                 str(cert), "--keyfile", str(key), "--keep-alive", "120",
                                 "--log-level", "warning", "--chdir", str(APPS), APP], gu_port,
                                "-w 1 -k gthread --threads 4 --certfile"),
        NGINX_ALONE: (None, alone_port, "nginx 1 worker, return 200"),
    }
    base = os.environ.get("SLUICEGATE_BASE_PY")
    if base:
        # Another build of sluicegate, beside this one in the same rounds (a before/after).
        argv, _, note = table["sluicegate TLS"]
        port = free_port()
        argv = [base, *argv[1:]]
        argv[argv.index(f"https:127.0.0.1:{sg_port}")] = f"https:127.0.0.1:{port}"
        table["sluicegate-base TLS"] = (argv, port, note)
    return table, (front_port, alone_port, f"unix:{sock}")


def tree_pids(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [pid] + [int(p) for p in f.read().split()]
    except OSError:
        return [pid]


def tls_wire(port: int, path: str) -> tuple[int, bytes]:
    """(bytes of one whole response, its body) over TLS: fetch_wire through a TLS tunnel."""
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=60) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
        return fetch_wire(port, path, sock=s)


def expected(case: str) -> bytes:
    path, body, _, _ = CASES[case]
    if body is not None:
        return body
    if case == "file21k":
        return payloads.static_path().read_bytes()
    return payloads.body_path("64MiB").read_bytes()


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--quick", action="store_true", help="1 round of 2 s runs: proves it works")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--ab-requests", type=int, default=4000, help="requests of each ab run")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--servers", default="",
                    help="comma-separated names of the servers to measure (empty: all)")
    ap.add_argument("--cases", default="", help="comma-separated cases (empty: all)")


def run(args: argparse.Namespace) -> dict:
    payloads.ensure()
    d = Path(tempfile.mkdtemp(prefix="sg-s14-"))
    os.chmod(d, 0o755)
    cert, key = make_cert(d)
    table, (front_port, alone_port, upstream) = servers(d, cert, key)
    only = getattr(args, "only", None)  # the suite's run: the servers it has (None: all)
    table = {n: v for n, v in table.items() if only is None or n in only}
    first = getattr(args, "first", 0)  # the suite's round: rotates the first round's order
    big_s = getattr(args, "big_seconds", BIG_MIN_SECONDS)
    procs: dict[str, subprocess.Popen] = {}
    nginx = None
    try:
        for name, (argv, port, _) in table.items():
            if argv is not None:
                procs[name] = subprocess.Popen(argv, cwd=APPS, env=env_for(argv[0]),
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                               start_new_session=True)
        wait_ready(upstream, time.monotonic() + 40)
        os.chmod(upstream[5:], 0o666)
        nginx = subprocess.Popen([NGINX, "-c", str(nginx_conf(d, cert, key, front_port, alone_port,
                                                                 upstream)), "-p", str(d)],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        for name, (_, port, _) in table.items():
            wait_ready(f"127.0.0.1:{port}", time.monotonic() + 40)
        results: dict = {}
        for case, (path, _, tool, conns) in CASES.items():
            if getattr(args, "cases", "") and case not in args.cases.split(","):
                continue
            want = expected(case)
            names = [n for n in table if n != NGINX_ALONE or case in ("hello", "new-conn")]
            if getattr(args, "servers", ""):
                names = [n for n in names if n in args.servers.split(",")]
            sizes, notes, wrong = {}, {}, set()
            for name in names:
                try:
                    size, body = tls_wire(table[name][1], path)
                except (OSError, ValueError) as e:
                    size, body = 0, f"{type(e).__name__}: {e}".encode()
                if body != want:
                    wrong.add(name)
                    notes[name] = f"verification fetch: wrong body ({len(body)} bytes)"
                sizes[name] = size
            res = {n: {"rps": [], "server_us": [], "nginx_us": [], "requests": []} for n in names}
            measured = [n for n in names if n not in wrong]
            for r in range(args.rounds):
                k = (first + r) % len(measured) if measured else 0
                for name in measured[k:] + measured[:k]:
                    port = table[name][1]
                    own = session_pids(procs[name].pid) if name in procs else []
                    ng = tree_pids(nginx.pid) if "nginx" in name else []
                    b, nb = cpu_seconds(own), cpu_seconds(ng)
                    url = f"https://127.0.0.1:{port}{path}"
                    if tool == "wrk" and case == "64MiB":
                        out = wrk(url, conns, max(args.seconds, big_s), sizes[name],
                                  timeout_s=BIG_TIMEOUT_S)
                    elif tool == "wrk":
                        out = wrk(url, conns, args.seconds, sizes[name], timeout_s=10)
                    else:
                        out = ab(url, conns, args.ab_requests, len(want), time_limit=300)
                    a, na = cpu_seconds(own), cpu_seconds(ng)
                    if out.errors or not out.verified or not out.requests:
                        # Reported as n/a with the reason, the other servers still measured
                        # (gunicorn closes TLS without close_notify: ab's OpenSSL 3 counts
                        # every such answer as failed).
                        notes[name] = out.note or "errors"
                        print(f"  {case} round {r + 1} {name}: n/a ({notes[name]})", flush=True)
                        continue
                    res[name]["rps"].append(out.rps)
                    res[name]["requests"].append(out.requests)
                    res[name]["server_us"].append((a - b) * 1e6 / out.requests)
                    res[name]["nginx_us"].append((na - nb) * 1e6 / out.requests)
                    print(f"  {case} round {r + 1} {name}: {out.rps:,.0f} req/s, "
                          f"{(a - b + na - nb) * 1e6 / out.requests:.0f} µs CPU/req", flush=True)
            results[case] = {n: {"settings": table[n][2], "note": notes.get(n, ""), "failed": n in wrong,
                                 **{k: statistics.median(v) if v else None for k, v in m.items()},
                                 "rounds": m}
                             for n, m in res.items()}
        return results
    finally:
        if nginx is not None and nginx.poll() is None:
            nginx.send_signal(signal.SIGQUIT)
            try:
                nginx.wait(10)
            except subprocess.TimeoutExpired:
                nginx.kill()
        for p in procs.values():
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs.values():
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


# server of the S14 table -> (the suite's server name, kind)
SUITE_NAMES = {"sluicegate TLS": ("sluicegate", "ours"),
               "nginx TLS -> sluicegate": ("nginx TLS -> sluicegate", "peer"),
               "granian TLS": ("granian", "peer"), "gunicorn --certfile": ("gunicorn-gthread", "peer"),
               NGINX_ALONE: ("nginx", "anchor")}
CASE_TITLES = {"hello": "hello world, wrk -c64 (keep-alive)",
               "new-conn": "hello world, ab -c16 (a full TLS handshake each)",
               "file21k": "21 KiB file_wrapper, wrk -c64", "64MiB": "64 MiB file_wrapper, wrk -c4"}


def suite_round(h, rnd: int, names: list[str]) -> dict[str, tuple[str, str]]:
    """One round of S14 inside the suite (`run.py --standing`): the servers of the table whose
    server is in the run (nginx in front and nginx alone always), `h.mode.wrk_s` per wrk run, the
    order rotated by the round. Adds a Record per (case, server); returns the name it adds."""
    from bench.harness import Record

    only = {n for n, (suite, _) in SUITE_NAMES.items() if suite.split(" ")[0] in names or "nginx" in n}
    args = argparse.Namespace(rounds=1, seconds=h.mode.wrk_s, ab_requests=h.mode.s14_ab_requests,
                              first=rnd - 1, only=only, big_seconds=h.mode.s14_big_s)
    try:
        results = run(args)
    except (SystemExit, OSError, RuntimeError, subprocess.CalledProcessError) as e:
        results = {c: {n: {"failed": True, "note": f"the case did not run: {e}", "settings": "",
                           "rounds": {}} for n in only} for c in CASES}
    for case, by in results.items():
        for name, m in by.items():
            rec = Record("S14", CASE_TITLES[case], SUITE_NAMES[name][0], rnd, "req/s", "higher",
                         settings=m["settings"], note=m["note"])
            r = m["rounds"]
            if m["failed"] or not r.get("rps"):
                rec.status = "failed" if m["failed"] else "n/a"
                rec.note = rec.note or "no request completed"
            else:
                rec.value, rec.requests, rec.verified = r["rps"][0], r["requests"][0], True
                rec.cpu_us_per_req = r["server_us"][0] + r["nginx_us"][0]
                rec.extra = {"nginx_us_per_req": r["nginx_us"][0]}
            h.add(rec)
    return {"nginx TLS -> sluicegate": ("peer", "nginx terminating TLS in front of plain sluicegate (unix socket, keepalive)")}


def report(results: dict, args: argparse.Namespace) -> str:
    lines = [f"S14 HTTPS (ECDSA P-256): {args.rounds} round(s) interleaved, wrk -t1 "
             f"-d{args.seconds:g}s, ab -c16 -n{args.ab_requests}; medians", "",
             "| case | server | req/s | chain CPU µs/req | of which nginx |", "|---|---|---:|---:|---:|"]
    for case, by in results.items():
        for name, m in by.items():
            if m["rps"] is None:
                lines.append(f"| {case} | {name} | n/a | n/a | {m['note'][:80]} |")
                continue
            chain = m["server_us"] + m["nginx_us"]
            lines.append(f"| {case} | {name} | {m['rps']:,.0f} | {chain:.1f} | "
                         f"{m['nginx_us']:.1f} |")
    hs = []
    # The handshake's cost needs both cases (a run narrowed by --cases may lack one).
    both = results.get("new-conn", {}).keys() & results.get("hello", {}).keys()
    for name in (n for n in results.get("new-conn", {}) if n in both):
        new, kept = results["new-conn"][name], results["hello"][name]
        if new["rps"] is None or kept["rps"] is None:
            hs.append(f"| {name} | n/a | n/a | n/a |")
            continue
        per_new = new["server_us"] + new["nginx_us"]
        per_kept = kept["server_us"] + kept["nginx_us"]
        hs.append(f"| {name} | {per_new:.0f} | {per_kept:.1f} | {per_new - per_kept:.0f} |")
    lines += ["", "Server CPU per full handshake (new-conn µs/req less keep-alive hello µs/req):", "",
              "| server | new-conn µs/req | keep-alive µs/req | handshake µs |", "|---|---:|---:|---:|",
              *hs]
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int | None:
    if args.quick:
        args.rounds, args.seconds, args.ab_requests = 1, 2, 1000
    results = run(args)
    text = report(results, args)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "s14.json").write_text(json.dumps(results, indent=1))
        cmd = " ".join(["python3 benchmarks/run.py s14", *sys.argv[2:]])
        (args.out / "s14.md").write_text(text + f"\n\ncommand: {cmd}\n")
    return None
