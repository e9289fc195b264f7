"""Metrics: `--metrics-bind` serves Prometheus's text format from the
Rust core on its own listener, parsed here with prometheus_client's own parser; its counters
equal what the test sent; `/debug/requests` lists the app calls in flight with their stacks.
"""

import http.client
import socket

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.http_util import Conn, request_bytes, wait_for


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port, path="/metrics"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read().decode()
    c.close()
    return r.status, r.getheader("Content-Type"), body


def samples(text):
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


@pytest.fixture
def metered(start_server, tmp_path):
    (tmp_path / "f.txt").write_bytes(b"static!")
    mport = free_port()
    srv = start_server("timed", "--metrics-bind", f"127.0.0.1:{mport}", "--static",
                       f"/s={tmp_path}")
    wait_for(lambda: scrape_ok(mport), "the metrics listener")
    return srv, mport


def scrape_ok(port):
    try:
        return scrape(port)[0] == 200
    except OSError:
        return False


def test_counters_equal_what_was_sent(metered):
    srv, mport = metered
    with Conn.open(srv.port) as c:
        for i in range(5):
            c.send(request_bytes("GET", f"/a{i}"))
            assert c.read_response().status == 200
        c.send(request_bytes("GET", "/s/f.txt"))
        assert c.read_response().body == b"static!"
        c.send(request_bytes("GET", "/s/missing.txt"))
        assert c.read_response().status == 404
        c.send(request_bytes("GET", "/sleep?s=0.2"))
        assert c.read_response().status == 200
    with Conn.open(srv.port) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
        assert c.read_response().status == 400
    # A request is counted once its answer is written: the client may read it first, so the
    # scrape waits for the last one's count (it must come, and be exact).
    def settled():
        status, ctype, text = scrape(mport)
        assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
        s = samples(text)
        return s if s[("sluicegate_request_duration_seconds_count", ())] >= 8 else None

    s = wait_for(settled, "every request counted")
    assert s[("sluicegate_requests_total", (("class", "2xx"),))] == 7
    assert s[("sluicegate_requests_total", (("class", "4xx"),))] == 1
    assert s[("sluicegate_request_ends_total", (("end", "ok"),))] == 7
    assert s[("sluicegate_protocol_errors_total", ())] == 1
    assert s[("sluicegate_refused_requests_total", (("status", "400"),))] == 1
    assert s[("sluicegate_refused_requests_total", (("status", "431"),))] == 0
    assert s[("sluicegate_loop_answers_total", (("status", "200"),))] == 1
    assert s[("sluicegate_loop_answers_total", (("status", "404"),))] == 1
    assert s[("sluicegate_request_bytes_total", ())] > 8 * len(b"GET / HTTP/1.1\r\n")
    assert s[("sluicegate_request_duration_seconds_count", ())] == 8
    assert s[("sluicegate_app_duration_seconds_count", ())] == 6, "app calls only"
    # The 0.2 s call is in the app histogram's 0.25 s bucket and not in the 0.1 s one.
    app_01 = s[("sluicegate_app_duration_seconds_bucket", (("le", "0.1"),))]
    app_025 = s[("sluicegate_app_duration_seconds_bucket", (("le", "0.25"),))]
    assert app_025 - app_01 >= 1 and app_01 <= 5
    # 5 × "ok", "static!", "slept", and the 404's own body.
    assert s[("sluicegate_response_body_bytes_total", ())] >= 5 * 2 + 7 + 5
    assert s[("sluicegate_connections_accepted_total", ())] >= 2
    assert s[("sluicegate_pool_threads", ())] >= 1
    # Connections open now: one kept open here, and the gauge counts it.
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/held"))
        assert c.read_response().status == 200
        open_now = samples(scrape(mport)[2])[("sluicegate_connections_open", ())]
        assert open_now >= 1
        # The idle gauge is refreshed by the loop's sweep (at most a second behind).
        wait_for(lambda: samples(scrape(mport)[2])[("sluicegate_connections_idle", ())] >= 1,
                 "the idle connection to be counted")


def test_the_metrics_port_is_not_the_apps(metered):
    srv, mport = metered
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/metrics"))
        assert c.read_response().body == b"ok", "the app's own /metrics, not the server's"
    assert scrape(mport, "/nope")[0] == 404


def test_debug_requests_lists_calls_in_flight_with_their_stacks(start_server):
    """With --debug-requests: each call's request line, its query string redacted (it shows
    ?…, never what the client sent in it), and its Python stack."""
    mport = free_port()
    srv = start_server("stuck", "--metrics-bind", f"127.0.0.1:{mport}", "--debug-requests")
    c = Conn.open(srv.port)
    c.send(request_bytes("GET", "/hang?token=m1"))
    srv.wait_marks("hang-started", prefix="m1")
    status, _, text = scrape(mport, "/debug/requests")
    assert status == 200
    assert "1 app call(s) in flight" in text
    assert "GET /hang?… HTTP/1.1  age " in text
    assert "token=m1" not in text
    assert "in wait_for_the_database" in text
    srv.open_gate("release-m1")
    assert c.read_response().status == 200
    c.close()
    wait_for(lambda: "0 app call(s) in flight" in scrape(mport, "/debug/requests")[2],
             "the call to leave the list")


