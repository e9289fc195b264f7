"""The scenarios S1–S8 of BENCHMARKS.md, and the suite's table of the scenarios it runs server by
server (S9, S10, S12 and S13 live in modules of their own; S11, S14, S15 and S16, which start their
own set of servers, in theirs: bench/suite.py GROUPED), and the title of every scenario: what each
one starts, sends, times and verifies.

Owns the measurement of each scenario for one server in one round. Every case starts its server
afresh (so peak RSS belongs to that case), verifies the bytes before trusting a number (a fast
wrong answer is a failure: its record is "failed" with the reason and no figure), and reads the
server's own CPU time over exactly the timed part. Figures: requests/s (wrk, ab), seconds per
fetch (median, raw-socket client), replies (httperf), segments per response (tcpdump).
"""

from __future__ import annotations

import functools
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import payloads
import servers
from bench import loadgen, procs, rawhttp, segments
from bench.harness import (FETCH_TIMEOUT_S, Harness, NotServed, Record, StartError, fail, fill_load, measure_cpu,
                           per_request_us, recheck, run_case, sha256, verify_fetch, wrk_body)
from bench.s9_s10 import s9, s10  # worker processes
from bench.s12 import s12  # HAProxy and probe threads
from bench.s13 import s13  # the PostgreSQL cluster

FETCH_BUDGET_S = 60.0  # one series of fetches
FETCH_MAX_COUNT = 5000
S5_SLEEP_S = 0.1
S7_CLIENTS = 16
HTTPERF_RATE = 200


# ---- helpers of this module ------------------------------------------------------------------

def _fetch_series(h: Harness, method: str, path: str, check: Callable[[rawhttp.Response], str], repeats: int,
                  payload: bytes | None = None, chunked: bool = False, keep_body: bool = True,
                  min_seconds: float | None = None) -> Callable[[procs.ServerProcess, Record], None]:
    """Time fetches over one keep-alive connection, each one checked; the figure is the median.

    At least `repeats` fetches, and more until they add up to `min_seconds` (at most
    FETCH_MAX_COUNT): /proc's CPU times tick in 10 ms, so a 0.3 ms fetch needs many to say
    anything about the server's CPU per request.
    """
    min_s = h.mode.fetch_min_s if min_seconds is None else min_seconds

    def body(proc: procs.ServerProcess, rec: Record) -> None:
        times: list[float] = []
        problem = ""
        conn = rawhttp.Connection(proc.port, FETCH_TIMEOUT_S)
        started = time.monotonic()
        try:
            with measure_cpu(proc) as m:
                while len(times) < repeats or (sum(times) < min_s and len(times) < FETCH_MAX_COUNT):
                    try:
                        r = conn.request(method, path, body=payload, chunked=chunked, keep_body=keep_body)
                    except rawhttp.HttpError as e:
                        problem = str(e)
                        break
                    why = check(r)
                    if why:
                        problem = why
                        break
                    times.append(r.seconds)
                    rec.extra.setdefault("framing", r.framing)
                    if time.monotonic() - started > FETCH_BUDGET_S:
                        break
        finally:
            conn.close()
        rec.requests = len(times)
        rec.cpu_us_per_req = per_request_us(m["cpu_s"], len(times)) if times else None
        rec.peak_rss = m["peak_rss"]
        rec.extra["connections_opened"] = conn.connects
        rec.extra["fetch_seconds"] = _spread(times)
        if problem or not times:
            rec.errors = 1
            return fail(rec, problem or "no fetch completed")
        rec.value = statistics.median(times)
        rec.verified = True
    return body


def _spread(times: list[float]) -> dict:
    """min / p10 / p90 / max of a series (the full list would make results.json megabytes)."""
    if not times:
        return {}
    xs = sorted(times)
    pick = lambda q: round(xs[min(len(xs) - 1, int(q * len(xs)))], 6)  # noqa: E731
    return {"n": len(xs), "min": round(xs[0], 6), "p10": pick(0.1), "p90": pick(0.9), "max": round(xs[-1], 6)}


def python_only_s3() -> dict:
    """S3's floor: iterating the app's blocks in Python alone, no server (run in the peers' venv)."""
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); import s3_stream as m\n"
        "out = {}\n"
        "for n in m.BLOCKS:\n"
        "    best = 1e9\n"
        "    for _ in range(5):\n"
        "        t = time.perf_counter(); b = b''.join(m._stream(m.BLOCKS[n])); best = min(best, time.perf_counter() - t)\n"
        "    out[n] = best\n"
        "print(out)\n"
    )
    py = servers.VENV / "bin" / "python"
    try:
        r = subprocess.run([str(py if py.exists() else sys.executable), "-c", code, str(servers.APPS)],
                           capture_output=True, text=True, timeout=60)
        return {f"{k} B blocks": v for k, v in __import__("ast").literal_eval(r.stdout.strip()).items()}
    except (OSError, ValueError, SyntaxError, subprocess.TimeoutExpired):
        return {}


