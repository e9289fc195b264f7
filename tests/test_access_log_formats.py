"""Access log formats and where each request's time went: `json`
(one object per line, valid for any byte), templates of named fields, the timings (queue, app,
send, total) and how a request ended, the `Server-Timing` header, and a log that keeps up with
thousands of requests. Lines are written by a writer thread: tests wait for them (bounded).
"""

import json
import socket
import threading

from tests.http_util import Conn, request_bytes, wait_for


def lines(path):
    try:
        return [ln for ln in path.read_text(encoding="utf-8").split("\n") if ln]
    except FileNotFoundError:
        return []


def json_lines(path, n, timeout=10):
    wait_for(lambda: len(lines(path)) >= n, f"{n} access log lines", timeout)
    return [json.loads(ln) for ln in lines(path)]


def test_json_lines_are_valid_for_hostile_bytes_and_carry_every_field(start_server, tmp_path):
    from sluicegate import _core
    from sluicegate.parsers import ACCESS_LOG_FIELDS

    assert tuple(_core.ACCESS_LOG_FIELDS) == ACCESS_LOG_FIELDS
    log = tmp_path / "a.log"
    srv = start_server("timed", "--access-log", str(log), "--access-log-format", "json")
    hostile = bytes(range(0x80, 0x100)) + b'"\\\t{}'
    with Conn.open(srv.port) as c:
        c.send(b"GET /x%22y?q=%00\"\\ HTTP/1.1\r\nHost: h\r\nUser-Agent: " + hostile
               + b"\r\nReferer: \"quoted\"\r\nX-Request-Id: req-7\r\n\r\n")
        assert c.read_response().status == 200
    (rec,) = json_lines(log, 1)
    assert tuple(rec) == ACCESS_LOG_FIELDS
    assert rec["user_agent"] == hostile.decode("latin-1")
    assert rec["target"] == '/x%22y?q=%00"\\'
    assert (rec["method"], rec["path"], rec["query"], rec["status"], rec["bytes"]) == (
        "GET", "/x%22y", 'q=%00"\\', 200, 2)
    assert (rec["referer"], rec["request_id"], rec["end"]) == ('"quoted"', "req-7", "ok")
    assert rec["pid"] == srv.pid and rec["client"] == "127.0.0.1"
    assert rec["scheduler"] in ("inline", "pool")
    assert rec["total_us"] >= rec["app_us"] and rec["total_us"] >= rec["queue_us"]


