"""S16: behind nginx as deployments run it. Debian's nginx, one worker, plain HTTP on loopback,
in front of each server (one worker process each), `wrk -t1 -cCONNS` against nginx:

- (a) `proxy` — `proxy_pass http://127.0.0.1:PORT;` with nginx's defaults: HTTP/1.0 to the
  upstream and a new upstream connection for every request (response buffering on);
- (b) `keepalive` — `proxy_pass` to an `upstream` block with `keepalive 64`,
  `proxy_http_version 1.1` and an empty `Connection` header: upstream connections are kept;
- (c) `uwsgi tcp` and `uwsgi unix` — `uwsgi_pass` (Debian's `uwsgi_params`) over TCP and over a
  unix socket, for the servers that speak the uwsgi protocol (sluicegate, uWSGI); nginx opens a
  new upstream connection for every request here too.

Two answers: hello world (S6's app) and the 21,324-byte file read and returned by the app
(S2's `/read/` path). Each server runs once per answer with every listener it needs (HTTP on
TCP; the uwsgi protocol on TCP and on a unix socket where it speaks it); one nginx holds a server
block per (server, mode). Rounds are interleaved: in each round the order of the servers
rotates. Per run: req/s, p99, the server's CPU time per request (user + system of its process
tree, from /proc), nginx's, and wrk's own (bench/loadgen.py reads it); from the last two, the
ceiling: the rate a server that cost nothing would reach, nginx's one worker on one core at most
and nginx and wrk on every core (`ceiling`). Bytes are verified: every (server, mode) answers
one full fetch through nginx compared with the expected body before the runs, and wrk's byte
count must match the verified response size during them (bench/loadgen.py). Socket errors and
timeouts do not stop the run: they are counted beside the figure (uWSGI with one thread serves
one kept connection at a time, so in mode (b) nginx's other pooled connections wait on it).

    python3 benchmarks/run.py s16 [--rounds 3] [--seconds 5] [--conns 64] \
        [--modes proxy,keepalive,uwsgi-tcp,uwsgi-unix] [--cases hello,21k] \
        [--servers sluicegate,uwsgi,bjoern,granian,gunicorn-gthread] [--out results/DIR]
    SLUICEGATE_BASE_PY=/base/.venv/bin/python python3 benchmarks/run.py s16 \
        --servers sluicegate,sluicegate-base,...     (a before/after of two builds in the run)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH / "apps"))
sys.path.insert(0, str(BENCH))
import payloads  # noqa: E402
import servers  # noqa: E402
from bench import procs  # noqa: E402
from bench.harness import PEERS, SG, env_for, fetch_wire, wait_ready  # noqa: E402
from bench.loadgen import wrk  # noqa: E402

NGINX = "/usr/sbin/nginx"
UWSGI_PARAMS = "/etc/nginx/uwsgi_params"
MODES = ("proxy", "keepalive", "uwsgi-tcp", "uwsgi-unix")
UWSGI_MODES = ("uwsgi-tcp", "uwsgi-unix")
SPEAKS_UWSGI = ("sluicegate", "sluicegate-base", "uwsgi")
ALL_SERVERS = ("sluicegate", "uwsgi", "bjoern", "granian", "gunicorn-gthread")


def cases() -> dict[str, tuple[str, str, bytes]]:
    """name -> (app module, path, expected body)."""
    return {
        "hello": ("s6_hello", "/", payloads.HELLO),
        "21k": ("s2_static", f"/read/{payloads.S2_SMALL}", payloads.static_path().read_bytes()),
    }


def launch(name: str, module: str, d: str, ports: dict[str, int]) -> tuple[list[str], str, dict]:
    """(argv, settings, environment) of `name` serving `module` on every listener it has in `ports`."""
    app = f"{module}:app"
    http, utcp, unix = ports["http"], ports.get("uwsgi-tcp"), f"{d}/{name}.sock"
    if name in ("sluicegate", "sluicegate-base"):
        # sluicegate-base: another build ($SLUICEGATE_BASE_PY), for a before/after in one run.
        py = SG if name == "sluicegate" else servers.SLUICEGATE_BASE_PY
        if py is None:
            raise SystemExit("sluicegate-base needs SLUICEGATE_BASE_PY (the other build's python)")
        argv = [str(py), "-m", "sluicegate", "--bind", f"127.0.0.1:{http}",
                "--bind", f"uwsgi:127.0.0.1:{utcp}", "--bind", f"uwsgi:unix:{unix}", app]
        return argv, "defaults; --bind HOST:PORT, uwsgi:HOST:PORT, uwsgi:unix:PATH", env_for(argv[0])
    if name == "uwsgi":
        # One process, one thread, as the scenario's figures were taken: --http-socket speaks
        # HTTP/1.0 (one request per connection), --http11-socket keeps connections (mode b).
        argv = [str(PEERS / "uwsgi"), "--master", "--die-on-term", "--http-socket",
                f"127.0.0.1:{http}", "--http11-socket", f"127.0.0.1:{ports['http11']}",
                "--socket", f"127.0.0.1:{utcp}", "--socket", unix, "--chmod-socket=666",
                "--processes", "1", "--threads", "1", "--module", app,
                "--chdir", str(servers.APPS), "--pythonpath", str(servers.APPS),
                "--disable-logging", "--need-app", "--listen", "1024", "--tcp-nodelay"]
        return argv, ("--processes 1 --threads 1 --http-socket (a), --http11-socket (b), "
                      "--socket TCP and unix (c), --tcp-nodelay"), env_for(argv[0])
    server = servers.SERVERS[name]
    target = servers.Target(module, "/", b"")
    spec = server.launch(target, http)
    return spec.argv, spec.settings, spec.env


def modes_of(name: str, modes: tuple[str, ...]) -> list[str]:
    return [m for m in modes if m not in UWSGI_MODES or name in SPEAKS_UWSGI]


def nginx_conf(d: str, blocks: dict[tuple[str, str], tuple[int, str]]) -> str:
    """nginx.conf with one server block per (server, mode): listen port -> upstream target."""
    out = []
    for i, ((name, mode), (port, target)) in enumerate(blocks.items()):
        if mode == "proxy":
            inner = f"proxy_pass http://{target};"
        elif mode == "keepalive":
            out.append(f"    upstream up{i} {{ server {target}; keepalive 64; }}")
            inner = ("proxy_pass http://up" + str(i) + ";\n            proxy_http_version 1.1;"
                     '\n            proxy_set_header Connection "";')
        else:
            inner = f"include {UWSGI_PARAMS};\n            uwsgi_pass {target};"
        out.append(f"""    server {{  # {name} {mode}
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            {inner}
        }}
    }}""")
    user = "user root;" if os.getuid() == 0 else ""
    temp = "\n".join(f"    {t}_temp_path {d}/{t};" for t in ("client_body", "proxy", "uwsgi",
                                                           "fastcgi", "scgi"))
    return f"""{user}
