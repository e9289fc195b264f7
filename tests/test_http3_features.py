"""HTTP/3 beyond the request path (tests/test_http3.py has that): 0-RTT (`--http3-0rtt`), the
environ's TLS facts, the metrics, the Retry path (`--http3-retry-above`), the handshake
timeout, and worker processes each with their own UDP socket.

0-RTT is shown without timing: the step client (tests/h3_step_client.py) holds back its
datagrams after its first flight, its Finished among them, so the server cannot complete the
handshake while the test looks; what the server answered then, it answered to early data.
The server's state is read from its metrics listener, never inferred from a wait.
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import ssl

from prometheus_client.parser import text_string_to_metric_families

from tests.h3_client import H3Client
from tests.h3_step_client import StepClient, raw_initial, ticket_from
from tests.helpers import free_ports, wait_for
from tests.test_tls import start_fails
from tests.test_workers import _pid_from, children
from tests.tls_certs import TlsCerts, tls_certs  # noqa: F401  (the fixture)

MAX_EARLY_DATA = 0xFFFFFFFF


def tls_options(c: TlsCerts):
    return ["--certfile", str(c.server_chain), "--keyfile", str(c.server_key), "--http3"]


def env_lines(body: bytes) -> dict:
    """The /environ answer's `KEY=VALUE` lines; a PEM value (SSL_CLIENT_CERT) spans lines."""
    env, key = {}, None
    for line in body.decode("latin-1").splitlines():
        if key is not None and env[key].startswith("-----BEGIN") and "-----END" not in env[key]:
            env[key] += "\n" + line
            continue
        if not line:  # the PEM's last line break
            continue
        key, value = line.split("=", 1)
        env[key] = value
    return env


class Metered:
    """A server with a metrics listener, and its HTTP/3 series."""

    def __init__(self, start_server, app, *options):
        self.mport = free_ports(1)
        self.srv = start_server(app, *options, "--metrics-bind", f"127.0.0.1:{self.mport}")
        wait_for(lambda: self._scrape_ok(), "the metrics listener")

    def _scrape_ok(self) -> bool:
        try:
            self.samples()
            return True
        except OSError:
            return False

    def samples(self) -> dict:
        c = http.client.HTTPConnection("127.0.0.1", self.mport, timeout=10)
        try:
            c.request("GET", "/metrics")
            text = c.getresponse().read().decode()
        finally:
            c.close()
        out = {}
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return out

    def event(self, name: str) -> float:
        return self.samples()[("sluicegate_http3_events_total", (("event", name),))]

    def connections(self, state: str) -> float:
        return self.samples()[("sluicegate_http3_connections", (("state", state),))]


# -- 0-RTT ----------------------------------------------------------------------------------

def test_a_get_in_0rtt_is_served_before_the_handshake_completes(start_server, tls_certs):
    m = Metered(start_server, "http3", *tls_options(tls_certs), "--http3-0rtt")
    ca = str(tls_certs.ca_cert)
    ticket = ticket_from(m.srv.port, ca)
    assert ticket.max_early_data_size == MAX_EARLY_DATA
    with StepClient(m.srv.port, ca, ticket, hold=True) as c:
        early = c.response(c.request("GET", "/environ"))
        # Answered while the client's Finished was held back: the server served early data.
        assert c.handshake is not None and c.handshake.early_data_accepted
        assert c.handshake.session_resumed
        assert m.event("early_served") == 1
        c.release()
        after = c.response(c.request("GET", "/environ"))
    assert early.status == 200
    e = env_lines(bytes(early.body))
    assert e["sluicegate.early_data"] == "True"
    assert e["SERVER_PROTOCOL"] == "HTTP/3" and e["SSL_SESSION_RESUMED"] == "Resumed"
    assert env_lines(bytes(after.body))["sluicegate.early_data"] == "False"


def test_a_post_in_0rtt_waits_for_the_handshake_before_the_app(start_server, tls_certs):
    m = Metered(start_server, "http3", *tls_options(tls_certs), "--http3-0rtt")
    ca = str(tls_certs.ca_cert)
    ticket = ticket_from(m.srv.port, ca)
    with StepClient(m.srv.port, ca, ticket, hold=True) as c:
        sid = c.request("POST", "/gate?name=post", body=b"not to be replayed")
        # The server has the request and holds it: the handshake is not complete (the
        # client's side of it is: its Finished is held back).
        c.pump(lambda: c.handshake is not None and m.event("early_waited") == 1)
        assert c.handshake.early_data_accepted
        assert m.srv.marks("entered") == []
        assert c.responses[sid].status == 0
        c.release()
        m.srv.wait_marks("entered", 1)
        m.srv.open_gate("post")
        r = c.response(sid)
    assert (r.status, bytes(r.body)) == (200, b"through the gate")
    assert m.event("early_served") == 0