def test_each_worker_has_its_own_listener_and_label(start_server):
    """Worker N (its slot counted from 1) listens on PORT+N and labels its series worker="N";
    PORT is the master's sum (test_metrics_workers.py)."""
    from tests.helpers import free_ports
    mport = free_ports(3)
    srv = start_server("timed", "--workers", "2", "--metrics-bind", f"127.0.0.1:{mport}")
    for w in (1, 2):
        wait_for(lambda w=w: scrape_ok(mport + w), f"worker {w}'s metrics listener")
        text = scrape(mport + w)[2]
        assert f'sluicegate_requests_total{{worker="{w}",class="2xx"}}' in text
        assert samples(text)[("sluicegate_connections_accepted_total", (("worker", str(w)),))] >= 0


def test_series_carry_no_empty_label_set_and_the_usual_exporter_series(metered):
    """Without workers a series has no label set at all (`name value`, never `name{} value`),
    and the scrape carries the build info and the standard `process_*` series."""
    import time

    import sluicegate
    srv, mport = metered
    assert srv.request("GET", "/x").status == 200
    text = scrape(mport)[2]
    assert "{}" not in text
    assert "\nsluicegate_protocol_errors_total 0\n" in text
    s = samples(text)
    assert s[("sluicegate_build_info", (("version", sluicegate.__version__),))] == 1
    assert 0 < time.time() - s[("process_start_time_seconds", ())] < 300
    assert s[("process_resident_memory_bytes", ())] > 1_000_000
    assert s[("process_open_fds", ())] >= 4
    assert s[("process_cpu_seconds_total", ())] > 0