def test_app_time_and_send_time_are_told_apart(start_server, tmp_path):
    log = tmp_path / "a.log"
    srv = start_server("timed", "--access-log", str(log), "--access-log-format", "json")
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/sleep?s=0.2"))
        assert c.read_response().body == b"slept"
    (rec,) = json_lines(log, 1)
    assert rec["app_us"] >= 200_000, rec
    # A slow reader: 16 MB through a small receive buffer, read a bit at a time. The app is
    # done at once; sending takes as long as the client makes it.
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    s.connect(("127.0.0.1", srv.port))
    s.sendall(b"GET /big?mb=16 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    got = 0
    stop = threading.Event()
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        got += len(chunk)
        stop.wait(0.002)
    s.close()
    assert got > 16 * 1024 * 1024
    recs = json_lines(log, 2)
    big = recs[1]
    assert big["end"] == "ok" and big["bytes"] == 16 * 1024 * 1024
    assert big["send_us"] > big["app_us"], big
    assert big["total_us"] >= big["send_us"]


def test_a_client_that_goes_away_is_logged_as_such(start_server, tmp_path):
    log = tmp_path / "a.log"
    srv = start_server("timed", "--access-log", str(log), "--access-log-format", "json")
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.sendall(b"GET /big?mb=64 HTTP/1.1\r\nHost: h\r\n\r\n")
    s.recv(65536)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
    s.close()
    (rec,) = json_lines(log, 1)
    assert rec["end"] == "client_gone" and rec["status"] == 200


def test_a_template_and_static_files(start_server, tmp_path):
    log = tmp_path / "a.log"
    (tmp_path / "f.txt").write_bytes(b"static!")
    srv = start_server("timed", "--access-log", str(log), "--static", f"/s={tmp_path}",
                       "--access-log-format", "{method} {path} {status} {bytes} {end} {scheduler}")
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/s/f.txt") + request_bytes("GET", "/app"))
        assert c.read_response().body == b"static!"
        assert c.read_response().body == b"ok"
    wait_for(lambda: len(lines(log)) >= 2, "two lines", 10)
    first, second = lines(log)
    assert first == "GET /s/f.txt 200 7 ok loop"
    assert second.startswith("GET /app 200 2 ok ") and second.split()[-1] in ("inline", "pool")


def test_server_timing_header(start_server):
    srv = start_server("timed", "--server-timing")
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/sleep?s=0.05"))
        r = c.read_response()
    st = r.header("Server-Timing")
    parts = dict(p.strip().split(";dur=") for p in st.split(","))
    assert set(parts) == {"queue", "app"} and float(parts["app"]) >= 50.0, st


def test_the_log_keeps_up_with_many_requests(start_server, tmp_path):
    log = tmp_path / "a.log"
    srv = start_server("timed", "--access-log", str(log), "--access-log-format", "{path}")
    per_conn, conns = 12500, 8  # 100,000 requests

    def client(i):
        with Conn.open(srv.port) as c:
            for batch in range(0, per_conn, 50):  # pipelined, 50 at a time
                c.send(b"".join(request_bytes("GET", f"/c{i}/{j}")
                                for j in range(batch, batch + 50)))
                for _ in range(50):
                    assert c.read_response().status == 200

    threads = [threading.Thread(target=client, args=(i,)) for i in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    total = per_conn * conns
    wait_for(lambda: len(lines(log)) >= total, f"{total} lines", 60)
    got = lines(log)
    assert len(got) == total and len(set(got)) == total


def test_the_json_time_is_iso_8601_in_utc_with_milliseconds(start_server, tmp_path):
    """`json` lines carry ISO 8601 (`2026-11-25T02:30:28.123Z`), which log pipelines parse
    without a format string; `combined` keeps the CLF time (test_access_log.py)."""
    import datetime
    import re

    log = tmp_path / "a.log"
    srv = start_server("timed", "--access-log", str(log), "--access-log-format", "json")
    before = datetime.datetime.now(datetime.timezone.utc)
    assert srv.request("GET", "/t").status == 200
    (rec,) = json_lines(log, 1)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", rec["time"]), rec["time"]
    at = datetime.datetime.fromisoformat(rec["time"].replace("Z", "+00:00"))
    assert abs((at - before).total_seconds()) < 5


def test_workers_sharing_one_pipe_never_tear_a_line(start_server):
    """`--access-log -` with workers: every worker writes to the same pipe, which keeps a write
    whole only up to PIPE_BUF (4,096 bytes). Each worker writes at most PIPE_BUF at a time,
    cut at a line's end, so every line read from the pipe is one whole JSON object (batches
    of up to 256 KiB were written at once, and 0.7% of lines came out torn)."""
    srv = start_server("timed", "--workers", "2", "--access-log", "-",
                       "--access-log-format", "json")
    per_client, clients = 300, 8
    target = "/p?" + "q" * 1500  # ~1.6 KB lines: two or three to a PIPE_BUF
    request = request_bytes("GET", target)

    def client():
        for _ in range(per_client // 50):
            with Conn.open(srv.port) as c:
                for _ in range(50):
                    c.send(request)
                    assert c.read_response().status == 200

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    total = per_client * clients

    def logged():
        return [ln for ln in srv.stdout_lines if '"client"' in ln]

    wait_for(lambda: len(logged()) >= total, f"{total} access lines", timeout=30)
    bad = []
    for ln in logged():
        try:
            json.loads(ln)
        except ValueError:
            bad.append(ln[:120])
    assert not bad and len(logged()) == total, (len(bad), bad[:3])
    # A line that would pass PIPE_BUF (a 6,000-byte User-Agent, escaped to 36 KB of JSON) is
    # made again with the client's fields cut short (ending "..."): one whole JSON line.
    with Conn.open(srv.port) as c:
        c.send(b"GET /long HTTP/1.1\r\nHost: h\r\nUser-Agent: " + b"\x85" * 6000 + b"\r\n\r\n")
        assert c.read_response().status == 200
    wait_for(lambda: any('"/long"' in ln for ln in logged()), "the long request's line")
    (long_line,) = [ln for ln in logged() if '"/long"' in ln]
    rec = json.loads(long_line)
    assert len(long_line.encode()) < 4096 and rec["user_agent"].endswith("\x85...")