def test_a_0rtt_client_that_never_finishes_its_handshake_is_dropped_at_the_header_timeout(
        start_server, tls_certs):
    """With 0-RTT the connection is served before its handshake completes; the handshake is
    still bounded by --header-timeout: a client whose Finished never comes is closed, its
    state dropped, and the POST it sent never reaches the app."""
    m = Metered(start_server, "http3", *tls_options(tls_certs), "--http3-0rtt",
                "--header-timeout", "1")
    ca = str(tls_certs.ca_cert)
    ticket = ticket_from(m.srv.port, ca)
    with StepClient(m.srv.port, ca, ticket, hold=True) as c:
        get = c.request("GET", "/", send=False)
        c.request("POST", "/gate?name=never", body=b"x")  # both in the first flight
        assert c.response(get).status == 200
        wait_for(lambda: m.event("early_waited") == 1, "the POST held")
        wait_for(lambda: m.event("handshake_timeout") == 1, "the handshake's timeout")
        wait_for(lambda: m.connections("open") == 0, "the connection's end")
    assert m.connections("handshake") == 0 and m.event("connection") == 1  # the ticket's
    assert m.srv.marks("entered") == []


def test_a_replayed_first_flight_does_not_reach_the_app_again(start_server, tls_certs):
    """An attacker sends a captured first flight (ClientHello with the ticket, and a GET in
    0-RTT) again from another address: the ticket was used once, so the copy resumes nothing,
    its early data is refused, and the app is not called a second time."""
    m = Metered(start_server, "http3", *tls_options(tls_certs), "--http3-0rtt",
                "--header-timeout", "1")
    ca = str(tls_certs.ca_cert)
    ticket = ticket_from(m.srv.port, ca)
    with StepClient(m.srv.port, ca, ticket, hold=True) as c:
        r = c.response(c.request("GET", "/closing?token=replayed"))
        assert (r.status, bytes(r.body)) == (200, b"closing")
        c.release()
        flight = list(c.first_flight)
    assert len(flight) >= 1 and m.event("early_served") == 1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as attacker:
        attacker.connect(("127.0.0.1", m.srv.port))

        def replayed() -> bool:
            # Sent again until the server takes it for a new connection: while quinn still
            # drains the first one, a packet with its connection ID goes to it.
            for data in flight:
                attacker.send(data)
            return m.connections("handshake") + m.event("handshake_timeout") >= 1

        wait_for(replayed, "the copy's handshake to start")
        # The attacker cannot finish the handshake: it ends at --header-timeout.
        wait_for(lambda: m.event("handshake_timeout") == 1, "the copy's handshake to end")
    assert m.event("early_served") == 1
    assert m.srv.marks("closed", prefix="replayed") == ["replayed"]


def test_without_the_flag_0rtt_is_refused_and_the_request_served_after_the_handshake(
        start_server, tls_certs):
    m = Metered(start_server, "http3", *tls_options(tls_certs))
    ca = str(tls_certs.ca_cert)
    ticket = ticket_from(m.srv.port, ca)
    # The server's tickets offer no early data; a client that sends some anyway...
    assert ticket.max_early_data_size is None
    ticket.max_early_data_size = MAX_EARLY_DATA
    with StepClient(m.srv.port, ca, ticket) as c:
        r = c.response(c.request("GET", "/environ"))
        # ...sees it refused, and its request is sent again after the handshake.
        assert c.handshake is not None and not c.handshake.early_data_accepted
        assert c.handshake.session_resumed
    assert r.status == 200
    assert env_lines(bytes(r.body))["sluicegate.early_data"] == "False"
    assert m.event("early_served") == 0 and m.event("early_waited") == 0


# -- TLS facts ------------------------------------------------------------------------------

def https_environ(port: int, c: TlsCerts, cert: bool = False) -> dict:
    ctx = ssl.create_default_context(cafile=str(c.ca_cert))
    if cert:
        ctx.load_cert_chain(str(c.client_cert), str(c.client_key))
    conn = http.client.HTTPSConnection("localhost", port, timeout=10, context=ctx)
    try:
        conn.request("GET", "/environ")
        return env_lines(conn.getresponse().read())
    finally:
        conn.close()


def ssl_keys(env: dict) -> dict:
    return {k: v for k, v in env.items() if k.startswith("SSL_") or k == "HTTPS"}


