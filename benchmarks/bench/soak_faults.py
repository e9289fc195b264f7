"""The soak with faults: one server (sluicegate, or gunicorn under the same script) with two
workers and `--max-requests`, under mixed traffic, while the script sends the master a HUP every
minute and `kill -9`s a worker every two minutes (offset by half a minute). Sampled every 10 s:
resident memory, open descriptors and threads of the master alone and of the master with its
workers. The figure that matters is the count of failed requests, per kind of traffic.

Traffic (the same clients for every server, `benchmarks/apps/soak_app.py`):
- keep-alive GETs of hello world (4 clients, one connection each, a new one after a failure);
- 1 MB uploads (1 client, each body checked against its sha256, one connection per upload);
- streamed responses (1 MB in 8 KiB blocks, 1 client, bytes counted).

A request fails when it gets no answer, a wrong one, or its connection breaks. A keep-alive
connection on a worker killed with `kill -9` fails its next request (the client cannot know
before): those are counted like any other failure, for every server alike.

Verdict on flatness: least-squares slopes after the first minute (the warm-up), of the master's
RSS, descriptors and threads (workers come and go: their totals are shown, not judged).

    python3 benchmarks/run.py soak-faults [--minutes 30] [--servers sluicegate,gunicorn] [--out DIR]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from bench.harness import PEERS, SG, env_for, wait_ready
from bench.soak import APPS, Clients, payloads, sample, slope_per_min

SAMPLE_EVERY_S = 10
WARMUP_S = 60
HUP_EVERY_S = 60
KILL_EVERY_S = 120
KILL_OFFSET_S = 30
MAX_REQUESTS = 20000
HELLO_CLIENTS = 4
RSS_MIB_PER_MIN = 1.0
COUNT_PER_MIN = 1.0


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def tree_sample(pid: int) -> dict:
    """The master's sample, and the sums over the master and its workers."""
    master = sample(pid)
    total = dict(master)
    workers = children(pid)
    for w in workers:
        try:
            s = sample(w)
        except OSError:
            continue  # gone between the listing and the read
        for k in ("rss", "fds", "threads"):
            total[k] += s[k]
    return {"t": master["t"], "master": master, "total": total, "workers": len(workers)}


def argv_for(server: str, port: int) -> list[str]:
    bind = f"127.0.0.1:{port}"
    if server == "sluicegate":
        return [str(SG), "-m", "sluicegate", "--bind", bind, "--workers", "2",
                "--max-requests", str(MAX_REQUESTS), "--max-requests-jitter", "2000",
                "soak_app:app"]
    gunicorn = PEERS / "gunicorn" if (PEERS / "gunicorn").exists() else SG.parent / "gunicorn"
    return [str(gunicorn), "--bind", bind, "--workers", "2", "--worker-class", "gthread",
            "--threads", "8", "--max-requests", str(MAX_REQUESTS), "--max-requests-jitter",
            "2000", "--log-level", "warning", "soak_app:app"]


class Hello:
    """Keep-alive GET /hello loops: (ok, failed) counts."""

    def __init__(self, port: int, stop: threading.Event):
        self.port, self.stop = port, stop
        self.ok = self.failed = 0
        self.reasons: dict[str, int] = {}
        self.lock = threading.Lock()

    def run(self) -> None:
        conn = None
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                conn.request("GET", "/hello")
                r = conn.getresponse()
                if r.read() != b"Hello, World!" or r.status != 200:
                    raise ValueError(f"status {r.status}")
                with self.lock:
                    self.ok += 1
                if (r.getheader("Connection") or "").lower() == "close":
                    conn.close()
                    conn = None
            except Exception as e:  # noqa: BLE001 - every failure is counted
                with self.lock:
                    self.failed += 1
                    why = type(e).__name__
                    self.reasons[why] = self.reasons.get(why, 0) + 1
                if conn is not None:
                    conn.close()
                conn = None


