"""The load generators: wrk, ab and httperf, run bounded and parsed into numbers.

Owns the command lines of the Debian load tools and the parsing of their output, including the
byte check of a wrk run: with no Lua response() callback (which would slow wrk for everyone),
the run is verified by (1) a full-body fetch compared with the expected bytes before and after the
run and a sampler comparing whole bodies during it (both done by the caller), (2) wrk's exact byte
count: bytes read must be requests x the verified response size, within HEADER_SLACK per response
plus the responses in flight when wrk stopped, and (3) non-2xx answers, which are errors and are
not counted in the figure. ab checks every response's length against the first (its "Failed requests").
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

LUA = Path(__file__).resolve().parent / "wrk_report.lua"
# Headers may legitimately vary between responses ("Connection: close" on the last response of a
# connection, a Keep-Alive header): the average response may differ from the verified one by this
# much. Bodies are checked exactly by the sampler that runs beside wrk (scenarios.py).
HEADER_SLACK = 32


@dataclass
class LoadResult:
    tool: str
    rps: float | None
    requests: int
    errors: int
    seconds: float
    detail: dict = field(default_factory=dict)
    verified: bool = True
    note: str = ""


def _run(argv: list[str], timeout: float) -> tuple[int, str, float]:
    """(exit code, output, the load generator's own CPU seconds: user + system from its rusage
    as a finished child)."""
    before = _children_cpu()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr, _children_cpu() - before
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return -9, out + f"\n(killed after {timeout:.0f} s)", _children_cpu() - before


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def wrk(url: str, connections: int, seconds: float, response_size: int | None, threads: int = 1,
        timeout_s: float = 2.0) -> LoadResult:
    """wrk -t threads -c connections -d seconds --latency, verified against response_size.
    wrk takes whole seconds only (`-d0.5s` is a usage error): `seconds` is rounded, at least 1."""
    seconds = max(1, round(seconds))
    argv = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", f"--timeout={timeout_s:g}s",
            "--latency", "-s", str(LUA), url]
    rc, out, cpu = _run(argv, seconds + 30)
    m = re.search(r"^WRKJSON (\{.*\})$", out, re.M)
    if not m:
        return LoadResult("wrk", None, 0, 0, seconds, {"rc": rc}, False,
                          "wrk failed: " + " | ".join(out.strip().splitlines()[-3:])[:300])
    d = json.loads(m.group(1))
    d.update(client_cpu_s=cpu, client_threads=threads)
    dur = d["duration_us"] / 1e6
    good = d["requests"] - d["status"]  # wrk counts non-2xx/3xx answers as requests too
    errors = d["connect"] + d["read"] + d["write"] + d["status"] + d["timeout"]
    res = LoadResult("wrk", good / dur if dur else None, good, errors, dur, d)
    notes = []
    if d["status"]:
        notes.append(f"{d['status']} non-2xx/3xx answers (not counted)")
    elif response_size and d["requests"]:
        n = d["requests"]
        in_flight = connections * response_size  # partial responses when wrk stopped
        per = d["bytes"] / n
        d["bytes_per_response"] = round(per, 1)
        low, high = n * (response_size - HEADER_SLACK), n * (response_size + HEADER_SLACK) + in_flight
        if not (low <= d["bytes"] <= high):
            res.verified = False
            notes.append(f"bytes/response {per:.1f} != verified {response_size}")
    if d["requests"] == 0:
        notes.append(f"no request completed within wrk's {timeout_s:g} s timeout")
    if errors - d["status"]:
        notes.append(f"socket errors: connect {d['connect']} read {d['read']} write {d['write']} "
                     f"timeout {d['timeout']}")
    res.note = "; ".join(notes)
    return res


def ab(url: str, concurrency: int, requests: int, body_len: int, time_limit: float = 60) -> LoadResult:
    """ab -c concurrency -n requests (HTTP/1.0, a new connection per request)."""
    argv = ["ab", "-q", "-r", "-s", "10", "-c", str(concurrency), "-n", str(requests), url]
    rc, out, cpu = _run(argv, time_limit)

    def num(pattern: str, cast=float, default=None):
        m = re.search(pattern, out, re.M)
        return cast(m.group(1)) if m else default

    complete = num(r"^Complete requests:\s+(\d+)", int, 0)
    failed = num(r"^Failed requests:\s+(\d+)", int, 0)
    # "(Connect: 0, Receive: 0, Length: 5, Exceptions: 0)": only Length means wrong bytes.
    wrong_length = num(r"^\s+\(Connect: \d+, Receive: \d+, Length: (\d+), Exceptions: \d+\)", int, 0)
    non2xx = num(r"^Non-2xx responses:\s+(\d+)", int, 0)
    rps = num(r"^Requests per second:\s+([\d.]+)")
    secs = num(r"^Time taken for tests:\s+([\d.]+)", float, 0.0)
    doc_len = num(r"^Document Length:\s+(\d+)", int)
    detail = {"complete": complete, "failed": failed, "wrong_length": wrong_length, "non2xx": non2xx,
              "document_length": doc_len, "rc": rc, "ab_rps": rps,
              "client_cpu_s": cpu, "client_threads": 1}
    good = max(0, complete - failed - non2xx)
    res = LoadResult("ab", good / secs if secs and complete else None, good, failed + non2xx, secs, detail)
    notes = []
    if rc != 0 or complete < requests:
        tail = " | ".join(ln for ln in out.strip().splitlines()[-2:])
        notes.append(f"{complete} of {requests} completed (rc {rc}: {tail[:200]})")
    if doc_len is not None and doc_len != body_len:
        res.verified = False
        notes.append(f"document length {doc_len} != {body_len}")
    if wrong_length:
        res.verified = False
        notes.append(f"{wrong_length} responses of another length than the first")
    if failed - wrong_length or non2xx:
        notes.append(f"failed {failed - wrong_length} (connect/receive), non-2xx {non2xx} (not counted)")
    res.note = "; ".join(notes)
    return res


def httperf(port: int, uri: str, conns: int, rate: int, body_len: int, timeout_s: float = 5) -> LoadResult:
    """httperf --num-conns conns --rate rate: replies and errors of an open-loop load."""
    argv = ["httperf", "--hog", "--server", "127.0.0.1", "--port", str(port), "--uri", uri,
            "--num-conns", str(conns), "--rate", str(rate), "--timeout", f"{timeout_s:g}"]
    rc, out, _ = _run(argv, conns / rate + timeout_s + 60)

    def grab(pattern: str) -> list[str] | None:
        m = re.search(pattern, out, re.M)
        return list(m.groups()) if m else None

    status = grab(r"Reply status: 1xx=(\d+) 2xx=(\d+) 3xx=(\d+) 4xx=(\d+) 5xx=(\d+)")
    errs = grab(r"^Errors: total (\d+) client-timo (\d+) socket-timo (\d+) connrefused (\d+) connreset (\d+)")
    total = grab(r"^Total: connections (\d+) requests (\d+) replies (\d+) test-duration ([\d.]+) s")
    size = grab(r"^Reply size \[B\]: header ([\d.]+) content ([\d.]+)")
    rtime = grab(r"^Reply time \[ms\]: response ([\d.]+) transfer ([\d.]+)")
    if not (status and errs and total):
        return LoadResult("httperf", None, 0, conns, 0.0, {"rc": rc}, False,
                          "httperf failed: " + " | ".join(out.strip().splitlines()[-3:])[:300])
    ok = int(status[1])
    detail = {"2xx": ok, "non2xx": int(status[0]) + sum(int(x) for x in status[2:]),
              "errors_total": int(errs[0]), "client_timeout": int(errs[1]), "socket_timeout": int(errs[2]),
              "connrefused": int(errs[3]), "connreset": int(errs[4]), "replies": int(total[2]),
              "reply_ms": float(rtime[0]) + float(rtime[1]) if rtime else None,
              "content_bytes": float(size[1]) if size else None}
    res = LoadResult("httperf", float(ok), ok, int(errs[0]) + detail["non2xx"], float(total[3]), detail)
    notes = []
    if detail["content_bytes"] is not None and ok and abs(detail["content_bytes"] - body_len) > 0.5:
        res.verified = False
        notes.append(f"mean content {detail['content_bytes']} B != {body_len}")
    if res.errors:
        notes.append(f"{ok} of {conns} replies 2xx; errors: client-timo {errs[1]}, connrefused {errs[3]}, "
                     f"connreset {errs[4]}, non-2xx {detail['non2xx']}")
    res.note = "; ".join(notes)
    return res
