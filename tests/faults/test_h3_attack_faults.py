"""Fault-suite rows for HTTP/3 under attack (the table `conftest.py` prints): while HTTPS
clients keep a load on the server, an HTTP/3 client grants its request streams no credit, or
HTTP/3 clients stop acknowledging a download. Each row: requests of the load, failures
(allowed: none), and whether the server serves afterwards. The behaviours themselves are
asserted in tests/test_h3_attack.py; run both with ``./dev test -k h3_attack``.
"""

from __future__ import annotations

import http.client
import ssl

from tests.faults.conftest import record
from tests.load import Load
from tests.h3_client import H3Client
from tests.helpers import wait_for
from tests.test_h3_attack import (MIB, SEND_WINDOW, SEND_WINDOW_PER_PROCESS, STALLED_EXTRA,
                                  rss_peak, silent_downloads, stalled_answer, tls_options)
from tests.test_http3_features import Metered
from tests.tls_certs import TlsCerts, tls_certs  # noqa: F401  (the fixture)

CLIENTS = 4
APP = "http3"


def https_load(port: int, c: TlsCerts) -> Load:
    """HTTP/1.1 over TLS on the listener HTTP/3 sits beside; a request unanswered for 10 s
    fails (the frozen process made them wait 29.5 s)."""
    ctx = ssl.create_default_context(cafile=str(c.ca_cert))
    ctx.set_alpn_protocols(["http/1.1"])
    return Load(port, CLIENTS, path="/", timeout=10, connect=lambda: http.client.HTTPSConnection(
        "localhost", port, timeout=10, context=ctx))


def h3_serving(port: int, c: TlsCerts) -> bool:
    try:
        with H3Client(port, str(c.ca_cert)) as h:
            return h.get("/").status == 200
    except Exception:
        return False


def test_h3_streams_without_credit_under_load(start_server, tls_certs):
    srv = start_server(APP, *tls_options(tls_certs), "--write-timeout", "40")
    with https_load(srv.port, tls_certs) as load:
        load.wait_for(200)
        stalled = [stalled_answer(srv.port, str(tls_certs.ca_cert)) for _ in range(3)]
        load.wait_for(200)
        still = all(c.responses[sid].status == 0 for c, sid in stalled)
        for c, _ in stalled:
            c.close()
    ok = still and h3_serving(srv.port, tls_certs) and srv.alive()
    record("HTTP/3 heads without stream credit, 3 streams", load, "0", ok)
    assert load.failed == [], load.failed
    assert ok


def test_h3_clients_that_stop_acknowledging_under_load(start_server, tls_certs):
    n = 8
    m = Metered(start_server, APP, *tls_options(tls_certs), "--write-timeout", "3",
                "--threads", f"{n + 4}")
    ca = str(tls_certs.ca_cert)
    with https_load(m.srv.port, tls_certs) as load:
        load.wait_for(200)
        before = rss_peak(m.srv.pid)
        clients = silent_downloads(m.srv.port, ca, n)
        try:
            wait_for(lambda: m.connections("open") == 0, "the silent connections' close",
                     timeout=25)
        finally:
            for c in clients:
                c.sock.close()
        load.wait_for(200)
    grown = rss_peak(m.srv.pid) - before
    bound = min(n * SEND_WINDOW, SEND_WINDOW_PER_PROCESS) + n * STALLED_EXTRA + 16 * MIB
    ok = grown <= bound and h3_serving(m.srv.port, tls_certs) and m.srv.alive()
    record(f"HTTP/3 {n} clients that stop acknowledging (peak RSS +{grown // MIB} MiB, "
           f"bound {bound // MIB})", load, "0", ok)
    assert load.failed == [], load.failed
    assert ok
