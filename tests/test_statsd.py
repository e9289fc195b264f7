"""gunicorn's statsd metrics (`--statsd-host`, `--statsd-prefix`, `--dogstatsd-tags`): the
names, types and spelling gunicorn's `instrument/statsd.py` sends, checked two ways:

- received by a real statsd server, collectd's statsd plugin (Debian's collectd-core; Debian 12
  has no prometheus-statsd-exporter), which writes what it aggregated to CSV files: counters
  as `derive`, timers as `latency`, gauges as `gauge`, with the prefix; beside the server's own
  Prometheus endpoint (--metrics-bind), which counts the same requests;
- read off the wire from a UDP socket this test binds, for the exact datagram text with
  Datadog's tags (which collectd's parser does not take).
"""

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import free_ports, status_of, wait_for

COLLECTD = shutil.which("collectd") or "/usr/sbin/collectd"


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Collectd:
    """collectd with only its statsd plugin (on `port`) and its CSV writer, every second."""

    def __init__(self, base: Path, port: int):
        self.csv = base / "csv"
        conf = base / "collectd.conf"
        conf.write_text(f"""
Hostname "sgtest"
FQDNLookup false
Interval 1
BaseDir "{base}"
PIDFile "{base}/collectd.pid"
PluginDir "/usr/lib/collectd"
TypesDB "/usr/share/collectd/types.db"
LoadPlugin statsd
LoadPlugin csv
<Plugin statsd>
  Host "127.0.0.1"
  Port "{port}"
  TimerCount true
</Plugin>
<Plugin csv>
  DataDir "{self.csv}"
  StoreRates false
</Plugin>
""")
        self.log = base / "collectd.out"
        self.proc = subprocess.Popen([COLLECTD, "-f", "-C", str(conf)],
                                     stdout=open(self.log, "wb"), stderr=subprocess.STDOUT)
        wait_for(lambda: "Listening on" in self.log.read_text(), "collectd's statsd listener",
                 context=self.log.read_text)

    def values(self, kind: str, name: str):
        """The values collectd wrote for metric `name` of type `kind`, oldest first."""
        out = []
        for f in sorted((self.csv / "sgtest" / "statsd").glob(f"{kind}-{name}-*")):
            for line in f.read_text().splitlines()[1:]:
                out.append(float(line.split(",")[1]))
        return out

    def names(self):
        d = self.csv / "sgtest" / "statsd"
        return sorted(p.name.rsplit("-", 3)[0] for p in d.iterdir()) if d.exists() else []

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def get(port: int, path: str) -> int:
    return status_of(port, path)


@pytest.mark.skipif(not os.path.exists(COLLECTD), reason="collectd-core is not installed")
def test_statsd_metrics_reach_a_real_statsd_server_beside_prometheus(start_server, tmp_path):
    port = free_udp_port()
    collectd = Collectd(tmp_path, port)
    mport = free_ports(3)  # the master's, then PORT+1 and PORT+2 for the two workers
    try:
        server = start_server("access_atoms", "--workers", "2", "--statsd-host",
                              f"127.0.0.1:{port}", "--statsd-prefix", "shop",
                              "--metrics-bind", f"127.0.0.1:{mport}")
        for _ in range(10):
            assert get(server.port, "/?sleep=0.003") == 200
        for _ in range(3):
            assert get(server.port, "/gone?status=404&sleep=0.003") == 404

        def total(kind, name):
            return sum(collectd.values(kind, name))

        wait_for(lambda: total("derive", "shop.gunicorn.requests") >= 13
                 and total("derive", "shop.gunicorn.request.status.404") >= 3
                 and collectd.values("gauge", "shop.gunicorn.workers"),
                 "13 requests, 3 of them 404, and the workers gauge at collectd",
                 timeout=20, context=lambda: str(collectd.names()))
        # collectd keeps counting the counters it was sent: the last value is the total.
        assert collectd.values("derive", "shop.gunicorn.requests")[-1] == 13
        assert collectd.values("derive", "shop.gunicorn.request.status.200")[-1] == 10
        assert collectd.values("derive", "shop.gunicorn.request.status.404")[-1] == 3
        assert collectd.values("gauge", "shop.gunicorn.workers")[-1] == 2
        # A timer's samples are counted per interval: the 13 may span two of them. (collectd
        # drops timings under 1 ms: the requests take 3 ms.)
        wait_for(lambda: sum(collectd.values("gauge", "shop.gunicorn.request.duration-count"))
                 == 13, "13 duration samples at collectd",
                 context=lambda: str(collectd.values("gauge",
                                                     "shop.gunicorn.request.duration-count")))
        # collectd writes each of a timer's values to its own file, not all at once: the
        # average may land after the count was read.
        wait_for(lambda: collectd.values("latency", "shop.gunicorn.request.duration-average"),
                 "the durations' average at collectd", timeout=20,
                 context=lambda: str(collectd.names()))
        # The Prometheus endpoint counts the same requests.
        c = http.client.HTTPConnection("127.0.0.1", mport, timeout=10)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        counted = sum(float(m[1]) for m in re.finditer(
            r'^sluicegate_requests_total\{[^}]*\} (\S+)$', text, re.M))
        assert counted == 13, text[:2000]
    finally:
        collectd.stop()


def test_statsd_datagrams_are_gunicorns_with_dogstatsd_tags(start_server):
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(10)
    try:
        server = start_server("errors", "--statsd-host", f"127.0.0.1:{receiver.getsockname()[1]}",
                              "--statsd-prefix", "web.", "--dogstatsd-tags",
                              "env:test,team:shop")
        assert get(server.port, "/ok") == 200
        assert get(server.port, "/raise_before") == 500
        lines = []
        deadline = time.monotonic() + 10
        while not any("status.500" in ln for ln in lines) or \
                not any("gunicorn.log." in ln for ln in lines):
            assert time.monotonic() < deadline, lines
            lines += receiver.recv(65536).decode("ascii").split("\n")
    finally:
        receiver.close()
    tags = "|#env:test,team:shop"
    assert f"web.gunicorn.requests:1|c|@1.0{tags}" in lines
    assert f"web.gunicorn.request.status.200:1|c|@1.0{tags}" in lines
    assert f"web.gunicorn.request.status.500:1|c|@1.0{tags}" in lines
    durations = [ln for ln in lines if ln.startswith("web.gunicorn.request.duration:")]
    assert len(durations) == 2 and all(
        re.fullmatch(r"web\.gunicorn\.request\.duration:\d+\.\d+\|ms" + re.escape(tags), d)
        for d in durations), durations
    # The app's exception is an error line of the log, counted as gunicorn counts it.
    assert f"web.gunicorn.log.exception:1|c|@1.0{tags}" in lines, lines