def test_the_environ_has_the_tls_facts_https_gives(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs))
    with H3Client(srv.port, str(tls_certs.ca_cert)) as c:
        r = c.get("/environ")
        suite = c.proto._quic.tls.key_schedule.cipher_suite
    h3 = env_lines(bytes(r.body))
    h1 = https_environ(srv.port, tls_certs)
    assert h3["wsgi.url_scheme"] == "https"
    assert ssl_keys(h3).keys() == ssl_keys(h1).keys()
    assert h3["HTTPS"] == "on" and h3["SSL_PROTOCOL"] == "TLSv1.3"
    assert h3["SSL_CIPHER"] == "TLS_" + suite.name  # TLS_AES_128_GCM_SHA256, as OpenSSL
    assert h3["SSL_TLS_SNI"] == h1["SSL_TLS_SNI"] == "localhost"
    assert h3["SSL_SESSION_RESUMED"] == "Initial"
    assert h3["SSL_CLIENT_VERIFY"] == "NONE"


def test_a_client_certificate_reaches_the_environ(start_server, tls_certs):
    srv = start_server("http3", *tls_options(tls_certs), "--ca-certs", str(tls_certs.ca_cert),
                       "--cert-reqs", "required")
    cert = (str(tls_certs.client_cert), str(tls_certs.client_key))
    with StepClient(srv.port, str(tls_certs.ca_cert), cert=cert) as c:
        r = c.response(c.request("GET", "/environ"))
    h3 = env_lines(bytes(r.body))
    h1 = https_environ(srv.port, tls_certs, cert=True)
    assert h3["SSL_CLIENT_VERIFY"] == "SUCCESS"
    for key in ("SSL_CLIENT_S_DN", "SSL_CLIENT_I_DN", "SSL_CLIENT_CERT"):
        assert h3[key] == h1[key]
    assert "CN=sluicegate-test-client" in h3["SSL_CLIENT_S_DN"]


# -- metrics, Retry, handshake timeout --------------------------------------------------------

def test_metrics_count_http3_connections_streams_and_the_access_log_says_http3(
        start_server, tls_certs):
    m = Metered(start_server, "http3", *tls_options(tls_certs), "--access-log", "-")
    ca = str(tls_certs.ca_cert)
    with H3Client(m.srv.port, ca) as a:
        assert [a.get(f"/q?{i}").status for i in range(3)] == [200] * 3
        assert m.connections("open") == 1
        with H3Client(m.srv.port, ca) as b:
            assert b.get("/").status == 200
            assert m.connections("open") == 2
    wait_for(lambda: m.connections("open") == 0, "the connections' close")
    assert m.event("connection") == 2 and m.event("stream") == 4
    assert m.connections("handshake") == 0
    assert m.samples()[("sluicegate_requests_total", (("class", "2xx"),))] == 4
    m.srv.stop()
    lines = [x for x in m.srv.stdout_text().splitlines() if '"GET /q?' in x]
    assert len(lines) == 3 and all("HTTP/3" in x for x in lines)


def test_past_the_retry_threshold_a_client_is_sent_a_retry_and_served(start_server, tls_certs):
    m = Metered(start_server, "http3", *tls_options(tls_certs), "--http3-retry-above", "0")
    with H3Client(m.srv.port, str(tls_certs.ca_cert)) as c:
        assert c.get("/").status == 200
        # aioquic followed the Retry: its connection's ID is the one the Retry gave.
        assert c.proto._quic._retry_count == 1
    assert m.event("retry") == 1 and m.event("connection") == 1


def test_with_n_handshakes_under_way_the_next_client_is_sent_a_retry(start_server, tls_certs):
    """--http3-retry-above counts handshakes in progress: one client stalled after its Initial
    holds one, and the next client, past the threshold of 1, gets a Retry first."""
    m = Metered(start_server, "http3", *tls_options(tls_certs), "--http3-retry-above", "1")
    ca = str(tls_certs.ca_cert)
    with H3Client(m.srv.port, ca) as c:  # no handshake under way: no Retry
        assert c.get("/").status == 200 and c.proto._quic._retry_count == 0
    sock, _ = raw_initial(m.srv.port, ca)
    try:
        wait_for(lambda: m.connections("handshake") == 1, "the stalled handshake")
        with H3Client(m.srv.port, ca) as c:
            assert c.get("/").status == 200
            assert c.proto._quic._retry_count == 1
    finally:
        sock.close()
    assert m.event("retry") == 1 and m.event("connection") == 2


def test_below_the_retry_threshold_no_retry_is_sent(start_server, tls_certs):
    m = Metered(start_server, "http3", *tls_options(tls_certs))
    with H3Client(m.srv.port, str(tls_certs.ca_cert)) as c:
        assert c.get("/").status == 200
        assert c.proto._quic._retry_count == 0
    assert m.event("retry") == 0