def _body_check(expect_len: int, expect_sha: str) -> Callable[[rawhttp.Response], str]:
    def check(r: rawhttp.Response) -> str:
        if r.status != 200:
            return f"answered {r.status}"
        if len(r.body) != expect_len:
            return f"body {len(r.body)} bytes, expected {expect_len}"
        if sha256(r.body) != expect_sha:
            return "body differs from the expected bytes (sha256)"
        return ""
    return check


@functools.cache
def _file_sha(path: Path) -> str:
    h = __import__("hashlib").sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


# ---- S1: large bodies ------------------------------------------------------------------------

def s1(h: Harness, server: servers.Server, rnd: int) -> None:
    for key, size in payloads.S1_SIZES.items():
        expect_sha = _file_sha(payloads.body_path(key))
        for how in ("bytes", "list", "file"):
            path = f"/{how}/{key}"
            if server.kind == "anchor" and how != "file":
                continue  # nginx serves the file; "bare bytes" and "[bytes]" are app shapes
            probe = "/file/688128" if server.kind == "anchor" else "/list/688128"
            target = servers.Target("s1_bodies", probe, payloads.body_path("688128").read_bytes())
            label = {"bytes": "bare bytes", "list": "[bytes]", "file": "file_wrapper"}[how]
            run_case(h, "S1", f"{key} {label}", server, rnd, "s", "lower", target,
                  _fetch_series(h, "GET", path, _body_check(size, expect_sha), h.mode.fetch_repeats))


# ---- S2: static file -------------------------------------------------------------------------

def s2(h: Harness, server: servers.Server, rnd: int) -> None:
    small = payloads.static_path(payloads.S2_SMALL)
    small_bytes = small.read_bytes()
    path = f"/static/{payloads.S2_SMALL}"
    # (how, URL path, use the server's static feature)
    variants = [("app, file_wrapper", path, False), ("app, [file read into bytes]", f"/read/{payloads.S2_SMALL}", False),
                ("static feature", path, True)]
    for how, url, static in variants:
        if server.kind == "anchor" and not static:
            continue  # nginx only serves files
        target = servers.Target("s2_static", url, small_bytes, static=static)
        run_case(h, "S2", f"21 KiB, wrk -c100, {how}", server, rnd, "req/s", "higher", target,
              wrk_body(h, url, small_bytes, 100))
        if "bytes" in how:
            continue  # httperf and the 1 GiB file: the file_wrapper and static paths only
        if not h.mode.httperf_conns:
            continue  # a mode without the open-loop case (and without the 1 GiB file)

        def httperf_body(proc: procs.ServerProcess, rec: Record, url: str = url) -> None:
            ref, why = verify_fetch(proc.port, url, small_bytes)
            if ref is None:
                return fail(rec, why)
            with measure_cpu(proc) as m:
                res = loadgen.httperf(proc.port, url, h.mode.httperf_conns, HTTPERF_RATE, len(small_bytes))
            rec.value, rec.requests, rec.errors = res.rps, res.requests, res.errors
            rec.cpu_us_per_req = per_request_us(m["cpu_s"], res.requests)
            rec.peak_rss, rec.verified, rec.note = m["peak_rss"], res.verified, res.note
            rec.extra.update(res.detail, conns=h.mode.httperf_conns, rate=HTTPERF_RATE)
            if res.rps is None:
                fail(rec, "httperf did not run")
            elif not res.verified:
                fail(rec, "wrong bytes")

        run_case(h, "S2", f"21 KiB, httperf {h.mode.httperf_conns}@{HTTPERF_RATE}/s, {how}", server, rnd,
              "replies", "higher", target, httperf_body)

        if h.mode.huge_file:
            huge = payloads.static_path(payloads.S2_HUGE)
            huge_path = f"/static/{payloads.S2_HUGE}"
            run_case(h, "S2", f"1 GiB file, {how}", server, rnd, "s", "lower", target,
                  _fetch_series(h, "GET", huge_path, _body_check(huge.stat().st_size, _file_sha(huge)), 1,
                                min_seconds=0))


# ---- S3: streamed text -----------------------------------------------------------------------

def s3(h: Harness, server: servers.Server, rnd: int) -> None:
    text = payloads.text()
    expect_sha = sha256(text)
    for block in payloads.S3_BLOCKS:
        target = servers.Target("s3_stream", "/8192", text, unframed=True)
        run_case(h, "S3", f"2.5 MB in {block} B blocks", server, rnd, "s", "lower", target,
              _fetch_series(h, "GET", f"/{block}", _body_check(len(text), expect_sha), max(h.mode.fetch_repeats, 5)))


