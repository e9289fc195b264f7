"""HTTP/3 faults under load for the fault table (tests/faults/conftest.py): workers recycled by
`--max-requests` while an HTTP/3 load runs (tests/h3_load.py: aioquic connections with several
requests in flight, retrying only what the server marked as not processed, as a browser does).

| fault | allowed to fail |
|---|---|
| HTTP/3 load while `--max-requests` recycles workers | none (retried: streams reset `H3_REQUEST_REJECTED`, or at or above the GOAWAY's stream) |
"""

from __future__ import annotations

from tests.faults.conftest import record
from tests.h3_client import H3Client
from tests.h3_load import H3Load
from tests.helpers import wait_for
from tests.test_http3_lifecycle import tls_options
from tests.tls_certs import tls_certs  # noqa: F401  (the fixture)


def h3_serving(port: int, ca_file: str) -> bool:
    """A request on a new HTTP/3 connection is answered with a pid."""
    try:
        with H3Client(port, ca_file, timeout=20) as c:
            r = c.get("/pid")
    except Exception:  # noqa: BLE001 - not serving, whatever the reason
        return False
    return r.status == 200 and bytes(r.body).isdigit()


def test_http3_load_while_max_requests_recycles_workers(start_server, tls_certs):
    """Workers recycled under HTTP/3 load lost 0.5-1 % of the requests (a worker's coming and
    going moved open connections' datagrams to a worker that did not know them; GOAWAY named
    the wrong stream): none may fail now."""
    srv = start_server("workers", *tls_options(tls_certs), "--workers", "2",
                       "--max-requests", "100", "--max-requests-jitter", "0")
    with H3Load(srv.port, str(tls_certs.ca_cert), clients=16, streams=4) as load:
        load.wait_for(100)
        wait_for(lambda: len(load.pids) >= 12, "twelve workers' answers (ten recycles)", 180,
                 context=lambda: f"{load.ok} ok, failed {load.failed[:5]}")
        load.wait_for(100)
    ok = h3_serving(srv.port, str(tls_certs.ca_cert))
    retried = sum(load.retried.values())
    record("HTTP/3 load while `--max-requests` recycles workers", load,
           f"0 ({retried} retried as marked)", ok)
    assert load.failed == [], load.failed[:10]
    assert ok
