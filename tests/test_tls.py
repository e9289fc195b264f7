"""HTTPS served by the Rust core, over real sockets with real clients: Python's `ssl`
module and `curl --cacert`, certificates made by `openssl` (tests/tls_certs.py).

Every feature a plaintext connection has, through the `Tls` transport: keep-alive, pipelining,
chunked uploads, `100-continue`, streamed responses, a large `bytes` body, `wsgi.file_wrapper`
and `--static` (read and encrypted instead of `sendfile`), the health path; the environ's
mod_ssl facts; mutual TLS; what the TLS port does with plain HTTP, garbage and a handshake that
never ends; listeners side by side; worker processes; and the one-line errors for bad files.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import random
import shutil
import socket
import ssl
import subprocess
import sys
import signal
import time
import warnings
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

from tests.apps.file_wrapper import file_bytes
from tests.apps.streaming import expected_chunks
from tests.helpers import wait_for
from tests.load import Load
from tests.tls_certs import TlsCerts, tls_certs  # noqa: F401  (the fixture)

CURL = shutil.which("curl")
PYTHON = sys.executable


def tls_options(c: TlsCerts) -> List[str]:
    return ["--certfile", str(c.server_chain), "--keyfile", str(c.server_key)]


def client_context(c: TlsCerts, cert: bool = False) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(c.ca_cert))
    if cert:
        ctx.load_cert_chain(str(c.client_cert), str(c.client_key))
    return ctx


def https(srv, c: TlsCerts, port: Optional[int] = None, cert: bool = False,
          timeout: float = 10) -> http.client.HTTPSConnection:
    return http.client.HTTPSConnection(srv.host, port or srv.port, timeout=timeout,
                                       context=client_context(c, cert))


def get(srv, c: TlsCerts, path: str, headers=(), cert: bool = False) -> Tuple[int, dict, bytes]:
    conn = https(srv, c, cert=cert)
    try:
        conn.request("GET", path, headers=dict(headers))
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def curl(c: TlsCerts, *args: str) -> subprocess.CompletedProcess:
    if CURL is None:
        pytest.skip("curl is not installed (./dev test installs it)")
    return subprocess.run([CURL, "-sS", "--cacert", str(c.ca_cert), *args],
                          capture_output=True, timeout=60)


def tls_socket(srv, c: TlsCerts, cert: bool = False) -> ssl.SSLSocket:
    raw = socket.create_connection((srv.host, srv.port), timeout=10)
    return client_context(c, cert).wrap_socket(raw, server_hostname=srv.host)


def read_until_closed(sock: socket.socket) -> bytes:
    out = b""
    while True:
        try:
            piece = sock.recv(65536)
        except (ssl.SSLError, ConnectionResetError):
            break
        if not piece:
            break
        out += piece
    return out


# --- The features, over TLS.


def test_get_with_python_ssl_and_curl(start_server, tls_certs):
    srv = start_server("hello", *tls_options(tls_certs))
    status, headers, body = get(srv, tls_certs, "/")
    assert status == 200 and body
    r = curl(tls_certs, "-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n",
             f"https://{srv.host}:{srv.port}/", f"https://{srv.host}:{srv.port}/again")
    assert r.returncode == 0, r.stderr
    # Two requests, one connection (curl reuses it: keep-alive over TLS).
    assert r.stdout.decode().splitlines() == ["200 1", "200 0"]


def test_keepalive_several_requests_on_one_connection(start_server, tls_certs):
    srv = start_server("echo_environ", *tls_options(tls_certs))
    conn = https(srv, tls_certs)
    try:
        for i in range(5):
            conn.request("GET", f"/n{i}")
            r = conn.getresponse()
            assert r.status == 200
            assert json.loads(r.read())["PATH_INFO"] == f"/n{i}"
    finally:
        conn.close()


def test_pipelined_requests_answered_in_order(start_server, tls_certs):
    srv = start_server("echo_environ", *tls_options(tls_certs))
    s = tls_socket(srv, tls_certs)
    with s:
        s.sendall(b"".join(f"GET /p{i} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for i in range(4))
                  + b"GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = read_until_closed(s)
    paths = [json.loads(part.split(b"\r\n\r\n", 1)[1].split(b"HTTP/1.1 ")[0])["PATH_INFO"]
             for part in data.split(b"HTTP/1.1 200 OK")[1:]]
    assert paths == ["/p0", "/p1", "/p2", "/p3", "/last"]


def test_chunked_upload_and_100_continue(start_server, tls_certs, tmp_path):
    srv = start_server("body_reader", *tls_options(tls_certs))
    body = bytes(range(256)) * 12000  # 3 MB: curl sends Expect: 100-continue past 1 MB
    f = tmp_path / "body.bin"
    f.write_bytes(body)
    url = f"https://{srv.host}:{srv.port}/read"
    # HTTP/1.1's chunked coding and 100 Continue: curl would choose h2 (ALPN) otherwise.
    r = curl(tls_certs, "--http1.1", "-H", "Transfer-Encoding: chunked", "--data-binary",
             f"@{f}", url)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["sha256"] == hashlib.sha256(body).hexdigest()
    r = curl(tls_certs, "--http1.1", "-v", "--data-binary", f"@{f}", url)
    assert r.returncode == 0, r.stderr
    assert b"HTTP/1.1 100 Continue" in r.stderr
    assert json.loads(r.stdout)["len"] == len(body)


def test_large_upload_read_in_sized_pieces(start_server, tls_certs, tmp_path):
    """A 5 MiB Content-Length upload over TLS read by read(65536) (the reader thread fills the
    `bytes` those reads return) and by read(20000) then read(300000): every byte once, in
    order, and no read(n) short before the end."""
    srv = start_server("body_reader", *tls_options(tls_certs))
    body = random.Random(7).randbytes(5 * 2**20 + 999)
    f = tmp_path / "body.bin"
    f.write_bytes(body)
    for sizes in ("65536", "20000,300000"):
        url = f"https://{srv.host}:{srv.port}/sizes?sizes={sizes}"
        r = curl(tls_certs, "--http1.1", "-H", "Expect:", "--data-binary", f"@{f}", url)
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout)
        assert (got["len"], got["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())
        assert got["short"] == 0


def test_streamed_response(start_server, tls_certs):
    srv = start_server("streaming", *tls_options(tls_certs))
    status, headers, body = get(srv, tls_certs, "/chunks?n=300&size=1000")
    assert status == 200 and headers.get("Transfer-Encoding") == "chunked"
    assert body == expected_chunks(300, 1000)
    status, _, body = get(srv, tls_certs, "/big?size=20000000")
    assert status == 200 and len(body) == 20000000


def test_large_bytes_response(start_server, tls_certs):
    srv = start_server("big", *tls_options(tls_certs))
    status, _, body = get(srv, tls_certs, "/?mb=8")
    assert status == 200 and body == b"x" * (8 << 20)
    r = curl(tls_certs, "-o", "/dev/null", "-w", "%{size_download}",
             f"https://{srv.host}:{srv.port}/?mb=8")
    assert r.stdout == str(8 << 20).encode()


def test_file_wrapper_is_read_and_encrypted(start_server, tls_certs):
    srv = start_server("file_wrapper", *tls_options(tls_certs))
    status, _, body = get(srv, tls_certs, "/file?size=3000000")
    assert status == 200 and body == file_bytes(3000000)
    status, _, body = get(srv, tls_certs, "/file_nolength?size=100001")
    assert status == 200 and body == file_bytes(100001)


class RecordClient:
    """A TLS 1.3 client over a raw socket and memory BIOs that notes the length of every record
    the server sends (the 5-byte record header is read before the bytes are decrypted)."""

    def __init__(self, srv, c: TlsCerts):
        self.sock = socket.create_connection((srv.host, srv.port), timeout=10)
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = client_context(c).wrap_bio(self.inc, self.out, server_hostname=srv.host)
        self.raw = b""
        self.records: List[int] = []
        while True:
            try:
                self.obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.sock.sendall(self.out.read())
                self.receive()
        self.sock.sendall(self.out.read())

    def receive(self) -> None:
        data = self.sock.recv(65536)
        assert data, "closed"
        self.raw += data
        while len(self.raw) >= 5 and len(self.raw) >= 5 + int.from_bytes(self.raw[3:5], "big"):
            n = int.from_bytes(self.raw[3:5], "big")
            if self.raw[0] == 0x17:  # application data (TLS 1.3 tickets look the same)
                self.records.append(n)
            self.inc.write(self.raw[:5 + n])
            self.raw = self.raw[5 + n:]

    def get(self, path: str, size: int) -> List[int]:
        """The lengths of the records of one response of `size` body bytes."""
        self.records = []
        self.obj.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        self.sock.sendall(self.out.read())
        plain = b""
        while not (b"\r\n\r\n" in plain and len(plain.split(b"\r\n\r\n", 1)[1]) >= size):
            self.receive()
            try:
                while True:
                    plain += self.obj.read(65536)
            except ssl.SSLWantReadError:
                pass
        assert plain.startswith(b"HTTP/1.1 200 ")
        return self.records


def test_records_start_small_on_a_cold_connection_only(start_server, tls_certs):
    """Record sizes (docs/tls.md): a response on a new connection, or after 1 s without output,
    starts with 1 360-byte records (1 377 on the wire in TLS 1.3) and grows to 16 KiB (16 401);
    a response that follows another at once is in 16 KiB records from its first byte."""
    srv = start_server("file_wrapper", *tls_options(tls_certs))
    size, small, full = 60000, 1360 + 17, 16384 + 17
    client = RecordClient(srv, tls_certs)
    try:
        cold = [n for n in client.get(f"/file?size={size}", size) if n > 1000]  # not tickets
        assert cold[0] == small, cold
        assert max(cold) == full, cold
        warm = client.get(f"/file?size={size}", size)
        assert warm[0] == full, warm
        assert warm.count(full) == size // 16384, warm
        time.sleep(1.2)  # RAMP_RESTART_IDLE: cold again
        again = client.get(f"/file?size={size}", size)
        assert again[0] == small, again
    finally:
        client.sock.close()


def test_static_files_with_range(start_server, tls_certs, tmp_path):
    data = bytes(i % 251 for i in range(5_000_000))
    (tmp_path / "big.bin").write_bytes(data)
    srv = start_server("hello", *tls_options(tls_certs), "--static", f"/s={tmp_path}")
    status, _, body = get(srv, tls_certs, "/s/big.bin")
    assert status == 200 and body == data
    status, headers, body = get(srv, tls_certs, "/s/big.bin",
                                headers=[("Range", "bytes=1000000-2999999")])
    assert status == 206 and body == data[1000000:3000000]
    r = curl(tls_certs, "-r", "100-199", f"https://{srv.host}:{srv.port}/s/big.bin")
    assert r.stdout == data[100:200]


def test_health_path(start_server, tls_certs):
    srv = start_server("hello", *tls_options(tls_certs), "--health-path", "/healthz")
    status, _, _ = get(srv, tls_certs, "/healthz")
    assert status == 200


# --- The environ.


def test_environ_says_https_and_the_session(start_server, tls_certs):
    srv = start_server("echo_environ", *tls_options(tls_certs))
    _, _, body = get(srv, tls_certs, "/")
    env = json.loads(body)
    assert env["wsgi.url_scheme"] == "https"
    assert env["HTTPS"] == "on"
    assert env["SSL_PROTOCOL"] == "TLSv1.3"
    assert env["SSL_CIPHER"].startswith("TLS_")
    assert env["SSL_CLIENT_VERIFY"] == "NONE"
    assert env["SSL_SESSION_RESUMED"] == "Initial"
    assert "SSL_CLIENT_S_DN" not in env
    # Python sends no SNI for an IP address; curl with --resolve sends the name.
    assert "SSL_TLS_SNI" not in env
    r = curl(tls_certs, "--resolve", f"localhost:{srv.port}:{srv.host}",
             f"https://localhost:{srv.port}/")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["SSL_TLS_SNI"] == "localhost"


def test_a_resumed_session_says_so(start_server, tls_certs):
    srv = start_server("echo_environ", *tls_options(tls_certs))
    ctx = client_context(tls_certs)
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2  # a session id: Python resumes it directly
    sessions = []
    for _ in range(2):
        with ctx.wrap_socket(socket.create_connection((srv.host, srv.port), timeout=10),
                             server_hostname=srv.host,
                             session=sessions[-1] if sessions else None) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            env = json.loads(read_until_closed(s).split(b"\r\n\r\n", 1)[1])
            sessions.append(s.session)
    assert env["SSL_SESSION_RESUMED"] == "Resumed"


def test_tls12_facts(start_server, tls_certs):
    srv = start_server("echo_environ", *tls_options(tls_certs))
    conn = https(srv, tls_certs)
    conn._context.maximum_version = ssl.TLSVersion.TLSv1_2  # type: ignore[attr-defined]
    conn.request("GET", "/")
    env = json.loads(conn.getresponse().read())
    conn.close()
    assert env["SSL_PROTOCOL"] == "TLSv1.2"
    assert env["SSL_CIPHER"].startswith("ECDHE-ECDSA-")


def mtls_options(c: TlsCerts, reqs: str) -> List[str]:
    return [*tls_options(c), "--ca-certs", str(c.ca_cert), "--cert-reqs", reqs]


def test_mutual_tls_required(start_server, tls_certs):
    srv = start_server("echo_environ", *mtls_options(tls_certs, "required"))
    _, _, body = get(srv, tls_certs, "/", cert=True)
    env = json.loads(body)
    assert env["SSL_CLIENT_VERIFY"] == "SUCCESS"
    assert "CN=sluicegate-test-client" in env["SSL_CLIENT_S_DN"]
    assert env["SSL_CLIENT_I_DN"]
    assert env["SSL_CLIENT_CERT"].startswith("-----BEGIN CERTIFICATE-----")
    # Without a certificate: refused (TLS 1.3 reports it on the first read).
    with pytest.raises((ssl.SSLError, ConnectionError, http.client.RemoteDisconnected)):
        get(srv, tls_certs, "/")


def test_mutual_tls_optional(start_server, tls_certs):
    srv = start_server("echo_environ", *mtls_options(tls_certs, "optional"))
    _, _, body = get(srv, tls_certs, "/")
    assert json.loads(body)["SSL_CLIENT_VERIFY"] == "NONE"
    _, _, body = get(srv, tls_certs, "/", cert=True)
    assert json.loads(body)["SSL_CLIENT_VERIFY"] == "SUCCESS"


def test_every_request_of_a_kept_connection_carries_the_same_facts(start_server, tls_certs):
    """The SSL_* strings are made at a connection's first request and reused by its next ones
    (environ.rs, PeerStrings): each request of a kept connection, and of a second connection
    without a client certificate, gets its own connection's facts in full."""
    srv = start_server("echo_environ", *mtls_options(tls_certs, "optional"))
    ssl_keys = ("SSL_PROTOCOL", "SSL_CIPHER", "SSL_SESSION_RESUMED", "SSL_CLIENT_VERIFY",
                "SSL_CLIENT_S_DN", "SSL_CLIENT_I_DN", "SSL_CLIENT_CERT")
    seen = {}
    for cert in (True, False):
        conn = https(srv, tls_certs, cert=cert)
        try:
            envs = []
            for i in range(3):
                conn.request("GET", f"/n{i}")
                envs.append(json.loads(conn.getresponse().read()))
        finally:
            conn.close()
        facts = [{k: e.get(k) for k in ssl_keys} for e in envs]
        assert facts[0] == facts[1] == facts[2]
        seen[cert] = facts[0]
    assert seen[True]["SSL_CLIENT_VERIFY"] == "SUCCESS"
    assert "CN=sluicegate-test-client" in seen[True]["SSL_CLIENT_S_DN"]
    assert seen[False]["SSL_CLIENT_VERIFY"] == "NONE"
    assert seen[False]["SSL_CLIENT_S_DN"] is None
    assert seen[False]["SSL_PROTOCOL"] == seen[True]["SSL_PROTOCOL"] == "TLSv1.3"