daemon off;
worker_processes 1;
worker_rlimit_nofile 20000;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    keepalive_requests 1000000000;
{temp}
{chr(10).join(out)}
}}
"""


def start_all(case: str, names: list[str], modes: tuple[str, ...], d: str):
    """Start every server and one nginx; return (server procs, nginx proc, blocks, settings)."""
    module = cases()[case][0]
    started, blocks, settings = {}, {}, {}
    for name in names:
        ports = {"http": procs.free_port(), "uwsgi-tcp": procs.free_port(),
                 "http11": procs.free_port()}
        argv, settings[name], env = launch(name, module, d, ports)
        log = Path(d) / f"{name}.log"
        started[name] = procs.start(name, argv, servers.APPS, env, ports["http"], log)
        wait_ready(f"127.0.0.1:{ports['http']}", time.monotonic() + 40)
        for mode in modes_of(name, modes):
            target = {"proxy": f"127.0.0.1:{ports['http']}",
                      "keepalive": f"127.0.0.1:{ports['http11' if name == 'uwsgi' else 'http']}",
                      "uwsgi-tcp": f"127.0.0.1:{ports['uwsgi-tcp']}",
                      "uwsgi-unix": f"unix:{d}/{name}.sock"}[mode]
            blocks[(name, mode)] = (procs.free_port(), target)
    for sock in Path(d).glob("*.sock"):
        os.chmod(sock, 0o666)
    conf = Path(d) / "nginx.conf"
    conf.write_text(nginx_conf(d, blocks))
    nginx = procs.start("nginx", [NGINX, "-c", str(conf), "-p", d], Path(d), dict(os.environ),
                        0, Path(d) / "nginx.out")
    for port, _ in blocks.values():
        wait_ready(f"127.0.0.1:{port}", time.monotonic() + 20)
    return started, nginx, blocks, settings


def ceiling(nginx_us: float, client_us: float) -> float | None:
    """The rate a server that cost nothing would reach behind this nginx on this machine, at
    the CPU per request nginx and wrk spent: nginx's one worker can use one core at most, and
    nginx and wrk together every core."""
    if nginx_us <= 0:
        return None
    return min(1e6 / nginx_us, (os.cpu_count() or 1) * 1e6 / (nginx_us + client_us))


def run_case(case: str, names: list[str], modes: tuple[str, ...], rounds: int, seconds: float,
             conns: int, first: int = 0, warmup_s: float = 0.0) -> dict:
    """{"name | mode": medians and every round's figures}; `first` rotates the first round's
    order (the suite's round number), so that no server always runs first."""
    _, path, expect = cases()[case]
    d = tempfile.mkdtemp(prefix="sg-s16-")
    os.chmod(d, 0o755)
    started, nginx, blocks, settings = start_all(case, names, modes, d)
    try:
        res = {f"{n} | {m}": {"rps": [], "p50_ms": [], "p99_ms": [], "server_us": [], "nginx_us": [],
                              "client_us": [], "requests": [], "errors": []}
               for n, m in blocks}
        notes: dict[str, list[str]] = {key: [] for key in res}
        wrong: set[str] = set()  # answered wrong bytes: failed, no figure
        sizes = {}
        for (name, mode), (port, _) in blocks.items():
            try:
                size, body = fetch_wire(port, path)
            except (OSError, ValueError) as e:
                size, body = 0, f"{type(e).__name__}: {e}".encode()
            if body != expect:
                wrong.add(f"{name} | {mode}")
                notes[f"{name} | {mode}"].append(f"verification fetch through nginx: wrong body "
                                                 f"({len(body)} bytes)")
            sizes[(name, mode)] = size
        for mode in modes:
            order = [n for n in names if (n, mode) in blocks and f"{n} | {mode}" not in wrong]
            for name in order if warmup_s else ():
                wrk(f"http://127.0.0.1:{blocks[(name, mode)][0]}{path}", conns, warmup_s, None)
            for r in range(rounds):
                k = (first + r) % len(order) if order else 0
                for name in order[k:] + order[:k]:
                    port, _ = blocks[(name, mode)]
                    pids, npids = started[name].pids(), nginx.pids()
                    b, nb = procs.cpu_seconds(pids), procs.cpu_seconds(npids)
                    out = wrk(f"http://127.0.0.1:{port}{path}", conns, seconds, sizes[(name, mode)])
                    a, na = procs.cpu_seconds(pids), procs.cpu_seconds(npids)
                    key = f"{name} | {mode}"
                    if not out.verified and out.rps is not None:
                        wrong.add(key)
                        notes[key].append(f"round {r + 1}: wrong bytes: {out.note}")
                        continue
                    if out.errors or not out.requests:
                        # Kept, and shown beside the figure: a server that times out under
                        # this load is a result, not a reason to drop the others'.
                        notes[key].append(f"round {r + 1}: {out.note or 'no request completed'}")
                        print(f"  S16 {case} {mode} round {r + 1} {name}: {out.note}", flush=True)
                        if not out.requests:
                            continue
                    m = res[key]
                    m["rps"].append(out.rps)
                    m["requests"].append(out.requests)
                    m["errors"].append(out.errors)
                    m["p50_ms"].append(out.detail["p50_us"] / 1000)
                    m["p99_ms"].append(out.detail["p99_us"] / 1000)
                    m["server_us"].append((a - b) * 1e6 / out.requests)
                    m["nginx_us"].append((na - nb) * 1e6 / out.requests)
                    m["client_us"].append(out.detail["client_cpu_s"] * 1e6 / out.requests)
                    print(f"  S16 {case} {mode} round {r + 1} {name}: {out.rps:,.0f} req/s, "
                          f"server {m['server_us'][-1]:.1f} µs/req", flush=True)
        return {key: {"settings": settings[key.split(" | ")[0]], "notes": notes[key],
                      "failed": key in wrong,
                      **{k: statistics.median(v) if v else 0.0 for k, v in m.items()}, "rounds": m}
                for key, m in res.items()}
    finally:
        nginx.stop()
        for p in started.values():
            p.stop()


MODE_TITLES = {"proxy": "(a) proxy_pass defaults: a new upstream connection each",
               "keepalive": "(b) proxy_pass, upstream keepalive",
               "uwsgi-tcp": "(c) uwsgi_pass over TCP", "uwsgi-unix": "(c) uwsgi_pass over a unix socket"}
ANSWERS = {"hello": "hello world", "21k": "21 KiB file read by the app"}
CONNS = 64


def suite_round(h, rnd: int, names: list[str]) -> dict[str, tuple[str, str]]:
    """One round of S16 inside the suite (`run.py --standing`): every server of the run but the
    anchor behind one nginx, the answers and modes of `h.mode.s16_plan`, one wrk run of
    `h.mode.wrk_s` each after a warm-up, the order rotated by the round. Adds a Record per
    (answer, mode, server); returns the servers' names it used (all of the suite's own)."""
    from bench.harness import Record

    names = [n for n in names if servers.SERVERS[n].kind != "anchor"]
    for case, modes in h.mode.s16_plan:
        title = ANSWERS[case]
        try:
            res = run_case(case, names, modes, 1, h.mode.wrk_s, CONNS, first=rnd - 1,
                           warmup_s=h.mode.warmup_s)
        except (SystemExit, OSError, RuntimeError) as e:
            for name in names:
                for mode in modes_of(name, modes):
                    h.add(Record("S16", f"{title}, {MODE_TITLES[mode]}", name, rnd, "req/s", "higher",
                                 status="failed", note=f"the case did not run: {e}"))
            continue
        for key, m in res.items():
            name, mode = key.split(" | ")
            rec = Record("S16", f"{title}, {MODE_TITLES[mode]}", name, rnd, "req/s", "higher",
                         settings=m["settings"], note="; ".join(m["notes"]))
            r = m["rounds"]
            if m["failed"] or not r["rps"]:
                rec.status = "failed"
                rec.note = rec.note or "no request completed"
            else:
                rec.value, rec.requests, rec.errors = r["rps"][0], r["requests"][0], r["errors"][0]
                rec.cpu_us_per_req, rec.verified = r["server_us"][0], True
                rec.extra = {"nginx_us_per_req": r["nginx_us"][0], "client_us_per_req": r["client_us"][0],
                             "ceiling_rps": ceiling(r["nginx_us"][0], r["client_us"][0]),
                             "p50_us": r["p50_ms"][0] * 1000,
                             "p99_us": r["p99_ms"][0] * 1000}
            h.add(rec)
    return {}


def table(results: dict, modes: tuple[str, ...]) -> list[str]:
    lines = ["| answer | mode | server | req/s | × best peer | p99 ms | server µs/req | nginx µs/req "
             "| errors |", "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for case, by in results.items():
        for mode in modes:
            rows = {k.split(" | ")[0]: v for k, v in by.items() if k.endswith(f"| {mode}")}
            peers = [v["rps"] for n, v in rows.items() if not n.startswith("sluicegate")]
            for name, v in sorted(rows.items(), key=lambda kv: -kv[1]["rps"]):
                ratio = (f"{v['rps'] / max(peers):.2f}" if name.startswith("sluicegate") and peers else "")
                lines.append(f"| {case} | {mode} | {name} | {v['rps']:,.0f} | {ratio} | "
                             f"{v['p99_ms']:.2f} | {v['server_us']:.1f} | {v['nginx_us']:.1f} | "
                             f"{'; '.join(v['notes']) or '0'} |")
    return lines


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--cases", default="hello,21k")
    ap.add_argument("--servers", default=",".join(ALL_SERVERS))
    ap.add_argument("--out", type=Path)


def main(args: argparse.Namespace) -> int | None:
    procs.raise_fd_limit()
    modes = tuple(m for m in args.modes.split(",") if m)
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise SystemExit(f"unknown mode(s) {bad}; known: {', '.join(MODES)}")
    names = [n for n in args.servers.split(",") if n]
    results = {}
    for case in args.cases.split(","):
        results[case] = run_case(case, names, modes, args.rounds, args.seconds, args.conns)
    command = (f"python3 benchmarks/run.py s16 --rounds {args.rounds} --seconds {args.seconds:g} "
               f"--conns {args.conns} --modes {args.modes} --cases {args.cases} "
               f"--servers {args.servers}")
    head = [f"S16 behind nginx (1 worker): wrk -t1 -c{args.conns} -d{args.seconds:g}s against nginx, "
            f"{args.rounds} rounds interleaved, medians; × best peer: sluicegate's req/s over the "
            "best peer's in the same mode (another build of sluicegate is no peer)", ""]
    report = "\n".join(head + table(results, modes) + ["", f"command: {command}"])
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "s16.json").write_text(json.dumps(results, indent=1))
        (args.out / "s16.md").write_text(report + "\n")
    return None
