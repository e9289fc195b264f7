"""Certificate reloads on a bad day, over real processes, signals and TLS clients: a new
certificate that is not valid yet is refused with one line while the old one serves on (at the
start too); a truncated PEM file is said in words; a key file that blocks on read (a FIFO, as a
hung network mount would) leaves the master reaping and handling signals, and the reload gives
up after its timeout; a single process (no `--workers`) re-reads its certificate on HUP.
Certificates are made by `openssl` (tests/tls_certs.py).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Tuple

import pytest

from tests.helpers import wait_for
from tests.test_tls import read_until_closed, start_fails
from tests.test_workers import children
from tests.tls_certs import TlsCerts, make_certs, tls_certs  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parent.parent


def copied(c: TlsCerts, tmp_path: Path) -> Tuple[Path, Path]:
    """The certificate chain and key copied where a test may replace them."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    shutil.copy(c.server_chain, cert)
    shutil.copy(c.server_key, key)
    return cert, key


def served_cert(srv, cafile: Path) -> bytes:
    """The DER of the certificate a new connection is served with (its request answered)."""
    ctx = ssl.create_default_context(cafile=str(cafile))
    raw = socket.create_connection((srv.host, srv.port), timeout=10)
    with ctx.wrap_socket(raw, server_hostname=srv.host) as s:
        der = s.getpeercert(binary_form=True)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert read_until_closed(s).startswith(b"HTTP/1.1 200")
    assert der is not None
    return der


def alpn(srv, cafile: Path) -> str:
    """The protocol a new connection that offers h2 and http/1.1 agrees on (ALPN)."""
    ctx = ssl.create_default_context(cafile=str(cafile))
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    raw = socket.create_connection((srv.host, srv.port), timeout=10)
    with ctx.wrap_socket(raw, server_hostname=srv.host) as s:
        return s.selected_alpn_protocol() or ""


def leaf_der(c: TlsCerts) -> bytes:
    return ssl.PEM_cert_to_DER_cert(c.server_cert.read_text())


# --- A certificate that is not valid yet.


def test_a_certificate_not_valid_yet_stops_the_start_with_one_line(tls_certs):
    line = start_fails("--certfile", str(tls_certs.future_chain), "--keyfile",
                       str(tls_certs.server_key))
    assert "future-chain.pem: certificate 1 (CN=localhost) is not valid before " in line, line


BAD_NEW_CERTIFICATES = {
    "not-valid-yet": ("future_chain", "certificate 1 (CN=localhost) is not valid before"),
    "expired": ("expired_cert", "certificate 1 (CN=localhost) expired at"),
    "chain-reversed": ("server_chain_reversed", "certificate 1 (CN=sluicegate test "
                       "intermediate) is not issued by the next one"),
}


@pytest.mark.parametrize("bad", list(BAD_NEW_CERTIFICATES))
@pytest.mark.parametrize("workers", [["--workers", "1"], []], ids=["master", "single"])
def test_hup_refuses_a_bad_new_certificate(start_server, tls_certs, tmp_path, workers, bad):
    """Regression: a master's HUP took a certificate whose validity starts later, and every
    client then failed. Now it is refused with one line and the old one serves on, as one
    expired or with its chain out of order is; a single process (which re-reads its
    certificate on HUP) refuses them the same way."""
    attribute, message = BAD_NEW_CERTIFICATES[bad]
    cert, key = copied(tls_certs, tmp_path)
    srv = start_server("hello", "--certfile", str(cert), "--keyfile", str(key), *workers)
    shutil.copy(getattr(tls_certs, attribute), cert)
    mark = srv.log_mark()
    srv.signal(signal.SIGHUP)
    srv.wait_log(re.escape(message), since=mark, timeout=30)
    log = srv.log_since(mark)
    refusals = [line for line in log.splitlines() if "cert.pem: " in line]
    assert len(refusals) == 1, log
    assert f"cert.pem: {message}" in refusals[0]
    assert "Booting worker" not in log and "certificate re-read" not in log, log
    assert served_cert(srv, tls_certs.ca_cert) == leaf_der(tls_certs)
    assert srv.alive()


# --- A truncated PEM file.