# --- Attacks and faults.


def test_tls11_is_refused(start_server, tls_certs):
    srv = start_server("hello", *tls_options(tls_certs))
    ctx = client_context(tls_certs)
    with warnings.catch_warnings():  # TLSv1_1 is deprecated in Python too: that is the point
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        ctx.maximum_version = ssl.TLSVersion.TLSv1_1
    try:
        ctx.set_ciphers("ALL:@SECLEVEL=0")
    except ssl.SSLError:
        pass
    raw = socket.create_connection((srv.host, srv.port), timeout=10)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        ctx.wrap_socket(raw, server_hostname=srv.host)
    raw.close()
    assert get(srv, tls_certs, "/")[0] == 200


def test_plain_http_on_the_tls_port_gets_a_plaintext_400(start_server, tls_certs):
    srv = start_server("hello", *tls_options(tls_certs))
    with socket.create_connection((srv.host, srv.port), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        data = read_until_closed(s)
    assert data.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"This port speaks HTTPS" in data


def test_a_handshake_that_never_completes_is_cut_by_the_header_timeout(start_server, tls_certs):
    srv = start_server("hello", *tls_options(tls_certs), "--header-timeout", "1")
    with socket.create_connection((srv.host, srv.port), timeout=10) as s:
        s.sendall(b"\x16\x03\x01\x02\x00\x01")  # a ClientHello's first bytes, then nothing
        started = time.monotonic()
        assert read_until_closed(s) == b""
        assert time.monotonic() - started < 5
    with socket.create_connection((srv.host, srv.port), timeout=10) as s:
        started = time.monotonic()  # and a connection that sends nothing at all
        assert read_until_closed(s) == b""
        assert time.monotonic() - started < 5


def test_a_stalled_request_head_over_tls_gets_an_encrypted_408(start_server, tls_certs):
    """Regression: the 408 was written in plaintext on the TLS socket (a broken record to the
    client: Python's ssl raised WRONG_VERSION_NUMBER instead of reading an answer)."""
    srv = start_server("hello", *tls_options(tls_certs), "--header-timeout", "1")
    with tls_socket(srv, tls_certs) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # no blank line: the head never ends
        data = read_until_closed(s)
    assert data.startswith(b"HTTP/1.1 408 "), data[:80]


def test_a_handshake_cut_by_the_header_timeout_is_counted_by_reason(start_server, tls_certs):
    from tests.test_metrics import free_port, samples, scrape
    mport = free_port()
    srv = start_server("hello", *tls_options(tls_certs), "--header-timeout", "1",
                       "--metrics-bind", f"127.0.0.1:{mport}")
    with socket.create_connection((srv.host, srv.port), timeout=10) as s:
        s.sendall(b"\x16\x03\x01\x02\x00\x01")  # a ClientHello's first bytes, then nothing
        assert read_until_closed(s) == b""
    got = samples(scrape(mport)[2])
    assert got[("sluicegate_tls_failures_total", (("reason", "handshake_timeout"),))] == 1
    assert got[("sluicegate_tls_failures_total", (("reason", "other"),))] == 0


def test_clienthellos_arriving_at_once_are_all_answered(start_server, tls_certs):
    """The loop answers at most 4 ClientHellos per turn (HANDSHAKES_PER_TURN, io/event_loop):
    40 sent before any is read are all answered, the ones past the budget in later turns, and
    a kept connection is served meanwhile."""
    srv = start_server("hello", *tls_options(tls_certs))
    ctx = client_context(tls_certs)
    kept = https(srv, tls_certs)
    kept.request("GET", "/")
    assert kept.getresponse().read() == b"Hello, World!"
    clients = []
    for _ in range(40):
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(inc, out, server_hostname=srv.host)
        with pytest.raises(ssl.SSLWantReadError):
            obj.do_handshake()
        clients.append((socket.create_connection((srv.host, srv.port), timeout=10), obj, inc, out))
    for sock, _, _, out in clients:
        sock.sendall(out.read())  # every ClientHello, before any answer is read
    kept.request("GET", "/")
    assert kept.getresponse().read() == b"Hello, World!"
    for sock, obj, inc, out in clients:
        while True:
            try:
                obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                sock.sendall(out.read())
                data = sock.recv(65536)
                assert data, "closed during the handshake"
                inc.write(data)
        obj.write(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        sock.sendall(out.read())
        answer = b""
        while b"Hello, World!" not in answer:
            data = sock.recv(65536)
            assert data, answer
            inc.write(data)
            try:
                answer += obj.read(65536)
            except ssl.SSLWantReadError:
                pass
        assert answer.startswith(b"HTTP/1.1 200 ")
        sock.close()
    kept.close()


def test_garbage_closes_the_connection_and_nothing_else(start_server, tls_certs):
    srv = start_server("hello", *tls_options(tls_certs))
    for junk in (b"\x16\x03\x01\x00\x05hello" + bytes(range(256)) * 4,
                 bytes(range(256)) * 64, b"\x00" * 10000):
        with socket.create_connection((srv.host, srv.port), timeout=10) as s:
            try:
                s.sendall(junk)
            except ConnectionError:
                pass
            data = read_until_closed(s)
            assert not data.startswith(b"HTTP/1.1 200")
    assert srv.alive()
    assert get(srv, tls_certs, "/")[0] == 200


def test_tls_listener_beside_a_plain_one(start_server, tls_certs):
    srv = start_server("echo_environ", *tls_options(tls_certs),
                       binds=["127.0.0.1:0", "http:127.0.0.1:0"])
    (_, (host, tls_port)), (_, (_, plain_port)) = srv.addresses
    assert "Listening at: https://" in srv.log_text()
    _, _, body = get(srv, tls_certs, "/")
    assert json.loads(body)["wsgi.url_scheme"] == "https"
    conn = http.client.HTTPConnection(host, plain_port, timeout=10)
    conn.request("GET", "/")
    env = json.loads(conn.getresponse().read())
    conn.close()
    assert env["wsgi.url_scheme"] == "http" and "HTTPS" not in env


def test_https_prefix_makes_one_listener_tls(start_server, tls_certs):
    srv = start_server("hello", *tls_options(tls_certs), "--bind", "127.0.0.1:0",
                       binds=["https:127.0.0.1:0"])
    assert get(srv, tls_certs, "/")[0] == 200


def test_workers_over_tls(start_server, tls_certs):
    srv = start_server("hello", *tls_options(tls_certs), "--workers", "2")
    for _ in range(6):
        assert get(srv, tls_certs, "/")[0] == 200


# --- Bad files: one line naming the file, before binding.


def start_fails(*options: str) -> str:
    r = subprocess.run([PYTHON, "-m", "sluicegate", "--bind", "127.0.0.1:0", *options,
                        "tests.apps.hello:app"], capture_output=True, timeout=60,
                       cwd=str(Path(__file__).resolve().parent.parent))
    assert r.returncode == 2, r
    lines = r.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_bad_files_are_one_clear_line(tls_certs):
    c = tls_certs
    line = start_fails("--certfile", str(c.directory / "missing.pem"), "--keyfile",
                       str(c.server_key))
    assert "missing.pem" in line
    line = start_fails("--certfile", str(c.server_chain), "--keyfile", str(c.encrypted_key))
    assert str(c.encrypted_key.name) in line and "encrypted" in line
    line = start_fails("--certfile", str(c.server_chain), "--keyfile", str(c.other_key))
    assert str(c.other_key.name) in line and "does not match" in line
    line = start_fails("--certfile", str(c.expired_cert), "--keyfile", str(c.server_key))
    assert str(c.expired_cert.name) in line and "expired" in line
    line = start_fails("--bind", "https:127.0.0.1:0")
    assert "--certfile" in line


def test_check_config_checks_the_files(tls_certs):
    c = tls_certs
    r = subprocess.run([PYTHON, "-m", "sluicegate", "--check-config", "--certfile",
                        str(c.expired_cert), "--keyfile", str(c.server_key),
                        "tests.apps.hello:app"], capture_output=True, timeout=60,
                       cwd=str(Path(__file__).resolve().parent.parent))
    assert r.returncode == 2 and b"expired" in r.stderr


# --- Operations.


def test_hup_rotates_the_certificate_without_failed_requests(start_server, tls_certs, tmp_path):
    from tests.tls_certs import make_certs
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    shutil.copy(tls_certs.server_chain, cert)
    shutil.copy(tls_certs.server_key, key)
    (tmp_path / "new").mkdir()
    new = make_certs(tmp_path / "new")
    bundle = tmp_path / "cas.pem"
    bundle.write_bytes(tls_certs.ca_cert.read_bytes() + new.ca_cert.read_bytes())
    ctx = ssl.create_default_context(cafile=str(bundle))
    srv = start_server("hello", "--certfile", str(cert), "--keyfile", str(key), "--workers", "1")

    def served() -> bytes:
        raw = socket.create_connection((srv.host, srv.port), timeout=10)
        with ctx.wrap_socket(raw, server_hostname=srv.host) as s:
            der = s.getpeercert(binary_form=True)
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert read_until_closed(s).startswith(b"HTTP/1.1 200")
        assert der is not None
        return der

    before = served()

    def connect() -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(srv.host, srv.port, timeout=10, context=ctx)

    with Load(srv.port, clients=1, path="/", keep_alive=False, connect=connect) as load:
        shutil.copy(new.server_chain, cert)
        shutil.copy(new.server_key, key)
        mark = srv.log_mark()
        srv.signal(signal.SIGHUP)
        srv.wait_log(r"Reload done", since=mark, timeout=30)
    assert load.failed == []
    # "Reload done" is logged as the old worker is told to stop; it may accept a last
    # connection before it hears, so the new certificate is awaited, not expected at once.
    wanted = ssl.PEM_cert_to_DER_cert(new.server_cert.read_text())
    assert wanted != before
    wait_for(lambda: served() == wanted, "the new certificate served after the reload")


def test_metrics_show_certificate_expiry_and_failures_by_reason(start_server, tls_certs):
    from tests.test_metrics import free_port, samples, scrape
    mport = free_port()
    srv = start_server("hello", *tls_options(tls_certs), "--metrics-bind", f"127.0.0.1:{mport}")
    with socket.create_connection((srv.host, srv.port), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        read_until_closed(s)
    with socket.create_connection((srv.host, srv.port), timeout=10) as s:
        s.sendall(b"\x16\x03\x01\x00\x05hello")
        read_until_closed(s)
    assert get(srv, tls_certs, "/")[0] == 200
    got = samples(scrape(mport)[2])
    expiry = got[("sluicegate_tls_certificate_expiry_seconds", ())]
    assert 20 * 86400 < expiry <= 31 * 86400  # tls_certs.VALID_DAYS
    assert got[("sluicegate_tls_failures_total", (("reason", "plain_http"),))] == 1
    assert got[("sluicegate_tls_failures_total", (("reason", "bad_message"),))] == 1


def test_proxy_protocol_in_front_of_tls(start_server, tls_certs):
    """HAProxy in TCP mode with send-proxy: a PROXY header in plaintext, then the handshake."""
    srv = start_server("echo_environ", *tls_options(tls_certs),
                       binds=["https:proxy:127.0.0.1:0"])
    raw = socket.create_connection((srv.host, srv.port), timeout=10)
    raw.sendall(b"PROXY TCP4 203.0.113.7 127.0.0.1 4711 443\r\n")
    with client_context(tls_certs).wrap_socket(raw, server_hostname=srv.host) as s:
        s.sendall(b"GET /p HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = read_until_closed(s)
    env = json.loads(data.split(b"\r\n\r\n", 1)[1])
    assert env["REMOTE_ADDR"] == "203.0.113.7" and env["wsgi.url_scheme"] == "https"


def test_renegotiation_is_refused(start_server, tls_certs):
    """`openssl s_client`'s `R` asks a TLS 1.2 server to renegotiate: rustls never does (it
    answers with a no_renegotiation alert), while signalling secure renegotiation (RFC 5746)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    srv = start_server("hello", *tls_options(tls_certs))
    proc = subprocess.Popen(
        [openssl, "s_client", "-connect", f"{srv.host}:{srv.port}", "-tls1_2",
         "-CAfile", str(tls_certs.ca_cert)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdin is not None and proc.stdout is not None
    seen = b""
    while b"Verify return code" not in seen:  # the handshake is done
        line = proc.stdout.readline()
        assert line, seen
        seen += line
    proc.stdin.write(b"R\n")
    proc.stdin.flush()
    out, _ = proc.communicate(timeout=20)
    seen += out
    assert b"Secure Renegotiation IS supported" in seen
    assert b"no renegotiation" in seen
    assert get(srv, tls_certs, "/")[0] == 200


def test_close_notify_ends_a_closed_connection(start_server, tls_certs):
    """A `Connection: close` answer ends with close_notify: a client that refuses ragged EOFs
    (truncation attacks) reads a clean end."""
    srv = start_server("hello", *tls_options(tls_certs))
    raw = socket.create_connection((srv.host, srv.port), timeout=10)
    with client_context(tls_certs).wrap_socket(raw, server_hostname=srv.host,
                                               suppress_ragged_eofs=False) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            piece = s.recv(65536)  # SSLEOFError without close_notify
            if not piece:
                break
            data += piece
    assert data.startswith(b"HTTP/1.1 200")


def test_hup_with_a_bad_new_certificate_keeps_serving_the_old_one(start_server, tls_certs,
                                                                  tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    shutil.copy(tls_certs.server_chain, cert)
    shutil.copy(tls_certs.server_key, key)
    srv = start_server("hello", "--certfile", str(cert), "--keyfile", str(key), "--workers", "1")
    shutil.copy(tls_certs.other_key, key)  # a key that does not match
    mark = srv.log_mark()
    srv.signal(signal.SIGHUP)
    line = srv.wait_log(r"configuration is not valid", since=mark, timeout=30)
    assert "does not match" in srv.log_since(mark)
    assert get(srv, tls_certs, "/")[0] == 200
    assert srv.alive() and line


@pytest.mark.skipif(shutil.which("systemd-socket-activate") is None,
                    reason="systemd-socket-activate not installed")
def test_socket_activation_over_tls(start_server, tls_certs):
    """A socket passed by systemd speaks TLS with --certfile (it follows gunicorn's rule)."""
    from tests.helpers import unless_refused, wait_for
    from tests.test_metrics import free_port
    port = free_port()
    cmd = [shutil.which("systemd-socket-activate") or "", "-l", f"127.0.0.1:{port}",
           sys.executable, "-m", "sluicegate", *tls_options(tls_certs), "tests.apps.hello:app"]
    srv = start_server(None, command=cmd, wait_ready=False)

    def first_answer():
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=30,
                                           context=client_context(tls_certs))
        conn.request("GET", "/")
        return conn.getresponse().status

    assert wait_for(lambda: unless_refused(first_answer), "systemd-socket-activate's socket",
                    timeout=30) == 200
    srv.wait_listening(timeout=30)
    assert "Listening at: https://" in srv.log_text()
