"""A client certificate the handshake refuses is said in the error log: why, and from which
peer, once per peer and reason (a client retrying in a loop adds no line), rate-limited.
The certificate refused here is an X.509 v1 certificate (no extensions), which webpki, the
verifier behind rustls, refuses whatever its issuer: the case that used to show only
"certificate unknown" at the client and nothing in the server's log at any level.
"""

from __future__ import annotations

import os
import re
import socket
import ssl
import subprocess

from tests.tls_certs import TlsCerts, tls_certs  # noqa: F401  (the fixture)


def v1_client_cert(c: TlsCerts) -> tuple:
    """A client certificate signed by the test CA, as X.509 v1 (no extensions)."""
    d = c.directory
    env = dict(os.environ, OPENSSL_CONF=str(d / "openssl.cnf"))
    for args in (["req", "-new", "-key", "client.key", "-subj", "/CN=v1-client", "-out",
                  "v1.csr"],
                 ["x509", "-req", "-in", "v1.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                  "-CAcreateserial", "-days", "2", "-sha256", "-out", "v1.pem"]):
        subprocess.run(["openssl", *args], cwd=d, env=env, check=True, capture_output=True)
    text = subprocess.run(["openssl", "x509", "-in", "v1.pem", "-noout", "-text"], cwd=d,
                          capture_output=True, text=True, check=True).stdout
    assert "Version: 1 (0x0)" in text, text  # what the test is about
    return d / "v1.pem", c.client_key


def handshake(port: int, c: TlsCerts, cert) -> str:
    """One TLS connection presenting `cert`; what the client saw."""
    ctx = ssl.create_default_context(cafile=str(c.ca_cert))
    ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
                return s.recv(100).decode("latin-1")
    except (ssl.SSLError, ConnectionError) as e:
        return f"refused: {e}"


def test_a_refused_v1_client_certificate_is_logged_once_with_why(start_server, tls_certs):
    c = tls_certs
    cert = v1_client_cert(c)
    srv = start_server("hello", "--certfile", str(c.server_chain), "--keyfile",
                       str(c.server_key), "--ca-certs", str(c.ca_cert), "--cert-reqs",
                       "required")
    for _ in range(3):
        assert handshake(srv.port, c, cert).startswith("refused"), "a v1 certificate got in"
    line = srv.wait_log(r"client certificate from 127\.0\.0\.1 refused: .*")[0]
    assert "UnsupportedCertVersion" in line and "X.509 v1" in line, line
    # A valid certificate still gets in (the refusal is about that certificate).
    assert handshake(srv.port, c, (c.client_cert, c.client_key)).startswith("HTTP/1.1 200")
    assert len(re.findall("client certificate from", srv.log_text())) == 1, srv.log_text()