def test_a_client_silent_after_its_initial_is_dropped_at_the_header_timeout(
        start_server, tls_certs):
    m = Metered(start_server, "http3", *tls_options(tls_certs), "--header-timeout", "1")
    sock, sent = raw_initial(m.srv.port, str(tls_certs.ca_cert))
    try:
        assert sent and len(sent[0]) >= 1200  # a padded Initial (RFC 9000 §14.1)
        wait_for(lambda: m.connections("handshake") == 1, "the handshake under way")
        # The server answered (its ServerHello and certificate) and waits for the rest.
        sock.settimeout(10)
        assert sock.recv(65536)
        wait_for(lambda: m.event("handshake_timeout") == 1, "the handshake's timeout")
        assert m.connections("handshake") == 0 and m.connections("open") == 0
        assert m.event("connection") == 0
    finally:
        sock.close()
    # The server serves on.
    with H3Client(m.srv.port, str(tls_certs.ca_cert)) as c:
        assert c.get("/").status == 200


# -- worker processes -------------------------------------------------------------------------

def h3_pids(port: int, ca: str, connections: int) -> list:
    """The pid that answered each of `connections` new connections (each its own UDP port)."""
    pids = []
    for _ in range(connections):
        with H3Client(port, ca) as c:
            r = c.get("/pid")
            assert r.status == 200
            pids.append(int(r.body))
    return pids


def test_workers_each_serve_http3_a_connection_stays_on_one_and_hup_keeps_it(
        start_server, tls_certs):
    srv = start_server("workers", "--workers", "2", *tls_options(tls_certs))
    ca = str(tls_certs.ca_cert)
    workers = set(children(srv.pid))
    # The kernel spreads new connections over both workers' sockets (SO_REUSEPORT)...
    assert set(h3_pids(srv.port, ca, 16)) == workers
    # ...and every packet of one connection (one address pair) reaches the same worker.
    with H3Client(srv.port, ca) as c:
        assert len({int(c.get("/pid").body) for _ in range(20)}) == 1
    srv.signal(signal.SIGHUP)
    srv.wait_log(r"Reload done: 2 new worker\(s\) serving", timeout=60)
    # The old workers finish and leave.
    new = set(wait_for(lambda: (lambda c: len(c) == 2 and c)(children(srv.pid)),
                       "the old workers' exit", timeout=30))
    assert not new & workers
    assert set(h3_pids(srv.port, ca, 16)) == new
    log = srv.log_text()
    assert "cannot bind" not in log and len(re.findall(r"Worker \d+ ready", log)) == 4


def test_usr2s_new_master_serves_http3_once_the_old_one_left(start_server, tls_certs, tmp_path):
    """The new master's workers bind their own UDP sockets beside the old ones (SO_REUSEPORT):
    HTTP/3 is served during the overlap, and by the new workers alone once the old master
    stopped."""
    pid_file = str(tmp_path / "sg.pid")
    srv = start_server("workers", "--workers", "2", "--pid", pid_file, *tls_options(tls_certs))
    ca = str(tls_certs.ca_cert)
    old = set(children(srv.pid))
    assert set(h3_pids(srv.port, ca, 8)) <= old
    new_master = None
    try:
        srv.signal(signal.SIGUSR2)
        wait_for(lambda: _pid_from(pid_file) not in (None, srv.pid), "the new master's pid",
                 timeout=30)
        new_master = _pid_from(pid_file)
        wait_for(lambda: len(children(new_master)) == 2, "the new master's workers", timeout=30)
        srv.wait_log(rf"\[{new_master}\] \[INFO\] Listening at: https://127.0.0.1:{srv.port}")
        new = set(children(new_master))
        # Both generations' sockets are bound: every connection is served by one of them.
        assert set(h3_pids(srv.port, ca, 8)) <= old | new
        srv.signal(signal.SIGTERM)  # the operator stops the old master
        assert srv.wait_exit() == 0
        assert set(h3_pids(srv.port, ca, 16)) == new
    finally:
        if new_master:
            os.kill(new_master, signal.SIGTERM)
            wait_for(lambda: not os.path.exists(f"/proc/{new_master}") or
                     open(f"/proc/{new_master}/stat").read().split()[2] == "Z",
                     "the new master to end", timeout=30)


def test_0rtt_without_http3_is_refused_in_one_line(tls_certs):
    line = start_fails("--certfile", str(tls_certs.server_chain), "--keyfile",
                       str(tls_certs.server_key), "--http3-0rtt")
    assert "--http3-0rtt needs --http3" in line