def raw_exchange(port, data):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_the_metrics_listener_speaks_http_through_proto(metered):
    """Its requests are read by proto's parser and its answers' heads written by proto's
    encoder: HEAD gets the head alone, other methods 405, a head proto refuses its 400, and
    every answer says how long it is and that the connection closes."""
    _, mport = metered
    head = raw_exchange(mport, b"HEAD /metrics HTTP/1.1\r\nHost: m\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b"\r\n\r\n")
    assert b"\r\nContent-Length: " in head and b"\r\nConnection: close\r\n" in head
    assert raw_exchange(mport, b"POST /metrics HTTP/1.1\r\nHost: m\r\nContent-Length: 0\r\n\r\n"
                        ).startswith(b"HTTP/1.1 405 Method Not Allowed\r\n")
    assert raw_exchange(mport, b"GET /metrics HTTP/1.1\r\nHost: m\r\nContent-Length: 1\r\n"
                        b"Content-Length: 2\r\n\r\n").startswith(b"HTTP/1.1 400 Bad Request\r\n")
    got = raw_exchange(mport, b"GET /metrics?name=x HTTP/1.0\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 200 OK\r\n") and b"sluicegate_requests_total" in got


def test_metrics_bind_unix_never_removes_a_file_it_did_not_make(tmp_path):
    """`--metrics-bind unix:PATH` over a regular file refuses to start and leaves the file
    (it used to delete it); a dead socket left by a crash is taken over."""
    import os
    import subprocess
    import sys

    notes = tmp_path / "notes.txt"
    notes.write_text("keep me")
    cmd = [sys.executable, "-m", "sluicegate", "--bind", "127.0.0.1:0", "--metrics-bind",
           f"unix:{notes}", "tests.apps.timed:app"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICEGATE_")}
    done = subprocess.run(cmd, capture_output=True, timeout=30, env=env, text=True,
                          stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    assert "is not a socket" in done.stderr, done.stderr
    assert notes.read_text() == "keep me"


def test_metrics_bind_unix_takes_over_a_dead_socket(start_server, tmp_path):
    path = tmp_path / "m.sock"
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))
    dead.close()  # the file stays, nobody listens: what a crash leaves
    srv = start_server("timed", "--metrics-bind", f"unix:{path}")

    def scrape_unix():
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(5)
                s.connect(str(path))
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: m\r\n\r\n")
                out = b""
                while chunk := s.recv(65536):
                    out += chunk
                return out
        except OSError:
            return b""

    assert srv.alive()
    wait_for(lambda: scrape_unix().startswith(b"HTTP/1.1 200 OK"), "the unix metrics listener")


def test_access_log_lines_that_cannot_be_written_are_counted_and_told_once(start_server):
    """A write error on the access log (a full disk: /dev/full) drops its lines: they are
    counted in `sluicegate_access_log_dropped_total`, and one error line says so (lines used to
    vanish silently, the counter at 0)."""
    mport = free_port()
    srv = start_server("timed", "--access-log", "/dev/full", "--metrics-bind",
                       f"127.0.0.1:{mport}")
    wait_for(lambda: scrape_ok(mport), "the metrics listener")
    with Conn.open(srv.port) as c:
        for i in range(50):
            c.send(request_bytes("GET", f"/a{i}"))
            assert c.read_response().status == 200

    def dropped():
        return samples(scrape(mport)[2])[("sluicegate_access_log_dropped_total", ())]

    wait_for(lambda: dropped() >= 50, "50 dropped lines to be counted")
    srv.wait_log(r"the access log cannot be written \(.*No space left on device")
    assert srv.log_text().count("the access log cannot be written") == 1


def test_debug_requests_is_off_unless_asked(start_server):
    """Without --debug-requests, /debug/requests is not served (404): request lines and the
    app's source lines are not told to whoever reaches the metrics port."""
    mport = free_port()
    srv = start_server("stuck", "--metrics-bind", f"127.0.0.1:{mport}")
    c = Conn.open(srv.port)
    c.send(request_bytes("GET", "/hang?token=m2"))
    srv.wait_marks("hang-started", prefix="m2")
    status, _, text = scrape(mport, "/debug/requests")
    assert status == 404 and "hang" not in text
    assert scrape(mport)[0] == 200
    srv.open_gate("release-m2")
    assert c.read_response().status == 200
    c.close()


def test_the_metrics_port_listens_once_the_server_says_ready(start_server):
    """The core binds --metrics-bind while the server is built, before the ready line: the
    first scrape after it is answered, with no waiting (the listener used to be bound only
    once the server ran, after saying ready)."""
    mport = free_port()
    start_server("timed", "--metrics-bind", f"127.0.0.1:{mport}")
    assert scrape(mport)[0] == 200


def test_scrapes_are_not_the_apps_connections(metered):
    """The metrics listener is the event loop's, but its connections are not counted as the
    app's: scraping leaves connections_accepted_total and connections_open alone."""
    _, mport = metered
    before = samples(scrape(mport)[2])
    for _ in range(3):
        after = samples(scrape(mport)[2])
    key = ("sluicegate_connections_accepted_total", ())
    assert after[key] == before[key]
    assert after[("sluicegate_connections_open", ())] == 0


def test_a_slow_scraper_does_not_hold_a_graceful_stop(start_server):
    """A scraper that sends its request a byte at a time is closed at a graceful stop like an
    idle connection: the stop takes well under its graceful timeout. (The metrics thread read
    such a request until it was whole, and the stop waited for the thread.)"""
    import signal
    import threading
    import time

    mport = free_port()
    srv = start_server("timed", "--metrics-bind", f"127.0.0.1:{mport}",
                       "--graceful-timeout", "60", "--header-timeout", "60")
    slow = socket.create_connection(("127.0.0.1", mport), timeout=10)
    slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: m\r\nX-Slow: ")
    stop_dribbling = threading.Event()

    def dribble():
        for _ in range(100):  # 30 s at most
            if stop_dribbling.wait(0.3):
                return
            try:
                slow.sendall(b"a")
            except OSError:
                return

    t = threading.Thread(target=dribble, daemon=True)
    t.start()
    assert scrape(mport)[0] == 200  # the loop has the slow one by now
    started = time.monotonic()
    srv.signal(signal.SIGTERM)
    assert srv.wait_exit(timeout=30) == 0
    took = time.monotonic() - started
    stop_dribbling.set()
    t.join()
    slow.close()
    assert took < 10, f"the stop took {took:.1f}s behind a slow scraper"


def test_metrics_and_debug_pages_alternate_while_a_call_is_in_flight(start_server):
    """/metrics is answered on the event loop's thread and /debug/requests on a thread of its
    own (it waits for the GIL): each connection handed to that thread comes back to the loop
    with its answer, one after the other."""
    mport = free_port()
    srv = start_server("stuck", "--metrics-bind", f"127.0.0.1:{mport}", "--debug-requests")
    c = Conn.open(srv.port)
    c.send(request_bytes("GET", "/hang?token=m3"))
    srv.wait_marks("hang-started", prefix="m3")
    for _ in range(3):
        assert scrape(mport)[0] == 200
        assert scrape(mport, "/debug/requests")[0] == 200
    srv.open_gate("release-m3")
    assert c.read_response().status == 200
    c.close()


def test_metrics_are_answered_while_a_debug_page_waits_for_the_gil(start_server):
    """A /debug/requests page waits for the GIL, which a C call of the app holds (sorting a
    long list); the event loop does not wait with it: a /metrics scrape sent after it is
    answered before the C call ends."""
    import threading

    mport = free_port()
    srv = start_server("busy", "--metrics-bind", f"127.0.0.1:{mport}", "--debug-requests",
                       "--scheduler", "pool")
    c = Conn.open(srv.port)
    c.send(request_bytes("GET", "/hog?token=g1&times=100"))
    srv.wait_marks("hog-started", prefix="g1")
    debug = socket.create_connection(("127.0.0.1", mport), timeout=30)
    debug.sendall(b"GET /debug/requests HTTP/1.1\r\nHost: m\r\n\r\n")  # sent first
    status, _, _ = scrape(mport)
    hog_over_by_then = srv.marks("hog-finished")
    assert status == 200
    page = b""
    while chunk := debug.recv(65536):
        page += chunk
    debug.close()
    assert c.read_response().status == 200
    c.close()
    assert page.startswith(b"HTTP/1.1 200 OK") and "/hog?… HTTP/1.1".encode() in page
    assert not hog_over_by_then, "the scrape waited for the GIL"
