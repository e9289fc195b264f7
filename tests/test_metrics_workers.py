"""Metrics with worker processes: one scrape target, the master's `--metrics-bind`, serving
the sum over the workers (each worker keeps its own listener at PORT + its slot), whose
counters never go back when a worker is replaced (a reload, a kill), with `process_*` per
process and the build once; the addresses in the log at start. Parsed with prometheus_client's
own parser; real processes, real signals, real sockets.
"""

import http.client
import os
import signal
import socket

from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import free_ports, wait_for
from tests.test_workers import children


def scrape(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", "/metrics")
        r = c.getresponse()
        return r.status, r.read().decode()
    finally:
        c.close()


def scraped(port):
    """The text once the listener answers 200."""
    def ok():
        try:
            status, text = scrape(port)
        except OSError:
            return None
        return text if status == 200 else None
    return wait_for(ok, f"metrics on port {port}")


def samples(text):
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


OK_2XX = ("sluicegate_requests_total", (("class", "2xx"),))


def requests(srv, n):
    for _ in range(n):
        assert srv.request("GET", "/").status == 200


def test_the_master_serves_the_sum_over_its_workers(start_server):
    mport = free_ports(3)
    srv = start_server("timed", "--workers", "2", "--metrics-bind", f"127.0.0.1:{mport}")
    log = srv.log_text()
    assert f"Metrics at: http://127.0.0.1:{mport}/metrics (the sum over the workers); each " \
        f"worker's own at 127.0.0.1:{mport + 1}, 127.0.0.1:{mport + 2}" in log, log
    requests(srv, 10)
    total = samples(scraped(mport))
    each = [samples(scraped(mport + w)) for w in (1, 2)]
    assert total[OK_2XX] == 10
    assert sum(e[("sluicegate_requests_total", (("class", "2xx"), ("worker", str(w))))]
               for w, e in zip((1, 2), each)) == 10
    # Histograms summed bucket by bucket.
    assert total[("sluicegate_request_duration_seconds_count", ())] == 10
    assert total[("sluicegate_workers", ())] == 2
    text = scraped(mport)
    assert "{}" not in text
    # process_* per process: the master's without a label, each worker's with its own.
    procs = {labels for (name, labels) in samples(text) if name == "process_resident_memory_bytes"}
    assert procs == {(), (("worker", "1"),), (("worker", "2"),)}
    # Each worker's own counters under their own family, beside the totals.
    per = samples(text)
    assert sum(per[("sluicegate_worker_requests_total", (("class", "2xx"), ("worker", w)))]
               for w in ("1", "2")) == 10
    assert {k for k in per if k[0] == "sluicegate_requests_total"} \
        == {k for k in total if k[0] == "sluicegate_requests_total"}
    builds = [k for k in samples(text) if k[0] == "sluicegate_build_info"]
    assert len(builds) == 1 and "worker" not in dict(builds[0][1]), builds


def test_totals_keep_what_replaced_workers_counted(start_server):
    """A worker's counts do not leave with it: the requests it served after the last scrape
    are in the total once it stopped (it leaves its last reading to the master), and a worker
    killed with SIGKILL leaves what the master last read from it. `rate()` sees no reset."""
    mport = free_ports(4)
    srv = start_server("timed", "--workers", "1", "--metrics-bind", f"127.0.0.1:{mport}")
    requests(srv, 3)
    assert samples(scraped(mport))[OK_2XX] == 3
    requests(srv, 2)  # not scraped before the worker goes
    mark = srv.log_mark()
    srv.signal(signal.SIGHUP)
    srv.wait_log(r"Worker \d+ stopped", since=mark, timeout=30)
    assert samples(scraped(mport))[OK_2XX] == 5
    requests(srv, 1)
    assert samples(scraped(mport))[OK_2XX] == 6  # read from the new worker, added
    (worker,) = children(srv.pid)
    mark = srv.log_mark()
    os.kill(worker, signal.SIGKILL)
    srv.wait_log(r"Worker \d+ ready", since=mark, timeout=30)
    assert samples(scraped(mport))[OK_2XX] == 6
    requests(srv, 1)
    assert samples(scraped(mport))[OK_2XX] == 7


def test_a_single_server_says_where_its_metrics_are(start_server):
    mport = free_ports(1)
    srv = start_server("timed", "--metrics-bind", f"127.0.0.1:{mport}")
    assert f"Metrics at: http://127.0.0.1:{mport}/metrics" in srv.log_text()
    assert "sluicegate_requests_total" in scraped(mport)


def test_the_master_metrics_listener_on_a_unix_socket(start_server, tmp_path):
    path = tmp_path / "m.sock"
    srv = start_server("timed", "--workers", "2", "--metrics-bind", f"unix:{path}")
    requests(srv, 4)

    class Unix(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.connect(str(path))

    c = Unix("localhost", timeout=10)
    c.request("GET", "/metrics")
    r = c.getresponse()
    assert r.status == 200
    assert samples(r.read().decode())[OK_2XX] == 4
    assert (tmp_path / "m.sock.1").exists() and (tmp_path / "m.sock.2").exists()
    srv.stop(signal.SIGTERM)
    assert not path.exists()


def test_a_busy_master_metrics_port_stops_the_start_with_one_line(tmp_path):
    import subprocess
    import sys
    from tests.conftest import ROOT
    port = free_ports(3)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        r = subprocess.run([sys.executable, "-m", "sluicegate", "--workers", "2", "-b",
                            "127.0.0.1:0", "--metrics-bind", f"127.0.0.1:{port}",
                            "tests.apps.timed:app"], capture_output=True, text=True,
                           timeout=60, cwd=str(ROOT))
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("sluicegate: error:")]
    assert errors == [f"sluicegate: error: --metrics-bind 127.0.0.1:{port}: cannot listen: "
                      "Address already in use"], r.stderr
    assert r.returncode != 0 and "Booting worker" not in r.stderr, r.stderr


def test_an_upgrade_with_metrics_bind_is_refused_in_one_line_and_the_old_master_serves(
        start_server):
    """The old master and its workers hold the metrics addresses until they stop: a new
    master of USR2 cannot listen beside them. It says so and exits; the old one keeps serving
    (before, its workers failed to boot on the busy ports)."""
    mport = free_ports(3)
    srv = start_server("timed", "--workers", "1", "--metrics-bind", f"127.0.0.1:{mport}")
    mark = srv.log_mark()
    srv.signal(signal.SIGUSR2)
    srv.wait_log(r"New master \d+ exited \(exit status 1\): this master keeps serving",
                 since=mark, timeout=30)
    log = srv.log_since(mark)
    assert "the old master serves it until it stops" in log and "restart instead" in log, log
    requests(srv, 2)
    assert samples(scraped(mport))[OK_2XX] == 2