def test_a_truncated_pem_file_is_said_in_words(tls_certs, tmp_path):
    """Regression: a cut certificate file printed `missing section end marker: [67, 69, 82,
    …]`, the bytes of "CERTIFICATE"."""
    cut = tmp_path / "cut.pem"
    whole = tls_certs.server_chain.read_text()
    cut.write_text(whole[:len(whole) // 3])
    line = start_fails("--certfile", str(cut), "--keyfile", str(tls_certs.server_key))
    assert line.endswith("cut.pem: not valid PEM: the '-----BEGIN CERTIFICATE-----' block has "
                         "no '-----END CERTIFICATE-----' line (is the file cut short?)"), line
    key = tmp_path / "cut.key"
    key.write_text(tls_certs.server_key.read_text()[:100])
    line = start_fails("--certfile", str(tls_certs.server_chain), "--keyfile", str(key))
    assert "cut.key: not valid PEM: the '-----BEGIN PRIVATE KEY-----' block has no" in line
    assert "[" not in line, line


# --- A key file that blocks on read.


def release(fifo: Path, data: bytes) -> None:
    """Give the reader blocked on `fifo` (if any) `data` and an end of file."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # ENXIO: nobody reads it
        return
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def test_a_key_file_that_blocks_leaves_the_master_reaping_and_handling_signals(
        start_server, tls_certs, tmp_path):
    """Regression: the master read the files of a HUP on its signal loop: with the key a
    FIFO nobody writes (a hung network mount blocks the same way), it reaped no worker and
    handled no signal until the read returned. Now the read runs on a thread: a killed worker
    is replaced and TTIN handled while it blocks, the reload gives up after its timeout with
    one line, and a later HUP with a readable key reloads."""
    cert, key = copied(tls_certs, tmp_path)
    srv = start_server("hello", "--certfile", str(cert), "--keyfile", str(key),
                       "--workers", "1")
    fifo = tmp_path / "key.fifo"
    os.mkfifo(fifo)
    os.replace(fifo, key)
    key_bytes = tls_certs.server_key.read_bytes()
    try:
        mark = srv.log_mark()
        srv.signal(signal.SIGHUP)
        victim = children(srv.pid)[0]
        os.kill(victim, signal.SIGKILL)
        srv.wait_log(rf"Worker {victim} died", since=mark, timeout=30)
        srv.wait_log(r"Worker \d+ ready", since=mark, timeout=30)
        srv.signal(signal.SIGTTIN)
        srv.wait_log(r"Received SIGTTIN: 2 worker\(s\)", since=mark, timeout=30)
        line = srv.wait_log(r"could not be read within", since=mark, timeout=60)
        assert "the workers keep serving with the previous configuration" in line.string
        assert "Reload done" not in srv.log_since(mark)
        assert served_cert(srv, tls_certs.ca_cert) == leaf_der(tls_certs)
    finally:
        release(key, key_bytes)
    wait_for(lambda: len(children(srv.pid)) == 2, "two workers", timeout=30)
    os.unlink(key)
    shutil.copy(tls_certs.server_key, key)
    mark = srv.log_mark()
    srv.signal(signal.SIGHUP)
    srv.wait_log(r"Reload done", since=mark, timeout=60)
    srv.signal(signal.SIGTERM)
    assert srv.wait_exit() == 0, srv.log_text()[-3000:]


# --- HUP in a single process.


def test_hup_in_a_single_process_rotates_the_certificate(start_server, tls_certs, tmp_path):
    """Regression: without --workers, HUP was ignored and a certificate could only be rotated
    by a restart. Now new connections get the certificate read again; a connection opened
    before keeps serving; the log line says what a single process does not reload."""
    cert, key = copied(tls_certs, tmp_path)
    (tmp_path / "new").mkdir()
    new = make_certs(tmp_path / "new")
    bundle = tmp_path / "cas.pem"
    bundle.write_bytes(tls_certs.ca_cert.read_bytes() + new.ca_cert.read_bytes())
    srv = start_server("hello", "--certfile", str(cert), "--keyfile", str(key))
    before = served_cert(srv, bundle)
    ctx = ssl.create_default_context(cafile=str(bundle))
    kept = ctx.wrap_socket(socket.create_connection((srv.host, srv.port), timeout=10),
                           server_hostname=srv.host)
    try:
        kept.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert kept.recv(65536).startswith(b"HTTP/1.1 200")
        shutil.copy(new.server_chain, cert)
        shutil.copy(new.server_key, key)
        mark = srv.log_mark()
        srv.signal(signal.SIGHUP)
        line = srv.wait_log(r"Received SIGHUP: certificate re-read", since=mark, timeout=30)
        assert "CN=localhost" in line.string and "need a master (--workers N)" in line.string
        after = served_cert(srv, bundle)
        assert before == leaf_der(tls_certs) and after == leaf_der(new)
        assert alpn(srv, bundle) == "h2"  # the new configuration offers HTTP/2 as the old one
        kept.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert read_until_closed(kept).startswith(b"HTTP/1.1 200")
    finally:
        kept.close()
    mark = srv.log_mark()
    srv.signal(signal.SIGUSR2)
    line = srv.wait_log(r"Received SIGUSR2: ignored", since=mark, timeout=30)
    assert "restart the process instead" in line.string
    assert srv.alive()


def test_hup_in_a_single_process_with_a_key_that_blocks(start_server, tls_certs, tmp_path):
    """The single process's reread runs off its signal handler too: a key file that blocks
    gives one line after the timeout, and TERM still stops the server at once meanwhile."""
    cert, key = copied(tls_certs, tmp_path)
    srv = start_server("hello", "--certfile", str(cert), "--keyfile", str(key))
    fifo = tmp_path / "key.fifo"
    os.mkfifo(fifo)
    os.replace(fifo, key)
    try:
        mark = srv.log_mark()
        srv.signal(signal.SIGHUP)
        srv.wait_log(r"could not be read within", since=mark, timeout=60)
        assert served_cert(srv, tls_certs.ca_cert) == leaf_der(tls_certs)
        srv.signal(signal.SIGTERM)
        assert srv.wait_exit() == 0, srv.log_text()[-3000:]
    finally:
        release(key, tls_certs.server_key.read_bytes())


def test_hup_in_a_single_process_without_tls_says_what_to_run(start_server):
    srv = start_server("hello")
    mark = srv.log_mark()
    srv.signal(signal.SIGHUP)
    line = srv.wait_log(r"Received SIGHUP: ignored", since=mark, timeout=30)
    assert "need a master (--workers N)" in line.string
    assert srv.alive()


def test_check_config_refuses_a_certificate_not_valid_yet(tls_certs):
    r = subprocess.run([sys.executable, "-m", "sluicegate", "--check-config", "--certfile",
                        str(tls_certs.future_chain), "--keyfile", str(tls_certs.server_key),
                        "tests.apps.hello:app"], capture_output=True, text=True, timeout=60,
                       cwd=str(ROOT))
    assert r.returncode == 2 and "is not valid before" in r.stderr, r.stderr