def soak_one(server: str, minutes: float) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = argv_for(server, port)
    proc = subprocess.Popen(argv, cwd=APPS, env=env_for(argv[0]), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    faults = {"hup": 0, "kill -9": 0}
    samples: list[dict] = []
    stop = threading.Event()
    hello = Hello(port, stop)
    clients = Clients(port, stop)
    rng = random.Random(32)
    try:
        wait_ready(f"127.0.0.1:{port}", time.monotonic() + 60)
        threads = [threading.Thread(target=hello.run, daemon=True) for _ in range(HELLO_CLIENTS)]
        threads += [threading.Thread(target=f, daemon=True)
                    for f in (clients.uploads, clients.streams)]
        for t in threads:
            t.start()
        start = time.monotonic()
        next_hup, next_kill, next_sample = HUP_EVERY_S, KILL_OFFSET_S + KILL_EVERY_S / 2, 0.0
        while (now := time.monotonic() - start) < minutes * 60:
            if now >= next_sample:
                samples.append(tree_sample(proc.pid))
                m, t = samples[-1]["master"], samples[-1]["total"]
                print(f"{server:>10} {now:6.0f} s  master rss {m['rss'] / 2**20:6.1f} MiB fds "
                      f"{m['fds']:3d} thr {m['threads']:3d} | all rss {t['rss'] / 2**20:6.1f} "
                      f"MiB fds {t['fds']:4d} thr {t['threads']:4d} | ok {hello.ok} failed "
                      f"{hello.failed}", flush=True)
                next_sample += SAMPLE_EVERY_S
            if now >= next_hup:
                os.kill(proc.pid, signal.SIGHUP)
                faults["hup"] += 1
                next_hup += HUP_EVERY_S
            if now >= next_kill:
                workers = children(proc.pid)
                if workers:
                    os.kill(rng.choice(workers), signal.SIGKILL)
                    faults["kill -9"] += 1
                next_kill += KILL_EVERY_S
            time.sleep(0.2)
        stop.set()
        for t in threads:
            t.join(60)
        alive_after = proc.poll() is None
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    late = [s for s in samples if s["t"] - start >= WARMUP_S] or samples
    slopes = {
        "master rss MiB/min": slope_per_min([(s["t"], s["master"]["rss"] / 2**20) for s in late]),
        "master fds/min": slope_per_min([(s["t"], s["master"]["fds"]) for s in late]),
        "master threads/min": slope_per_min([(s["t"], s["master"]["threads"]) for s in late]),
        "all rss MiB/min": slope_per_min([(s["t"], s["total"]["rss"] / 2**20) for s in late]),
    }
    flat = (slopes["master rss MiB/min"] < RSS_MIB_PER_MIN
            and slopes["master fds/min"] < COUNT_PER_MIN
            and slopes["master threads/min"] < COUNT_PER_MIN)
    counts = {"hello": [hello.ok, hello.failed], **{k: v for k, v in clients.counts.items()}}
    return {"server": server, "minutes": minutes, "command": " ".join(argv), "faults": faults,
            "counts": counts, "hello_failures": hello.reasons, "slopes": slopes, "flat": flat,
            "serving_at_the_end": alive_after,
            "samples": [{**s, "t": s["t"] - start} for s in samples]}


def report(results: list[dict]) -> str:
    lines = ["| server | minutes | HUPs | kill -9 | hello ok / failed | uploads ok / failed | "
             "streams ok / failed | master RSS, fds, threads per min | flat | serving at the end |",
             "|---|---:|---:|---:|---:|---:|---:|---|---|---|"]
    for r in results:
        c = r["counts"]

        def pair(kind: str) -> str:
            ok, bad = c.get(kind, [0, 0])
            return f"{ok:,} / {bad}"

        s = r["slopes"]
        lines.append(
            f"| {r['server']} | {r['minutes']:g} | {r['faults']['hup']} | {r['faults']['kill -9']} "
            f"| {pair('hello')} | {pair('upload')} | {pair('stream')} | "
            f"{s['master rss MiB/min']:+.3f} MiB, {s['master fds/min']:+.2f}, "
            f"{s['master threads/min']:+.2f} | {'yes' if r['flat'] else 'NO'} | "
            f"{'yes' if r['serving_at_the_end'] else 'NO'} |")
    return "\n".join(lines)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--servers", default="sluicegate,gunicorn",
                    help="comma-separated: sluicegate, gunicorn (default: both, one after the other)")
    ap.add_argument("--out", type=Path)


def main(args: argparse.Namespace) -> int | None:
    payloads.ensure()  # the clients read the static payload when made
    results = [soak_one(name, args.minutes) for name in args.servers.split(",")]
    table = report(results)
    print(table)
    for r in results:
        print(f"{r['server']}: hello failures by kind {r['hello_failures']}; command: {r['command']}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "soak_faults.json").write_text(json.dumps(results, indent=1))
        (args.out / "soak_faults.md").write_text(
            table + f"\n\ncommand: python3 benchmarks/run.py soak-faults --minutes {args.minutes:g} "
            f"--servers {args.servers}\n")
    return 0 if all(r["serving_at_the_end"] for r in results) else 1