# ---- S4: 15 headers --------------------------------------------------------------------------

def s4(h: Harness, server: servers.Server, rnd: int) -> None:
    target = servers.Target("s4_pong", "/pong", payloads.PONG)

    def ab_body(proc: procs.ServerProcess, rec: Record) -> None:
        ref, why = verify_fetch(proc.port, "/pong", payloads.PONG)
        if ref is None:
            return fail(rec, why)
        with measure_cpu(proc) as m:
            res = loadgen.ab(f"http://127.0.0.1:{proc.port}/pong", 1, h.mode.s4_ab_requests, len(payloads.PONG))
        fill_load(rec, res, m)
        recheck(proc, rec, "/pong", payloads.PONG)

    run_case(h, "S4", f"ab -c1 -n{h.mode.s4_ab_requests} (new connection each)", server, rnd, "req/s", "higher",
          target, ab_body)
    run_case(h, "S4", "wrk -t1 -c1 (keep-alive)", server, rnd, "req/s", "higher", target,
          wrk_body(h, "/pong", payloads.PONG, 1))

    def seg_body(proc: procs.ServerProcess, rec: Record) -> None:
        res = segments.count_segments(proc.port, "/pong", h.mode.segment_requests)
        if "skipped" in res:
            rec.status, rec.note = "skipped", res["skipped"]
            return
        rec.extra.update(res)
        rec.requests = res["requests"]
        rec.value = res["segments_per_response"]
        rec.verified = res["statuses"] == [200] and res["payload_bytes_per_response"] == res["wire_bytes_per_response"]
        if not rec.verified:
            fail(rec, f"statuses {res['statuses']}, captured {res['payload_bytes_per_response']} B/response, "
                       f"received {res['wire_bytes_per_response']}")

    run_case(h, "S4", "TCP payload segments per response", server, rnd, "segments", "lower", target, seg_body)


# ---- S5: blocking app ------------------------------------------------------------------------

def s5(h: Harness, server: servers.Server, rnd: int) -> None:
    target = servers.Target("s5_sleepy", "/", b"HelloWorld", blocking=True)
    for clients in h.mode.s5_clients:
        def body(proc: procs.ServerProcess, rec: Record, clients: int = clients) -> None:
            wrk_body(h, "/", b"HelloWorld", clients, warmup=False)(proc, rec)
            rec.extra["ideal_rps"] = clients / S5_SLEEP_S
        run_case(h, "S5", f"{clients:,} clients (ideal {clients / S5_SLEEP_S:,.0f} req/s)", server, rnd, "req/s",
              "higher", target, body)


# ---- S6: hello world -------------------------------------------------------------------------

def s6(h: Harness, server: servers.Server, rnd: int) -> None:
    target = servers.Target("s6_hello", "/", payloads.HELLO)
    run_case(h, "S6", "wrk -t1 -c64 (keep-alive)", server, rnd, "req/s", "higher", target,
          wrk_body(h, "/", payloads.HELLO, 64))

    def ab_body(proc: procs.ServerProcess, rec: Record) -> None:
        ref, why = verify_fetch(proc.port, "/", payloads.HELLO)
        if ref is None:
            return fail(rec, why)
        with measure_cpu(proc) as m:
            res = loadgen.ab(f"http://127.0.0.1:{proc.port}/", 64, h.mode.s6_ab_requests, len(payloads.HELLO))
        fill_load(rec, res, m)
        recheck(proc, rec, "/", payloads.HELLO)

    run_case(h, "S6", f"ab -c64 -n{h.mode.s6_ab_requests} (new connection each)", server, rnd, "req/s", "higher",
          target, ab_body)


# ---- S7: idle connections --------------------------------------------------------------------

