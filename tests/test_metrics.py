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
    status, ctype, text = scrape(mport)
    assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
    s = samples(text)
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
    mport = free_port()
    srv = start_server("stuck", "--metrics-bind", f"127.0.0.1:{mport}")
    wait_for(lambda: scrape_ok(mport), "the metrics listener")
    c = Conn.open(srv.port)
    c.send(request_bytes("GET", "/hang?token=m1"))
    srv.wait_marks("hang-started", prefix="m1")
    status, _, text = scrape(mport, "/debug/requests")
    assert status == 200
    assert "1 app call(s) in flight" in text
    assert "GET /hang?token=m1 HTTP/1.1  age " in text
    assert "in wait_for_the_database" in text
    srv.open_gate("release-m1")
    assert c.read_response().status == 200
    c.close()
    wait_for(lambda: "0 app call(s) in flight" in scrape(mport, "/debug/requests")[2],
             "the call to leave the list")


def test_each_worker_has_its_own_listener_and_label(start_server):
    mport = free_port()
    while True:  # two consecutive free ports
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", mport + 1))
                break
            except OSError:
                mport = free_port()
    srv = start_server("timed", "--workers", "2", "--metrics-bind", f"127.0.0.1:{mport}")
    for w in (0, 1):
        wait_for(lambda w=w: scrape_ok(mport + w), f"worker {w}'s metrics listener")
        text = scrape(mport + w)[2]
        assert f'sluicegate_requests_total{{worker="{w}",class="2xx"}}' in text
        assert samples(text)[("sluicegate_connections_accepted_total", (("worker", str(w)),))] >= 0
