"""Fault-suite rows for HTTP/2 under attack (the table `conftest.py` prints): while HTTP/1.1
clients keep a load on the server, an HTTP/2 client holds streams past a reload's graceful time,
or announces a zero window on many streams. Each row: requests of the load, failures (allowed:
none), and whether the server serves afterwards. The behaviours themselves are asserted in
tests/test_h2_attack.py; run both with ``./dev test -k h2_attack``.
"""

from __future__ import annotations

import signal
import uuid

import h2.errors

from tests.faults.conftest import record
from tests.load import Load
from tests.faults.test_faults import serving
from tests.h2_client import H2Client
from tests.helpers import wait_for
from tests.test_h2_attack import ThreadPeak, thread_count, zero_window_clients
from tests.test_workers import children

CLIENTS = 4
APP = "h2_attack"


def test_h2_streams_cut_at_a_reloads_graceful_timeout(start_server):
    srv = start_server(APP, "--workers", "2", "--graceful-timeout", "1")
    first = set(children(srv.pid))
    c = H2Client(srv.port, timeout=30)
    tok = uuid.uuid4().hex
    try:
        with Load(srv.port, CLIENTS) as load:
            load.wait_for(200)
            held = [c.request("GET", f"/hold?name={tok}-{i}") for i in range(2)]
            srv.wait_marks("entered", 2)
            mark = srv.log_mark()
            srv.signal(signal.SIGHUP)
            rs = c.responses(held)
            srv.wait_log(r"Shutdown cut 2 request\(s\)", since=mark, timeout=30)
            wait_for(lambda: not first & set(children(srv.pid)), "the old worker to leave",
                     timeout=30)
            load.wait_for(200)
    finally:
        c.close()
    ok = serving(srv.port) and srv.alive() and "Fatal Python error" not in srv.log_text()
    record("HTTP/2 streams past a reload's --graceful-timeout (reset, counted)", load, "0", ok)
    assert [r.reset for r in rs] == [h2.errors.ErrorCodes.CANCEL] * 2
    assert load.failed == [], load.failed
    assert ok


def test_h2_zero_window_on_1200_streams(start_server):
    threads_max = 4
    srv = start_server(APP, "--threads", f"1:{threads_max}", "--write-timeout", "3")
    with Load(srv.port, CLIENTS) as load:
        load.wait_for(200)
        service = thread_count(srv.pid)
        with ThreadPeak(srv.pid) as peak:
            clients = zero_window_clients(srv.port, connections=12, streams=100)
            load.wait_for(200)
        for c, _ in clients:
            c.read_until_closed(timeout=30)
            c.close()
        load.wait_for(100)
    ok = serving(srv.port) and srv.alive() and peak.peak <= service + threads_max + 2
    record(f"HTTP/2 zero window, 12 x 100 streams (threads {peak.peak}, "
           f"bound {service + threads_max + 2})", load, "0", ok)
    assert load.failed == [], load.failed
    assert ok