def s7(h: Harness, server: servers.Server, rnd: int) -> None:
    target = servers.Target("s6_hello", "/", payloads.HELLO)
    n_idle = h.mode.idle_connections
    base = Record("S7", f"wrk -c{S7_CLIENTS}, no idle connections", server.name, rnd, "req/s", "higher")
    idle = Record("S7", f"wrk -c{S7_CLIENTS} beside {n_idle:,} idle", server.name, rnd, "req/s", "higher")
    try:
        with h.serve(server, target) as (proc, settings):
            base.settings = idle.settings = settings
            wrk_body(h, "/", payloads.HELLO, S7_CLIENTS)(proc, base)
            rss_before = proc.sample().rss
            holder = subprocess.Popen([sys.executable, str(servers.BENCH / "run.py"), "idle", str(proc.port),
                                       str(n_idle), "/"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True, start_new_session=True)
            try:
                opened = _read_json_line(holder, 120)
                rss_idle = proc.sample().rss
                idle.extra.update(opened or {"holder": "no report"})
                idle.extra.update(rss_before=rss_before, rss_with_idle=rss_idle, rss_growth=rss_idle - rss_before)
                if not proc.alive():
                    raise StartError(f"server died while opening idle connections: {proc.log_tail(2)}")
                wrk_body(h, "/", payloads.HELLO, S7_CLIENTS, warmup=False)(proc, idle)
                holder.stdin.write("check\n")
                holder.stdin.flush()
                idle.extra.update(_read_json_line(holder, 30) or {})
            finally:
                try:
                    holder.stdin.write("quit\n")
                    holder.stdin.close()
                except OSError:
                    pass
                procs.stop_session(holder, holder.pid)
            if base.value and idle.value:
                idle.extra["ratio_to_no_idle"] = round(idle.value / base.value, 3)
            refused = (opened or {}).get("refused", 0) + (opened or {}).get("connect_timeout", 0)
            idle.errors += refused
            notes = [f"opened {(opened or {}).get('opened', 0):,}/{n_idle:,}"]
            for key in ("refused", "connect_timeout", "unanswered", "closed_before_answer", "closed_by_server"):
                if idle.extra.get(key):
                    notes.append(f"{key.replace('_', ' ')} {idle.extra[key]:,}")
            notes.append(f"RSS +{(rss_idle - rss_before) / 2**20:,.1f} MiB")
            idle.note = "; ".join(notes + ([idle.note] if idle.note else []))
    except NotServed as e:
        base.status = idle.status = "n/a"
        base.note = idle.note = str(e)
    except (StartError, rawhttp.HttpError, OSError) as e:
        for rec in (base, idle):
            if rec.status == "ok" and rec.value is None:
                rec.status, rec.note = "failed", f"{type(e).__name__}: {e}"
    h.add(base)
    h.add(idle)


def _read_json_line(p: subprocess.Popen, timeout: float) -> dict | None:
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    try:
        if not sel.select(timeout=timeout):
            return None
        line = p.stdout.readline()
    finally:
        sel.close()
    try:
        return json.loads(line)
    except ValueError:
        return None


# ---- S8: uploads -----------------------------------------------------------------------------

def s8(h: Harness, server: servers.Server, rnd: int) -> None:
    if server.kind == "anchor":
        return
    data = payloads.body_path("64MiB").read_bytes()
    expect = b"%d %s" % (len(data), sha256(data).encode())
    target = servers.Target("s8_upload", "/", b"0 " + sha256(b"").encode())

    def check(r: rawhttp.Response) -> str:
        if r.status != 200:
            return f"answered {r.status}"
        if bytes(r.body) != expect:
            got = bytes(r.body[:80]).decode("latin-1", "replace")
            return f"app read {got.split(' ')[0]} bytes" + (" (sha256 differs)" if got.split(" ")[0] == str(len(data)) else "")
        return ""

    for chunked in (False, True):
        how = "chunked" if chunked else "Content-Length"
        run_case(h, "S8", f"64 MiB upload, {how}", server, rnd, "s", "lower", target,
              _fetch_series(h, "POST", "/", check, h.mode.upload_repeats, payload=data, chunked=chunked,
                            min_seconds=max(h.mode.fetch_min_s, h.mode.upload_min_s)))


SCENARIOS: dict[str, Callable[[Harness, servers.Server, int], None]] = {
    "S1": s1, "S2": s2, "S3": s3, "S4": s4, "S5": s5, "S6": s6, "S7": s7, "S8": s8, "S9": s9, "S10": s10, "S12": s12, "S13": s13,
}
TITLES = {
    "S1": "Large body (688,128 bytes and 64 MiB): time per fetch over one keep-alive connection",
    "S2": "Static file: 21,324 bytes under 100 connections; httperf open loop; 1 GiB file",
    "S3": "2.5 MB text streamed by a generator: client time per request",
    "S4": "pong with 15 response headers",
    "S5": "Blocking app (Hello, sleep 0.1 s, World)",
    "S6": "Hello world",
    "S7": "10,000 idle keep-alive connections held open while 16 clients run hello world",
    "S8": "64 MiB upload read fully by the app",
    "S9": "Cores: about 1 ms of pure-Python CPU per request, 1 and 2 worker processes",
    "S10": "Restarts under load: reloads, recycling and killed workers during wrk -c64",
    "S11": "Behind nginx: hello world and the 2.5 MB stream over a unix socket (proxy_pass, uwsgi_pass)",
    "S12": "Health checks, a fast route and a static file behind a busy (CPU-bound) app",
    "S13": "Django with PostgreSQL: two queries and a template per request",
    "S14": "HTTPS (ECDSA P-256): served directly, or by nginx terminating TLS in front",
    "S15": "HTTP/2 over h2c: 100 streams on one connection, and hello world",
    "S16": "Behind nginx as deployed: proxy_pass defaults, upstream keepalive, uwsgi_pass",
}
