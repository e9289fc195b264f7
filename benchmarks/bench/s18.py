"""S18: each server in a container with a CPU limit, as the kernel enforces one (a CFS quota in
a cgroup: v1's `cpu` controller here, v2's `cpu.max` where the machine has it), one worker
process each, beside the same server without a limit:

- `hello`: S6's hello world, `wrk -t1 -c16` (5 s), then `h2load --h1 -c16` (5 s) for the
  latency each request saw ("as sent"; wrk's percentiles count coordinated-omission samples:
  `as_sent`);
- `s5`: S5's sleeping app (yields, sleeps 0.1 s, yields) at 1,000 clients;
- `django`: S13's Django view on PostgreSQL (`/item/4242`, `CONN_MAX_AGE` 60: a connection per
  thread, kept), `wrk -c16`, the peers at 8 threads as in S13 (PostgreSQL outside the cgroup);
  then 16 clients again for as long with `every_request.py`: the p99 of every request sent,
  answered in the run or not, and the fewest answers one connection got (wrk counts only the
  requests answered: a server that serves some connections and leaves the others waiting, as
  uWSGI's `--http11-socket` does with one connection per thread, shows the p99 of the few);
- `paced`: 100 requests a second on one keep-alive connection for 5 s (a light load: p50/p99
  and the server's CPU per request);
- `idle`: the server's CPU over 5 s with no request.

Each server starts unconstrained, answers one verified request, then is moved (every thread)
into a cgroup limited to each of `--cpus` in turn, and once more with no limit for the
reference; what a server reads of its allowance at start then sees no quota. With `--inside`,
a fresh server is started inside each limit's cgroup instead, as in a container. Per run: req/s, p50/p99, the server's CPU per request (its process tree, /proc),
and the cgroup's throttled periods over the run (`cpu.stat`). For hello world the share of
the unconstrained rate a quota should give is min(1, quota / the cores the server used
unconstrained): `× share` is the rate over that. Then `--workers auto` started inside each
limit (sluicegate only; `--no-auto`: not): the workers it started. Rounds interleave the
servers. `--shares N`: the server's cgroup, and one made for this process (so PostgreSQL, the
load generator and a server before its move), are weighted like N/1024 tasks each (v1's
`cpu.shares`, v2's `cpu.weight`): on a machine other work loads, a quota then binds as on a
quiet one (`cpu.stat`'s throttled periods say whether it did); without it, a server starved
by the machine never reaches its quota, and the run measures the machine.

    python3 benchmarks/run.py s18 [--cpus 0.5,1,1.5] [--cases hello,s5,django,paced,idle]
        [--servers sluicegate,gunicorn-gthread,granian,uwsgi] [--rounds 3] [--out results/DIR]
        [--shares 8192] [--no-auto]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH / "apps"))
sys.path.insert(0, str(BENCH))
import payloads  # noqa: E402
import servers  # noqa: E402
from bench import procs  # noqa: E402
from bench import every_request, s13  # noqa: E402
from bench.harness import SG, fetch_wire, wait_ready  # noqa: E402
from bench.loadgen import wrk  # noqa: E402

V1 = Path("/sys/fs/cgroup/cpu")
V2 = Path("/sys/fs/cgroup")
ALL_SERVERS = ("sluicegate", "gunicorn-gthread", "granian", "uwsgi")
CASES = ("hello", "s5", "django", "paced", "idle")
APPS = {"hello": ("s6_hello", payloads.HELLO, False), "s5": ("s5_sleepy", b"HelloWorld", True),
        "django": ("s13_django", b"hello", False),
        "paced": ("s6_hello", payloads.HELLO, False), "idle": ("s6_hello", payloads.HELLO, False)}
PACED_RATE, PACED_S, IDLE_S = 100, 5.0, 5.0
CLIENTS = {"hello": 16, "s5": 1000, "django": 16}
DJANGO_CONN_MAX_AGE, DJANGO_PEER_THREADS = 60, 8  # S13's first group


class Cgroup:
    """One cgroup with a CPU quota (None: none), made under v1's `cpu` or v2's root."""

    def __init__(self, name: str, cpus: float | None, shares: int | None = None):
        if (V1 / "cpu.cfs_quota_us").exists():
            self.dir, self.v2 = V1 / name, False
        else:
            self.dir, self.v2 = V2 / name, True
        self.dir.mkdir(exist_ok=True)
        quota = -1 if cpus is None else int(cpus * 100_000)
        if self.v2:
            (self.dir / "cpu.max").write_text(f"{'max' if quota < 0 else quota} 100000")
        else:
            (self.dir / "cpu.cfs_period_us").write_text("100000")
            (self.dir / "cpu.cfs_quota_us").write_text(str(quota))
        if shares:  # v2's weight is v1's shares scaled: 1024 shares = weight 100
            weight = ("cpu.weight", max(1, min(10_000, shares * 100 // 1024))) if self.v2 \
                else ("cpu.shares", shares)
            (self.dir / weight[0]).write_text(str(weight[1]))

    def add(self, pids: list[int]) -> None:
        for pid in pids:
            try:
                (self.dir / "cgroup.procs").write_text(str(pid))
            except OSError:
                pass  # a process that ended meanwhile

    def throttled(self) -> int:
        for line in (self.dir / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "nr_throttled":
                return int(value)
        return 0

    def remove(self) -> None:
        try:
            self.dir.rmdir()
        except OSError:
            pass


def start(name: str, case: str, d: Path, cg: Cgroup | None = None):
    """The server `name` started unconstrained for `case`: (process, settings, the response's
    size on the wire, the path loaded)."""
    module, expect, blocking = APPS[case]
    probe, path, pool = "/", "/", None
    if case == "django":  # S13's app and database: PostgreSQL runs outside the cgroup
        s13._configure(DJANGO_CONN_MAX_AGE)
        probe, path = "/hello", s13.PATH
        pool = None if name.startswith("sluicegate") else DJANGO_PEER_THREADS
    target = servers.Target(module, probe, expect, blocking=blocking, pool=pool)
    port = procs.free_port()
    spec = servers.SERVERS[name].launch(target, port)
    argv = spec.argv if cg is None else [
        "/bin/sh", "-c", f'echo $$ > {cg.dir}/cgroup.procs && exec "$@"', "sh", *spec.argv]
    proc = procs.start(name, argv, spec.cwd, spec.env, port, d / f"{name}-{case}.log")
    wait_ready(f"127.0.0.1:{port}", time.monotonic() + 40)
    want = s13._expected(path) if case == "django" else expect
    size, body = fetch_wire(port, path)
    if body != want:
        proc.stop()
        raise SystemExit(f"S18: {name} answered {body[:40]!r}")
    return proc, spec.settings, size, path


def paced(port: int) -> tuple[int, float, float]:
    """PACED_RATE requests a second on one connection for PACED_S: (requests, p50 ms, p99 ms)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    lat, t0, n = [], time.monotonic(), int(PACED_RATE * PACED_S)
    for i in range(n):
        due = t0 + i / PACED_RATE
        time.sleep(max(0.0, due - time.monotonic()))
        a = time.perf_counter()
        c.request("GET", "/")
        c.getresponse().read()
        lat.append((time.perf_counter() - a) * 1000)
    c.close()
    lat.sort()
    return n, lat[len(lat) // 2], lat[int(len(lat) * 0.99) - 1]


def as_sent(port: int, connections: int, seconds: float, body: bytes, cg: "Cgroup") -> dict:
    """The latency each request saw, uncorrected: `h2load --h1` (closed loop, `connections`
    keep-alive connections, one thread) with its per-request log. wrk's percentiles add
    coordinated-omission samples (`stats_correct`: each response slower than the mean interval
    of a connection is counted again at every interval below it, as if requests had kept
    arriving meanwhile), so under a quota its p99 is the stop for any server; this is what the
    requests themselves waited. Every answer is checked: status 200 and the body's length."""
    log = Path(f"/tmp/s18-h2load-{os.getpid()}.log")
    log.unlink(missing_ok=True)
    thr0 = cg.throttled()
    out = subprocess.run(["h2load", "--h1", f"-c{connections}", "-t1", f"-D{seconds:g}",
                          f"--log-file={log}", f"http://127.0.0.1:{port}/"],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    thr = cg.throttled() - thr0
    rows = [line.split("\t") for line in log.read_text().splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    lat = sorted(int(r[2]) for r in rows if r[1] == "200")
    data = re.search(r"\((\d+)\) data", out)
    done = re.search(r"requests: \d+ total, (\d+) started, (\d+) done, (\d+) succeeded", out)
    # h2load's data count includes the answers to the requests in flight when it stopped
    ok = bool(lat) and done is not None and int(done.group(2)) == int(done.group(3)) == len(lat) \
        and data is not None and len(lat) * len(body) <= int(data.group(1)) <= int(done.group(1)) * len(body)
    if not lat:
        return {"sent_p99_ms": None, "sent_p50_ms": None, "sent_throttled": thr, "sent_verified": False}
    return {"sent_p50_ms": lat[len(lat) // 2] / 1000, "sent_p99_ms": lat[int(len(lat) * 0.99)] / 1000,
            "sent_over_10ms": sum(x > 10_000 for x in lat) / len(lat), "sent_rps": len(lat) / seconds,
            "sent_throttled": thr, "sent_verified": ok}


def every(port: int, path: str, cg: "Cgroup") -> dict:
    """Django's every-request run (`every_request.run`, the module doc): p50/p99 of every
    request sent in `CLIENTS['django']` keep-alive connections over 5 s, the unanswered ones
    counted with their whole wait, and the fewest answers on one connection."""
    thr0 = cg.throttled()
    e = every_request.run(port, path, s13._expected(path), CLIENTS["django"], 5)
    return {"sent_p50_ms": e.p50_us / 1000, "sent_p99_ms": e.p99_us / 1000, "sent_fewest": e.fewest,
            "sent_unanswered": e.unanswered, "sent_throttled": cg.throttled() - thr0,
            "sent_verified": e.wrong == 0 and e.requests > 0}


def switches(pids: list[int]) -> tuple[int, int]:
    """Voluntary and involuntary context switches of every thread of the processes so far."""
    vol = invol = 0
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                for line in (task / "status").read_text().splitlines():
                    if line.startswith("voluntary_ctxt_switches:"):
                        vol += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        invol += int(line.split()[1])
            except OSError:
                pass  # a thread that ended meanwhile
    return vol, invol


def one(proc, case: str, cg: Cgroup, size: int, path: str = "/") -> dict:
    pids = proc.pids()
    cg.add(pids)
    thr0, cpu0, sw0 = cg.throttled(), procs.cpu_seconds(pids), switches(pids)
    t0 = time.monotonic()
    out: dict = {}
    if case in CLIENTS:
        r = wrk(f"http://127.0.0.1:{proc.port}{path}", CLIENTS[case], 5, size, timeout_s=5.0)
        out = {"rps": r.rps or 0.0, "requests": r.requests, "errors": r.errors,
               "p50_ms": r.detail.get("p50_us", 0) / 1000, "p99_ms": r.detail.get("p99_us", 0) / 1000}
    elif case == "paced":
        n, p50, p99 = paced(proc.port)
        out = {"rps": PACED_RATE, "requests": n, "errors": 0, "p50_ms": p50, "p99_ms": p99}
    else:
        time.sleep(IDLE_S)
        out = {"rps": 0.0, "requests": 0, "errors": 0, "p50_ms": 0.0, "p99_ms": 0.0}
    wall = time.monotonic() - t0
    cpu = procs.cpu_seconds(proc.pids()) - cpu0
    sw = switches(proc.pids())
    out.update(cpu_s=cpu, cores_used=cpu / wall, throttled=cg.throttled() - thr0,
               vcsw=sw[0] - sw0[0], ivcsw=sw[1] - sw0[1],
               cpu_us_per_req=cpu * 1e6 / out["requests"] if out["requests"] else None)
    if case == "hello":
        out.update(as_sent(proc.port, CLIENTS[case], 5, APPS[case][1], cg))
    elif case == "django":
        out.update(every(proc.port, path, cg))
    return out


def workers_auto(cpus: float, d: Path) -> int:
    """Workers `sluicegate --workers auto` starts inside a cgroup of `cpus`."""
    cg = Cgroup(f"sg-s18-auto-{os.getpid()}", cpus)
    port = procs.free_port()
    argv = ["/bin/sh", "-c", f'echo $$ > {cg.dir}/cgroup.procs && exec "$@"', "sh", str(SG), "-m",
            "sluicegate", "--bind", f"127.0.0.1:{port}", "--workers", "auto", "s6_hello:app"]
    env = {**os.environ, "PYTHONPATH": str(servers.APPS)}
    proc = procs.start("auto", argv, servers.APPS, env, port, d / "auto.log")
    try:
        wait_ready(f"127.0.0.1:{port}", time.monotonic() + 60)
        time.sleep(1.0)
        with open(f"/proc/{proc.popen.pid}/task/{proc.popen.pid}/children") as f:
            return len(f.read().split())
    finally:
        proc.stop()
        time.sleep(0.5)
        cg.remove()


def _keep(res: dict, case: str, name: str, cpus: float | None, r: int, settings, m: dict) -> None:
    key = f"{case} | {name} | {'none' if cpus is None else cpus}"
    res.setdefault(key, {"settings": settings, "rounds": []})["rounds"].append(m)
    print(f"  S18 {key} round {r + 1}: {m['rps']:,.0f} req/s, p99 {m['p99_ms']:.2f} ms, "
          f"{m['cpu_us_per_req'] or 0:.1f} µs/req, throttled {m['throttled']}, "
          f"switches {m['vcsw']}/{m['ivcsw']} (vol/invol)", flush=True)


def _inside(res: dict, case: str, name: str, r: int, limits: list, d: Path, shares: int | None) -> None:
    """`--inside`: a fresh server per limit, started inside its cgroup (as in a container,
    where whatever the server reads of its allowance at start sees the quota)."""
    for cpus in limits:
        cg = Cgroup(f"sg-s18-{os.getpid()}-{'none' if cpus is None else cpus}", cpus, shares)
        proc, settings, size, path = start(name, case, d, cg)
        try:
            _keep(res, case, name, cpus, r, settings, one(proc, case, cg, size, path))
        finally:
            proc.stop()
            time.sleep(0.3)
            cg.remove()


def _weigh_self(shares: int | None) -> Cgroup | None:
    """`--shares`: this process (and so what it starts from now on) into a cgroup of that
    weight, without a quota (`_unweigh_self` takes it out again)."""
    if not shares:
        return None
    cg = Cgroup(f"sg-s18-load-{os.getpid()}", None, shares)
    cg.add([os.getpid()])
    return cg


def _unweigh_self(cg: Cgroup | None) -> None:
    """This process and what it started (a PostgreSQL that keeps running) back to the parent,
    then the weighted cgroup removed (a cgroup with processes in it cannot be)."""
    if cg is None:
        return
    for pid in [os.getpid()] + [int(p) for p in (cg.dir / "cgroup.procs").read_text().split()]:
        try:
            (cg.dir.parent / "cgroup.procs").write_text(str(pid))
        except OSError:
            pass  # a process that ended meanwhile
    cg.remove()


def run(args) -> dict:
    load = _weigh_self(args.shares)
    try:
        return _run(args)
    finally:
        _unweigh_self(load)


def _run(args) -> dict:
    limits: list[float | None] = [None] + [float(c) for c in args.cpus.split(",") if c]
    names = [n for n in args.servers.split(",") if n]
    d = Path(args.out or "/tmp") / "s18-logs"
    d.mkdir(parents=True, exist_ok=True)
    res: dict = {}
    for case in [c for c in args.cases.split(",") if c]:
        if case == "django" and not s13.available()[0]:
            print(f"  S18 django: not run ({s13.available()[1]})", flush=True)
            continue
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                if args.inside:
                    _inside(res, case, name, r, limits, d, args.shares)
                    continue
                proc, settings, size, path = start(name, case, d)
                try:
                    for cpus in limits:
                        cg = Cgroup(f"sg-s18-{os.getpid()}-{'none' if cpus is None else cpus}", cpus, args.shares)
                        _keep(res, case, name, cpus, r, settings, one(proc, case, cg, size, path))
                finally:
                    proc.stop()
                    time.sleep(0.3)
                    for cpus in limits:
                        Cgroup(f"sg-s18-{os.getpid()}-{'none' if cpus is None else cpus}", None).remove()
    for key, v in res.items():
        v.update({k: statistics.median([m[k] or 0.0 for m in v["rounds"]])
                  for k in ("rps", "p50_ms", "p99_ms", "cpu_us_per_req", "throttled", "cores_used", "errors",
                            "vcsw", "ivcsw")})
        if "sent_p99_ms" in v["rounds"][0]:
            v.update({k: statistics.median([m[k] or 0.0 for m in v["rounds"]])
                      for k in ("sent_p50_ms", "sent_p99_ms", "sent_over_10ms", "sent_fewest", "sent_throttled")
                      if k in v["rounds"][0]})
            v["sent_verified"] = all(m["sent_verified"] for m in v["rounds"])
    auto = {str(c): workers_auto(c, d) for c in limits if c is not None} \
        if "sluicegate" in names and not args.no_auto else {}
    print(f"  S18 --workers auto: {auto}", flush=True)
    return {"results": res, "workers_auto": auto}


def table(out: dict, cases: list[str], names: list[str], limits: list[str]) -> list[str]:
    """The run's table. Ratios are medians of each round's ratio (the rates of one round ran
    minutes apart at most, interleaved; a ratio of two medians would pair rounds the host's
    drift set apart), with the rounds' range."""
    res = out["results"]
    lines = ["| case | CPUs | server | req/s | × share | × best peer | p50 ms | p99 ms | µs/req "
             "(idle: CPU %) | throttled | p99 as sent ms (hello: over 10 ms; throttled · django: every "
             "request, fewest answers on a connection) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for case in [c for c in cases if any(k.startswith(f"{c} | ") for k in res)]:
        for lim in ["none"] + limits:
            peers = [res[f"{case} | {n} | {lim}"]["rounds"] for n in names
                     if not n.startswith("sluicegate") and f"{case} | {n} | {lim}" in res]
            for name in names:
                v = res.get(f"{case} | {name} | {lim}")
                if v is None:
                    continue
                share = ""
                base = res.get(f"{case} | {name} | none")
                if case == "hello" and lim != "none" and base:
                    share = _median_range([m["rps"] / (b["rps"] * min(1.0, float(lim) / b["cores_used"]))
                                           for m, b in zip(v["rounds"], base["rounds"])
                                           if b["rps"] and b["cores_used"]])
                best = ""
                if name == "sluicegate" and peers:
                    # Each round's best peer: the highest rate among the peers' runs of that round.
                    tops = [max(r) for r in zip(*([m["rps"] for m in rounds] for rounds in peers))]
                    best = _median_range([m["rps"] / top for m, top in zip(v["rounds"], tops) if top])
                cost = (f"{v['cores_used'] * 100:.2f} %" if case == "idle"
                        else f"{v['cpu_us_per_req'] or 0:.1f}")
                lines.append(f"| {case} | {lim} | {name} | {v['rps']:,.0f} | {share} | {best} | "
                             f"{v['p50_ms']:.2f} | {v['p99_ms']:.2f} | {cost} | {v['throttled']:.0f} | "
                             f"{_sent(v)} |")
    if out["workers_auto"]:
        lines += ["", "`--workers auto` inside the limit: " + ", ".join(
            f"{c} CPUs: {n} workers" for c, n in out["workers_auto"].items())]
    return lines


def _median_range(ratios: list[float]) -> str:
    """The median of the rounds' ratios, and their range where there are several."""
    if not ratios:
        return ""
    if len(ratios) == 1:
        return f"{ratios[0]:.2f}"
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def _sent(v: dict) -> str:
    """The as-sent column: hello world's p99 (share over 10 ms; throttled periods in that run),
    Django's every-request p99 (the fewest answers on one connection), or why not."""
    if v.get("sent_p99_ms") is None:
        return ""
    if not v.get("sent_verified"):
        return "unverified"
    if "sent_fewest" in v:
        return f"{v['sent_p99_ms']:.2f} ({v['sent_fewest']:.0f} fewest)"
    return f"{v['sent_p99_ms']:.2f} ({v['sent_over_10ms'] * 100:.2f} %; {v['sent_throttled']:.0f})"


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--cpus", default="0.5,1,1.5")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--servers", default=",".join(ALL_SERVERS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--inside", action="store_true",
                    help="start a fresh server inside each limit's cgroup (else one server, moved in)")
    ap.add_argument("--shares", type=int, help="cpu.shares of the servers' cgroups and of the load's "
                    "(PostgreSQL, wrk): a quota binds on a machine others load (see the module doc)")
    ap.add_argument("--no-auto", action="store_true", help="skip `--workers auto` inside each limit")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--report", type=Path, help="print the table of a run's s18.json again")


def main(args: argparse.Namespace) -> int | None:
    if args.report:
        out = json.loads((args.report / "s18.json").read_text())
        cases = [c for c in args.cases.split(",") if c]
        names = [n for n in args.servers.split(",") if n]
        print("\n".join(table(out, cases, names, [str(float(c)) for c in args.cpus.split(",") if c])))
        return None
    if os.geteuid() != 0:
        raise SystemExit("S18 makes cgroups: run it as root")
    procs.raise_fd_limit()
    out = run(args)
    cases = [c for c in args.cases.split(",") if c]
    names = [n for n in args.servers.split(",") if n]
    limits = [str(float(c)) for c in args.cpus.split(",") if c]
    command = (f"python3 benchmarks/run.py s18 --cpus {args.cpus} --cases {args.cases} "
               f"--servers {args.servers} --rounds {args.rounds}" + (" --inside" if args.inside else "")
               + (f" --shares {args.shares}" if args.shares else "") + (" --no-auto" if args.no_auto else ""))
    head = ["S18: each server (one worker process) in a cgroup with a CPU quota, medians of "
            f"{args.rounds} interleaved rounds; × share: req/s over the same round's unconstrained "
            "rate × min(1, quota / the cores used unconstrained); × best peer: over the best peer in "
            "the same limit and round; both the median of the rounds' ratios (their range)", ""]
    report = "\n".join(head + table(out, cases, names, limits) + ["", f"command: {command}"])
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "s18.json").write_text(json.dumps(out, indent=1, default=str))
        (args.out / "s18.md").write_text(report + "\n")
    return None
