"""The TLS fixture's certificates work with a real TLS stack: Python's `ssl` (OpenSSL, with its
strict X.509 checks) completes a handshake in memory with the server chain, verifies a client
certificate, and refuses the expired one. No sluicegate server here: this checks the fixture
that the TLS server tests build on."""

from __future__ import annotations

import ssl

import pytest

from .tls_certs import PASSPHRASE, TlsCerts, tls_certs  # noqa: F401


def _handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext) -> ssl.SSLObject:
    """Runs a handshake between two SSLObjects over memory BIOs; returns the server's."""
    s_in, s_out, c_in, c_out = (ssl.MemoryBIO() for _ in range(4))
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname="localhost")
    done = {"server": False, "client": False}
    for _ in range(10):
        for name, obj in (("client", client), ("server", server)):
            if not done[name]:
                try:
                    obj.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return server
    raise AssertionError("handshake did not finish")


def _client_ctx(certs: TlsCerts) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(certs.ca_cert))
    ctx.verify_flags |= getattr(ssl, "VERIFY_X509_STRICT", 0)
    return ctx


def test_server_chain_verifies_with_strict_checks(tls_certs: TlsCerts) -> None:
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tls_certs.server_chain, tls_certs.server_key)
    server = _handshake(server_ctx, _client_ctx(tls_certs))
    assert server.version() in ("TLSv1.2", "TLSv1.3")


def test_client_certificate_verifies(tls_certs: TlsCerts) -> None:
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tls_certs.server_chain, tls_certs.server_key)
    server_ctx.load_verify_locations(tls_certs.ca_cert)
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    client_ctx = _client_ctx(tls_certs)
    client_ctx.load_cert_chain(tls_certs.client_cert, tls_certs.client_key)
    server = _handshake(server_ctx, client_ctx)
    subject = dict(x[0] for x in server.getpeercert()["subject"])
    assert subject == {"organizationName": "sluicegate tests",
                       "commonName": "sluicegate-test-client"}


def test_expired_certificate_is_refused(tls_certs: TlsCerts) -> None:
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    chain = tls_certs.directory / "expired-chain.pem"
    chain.write_text(tls_certs.expired_cert.read_text()
                     + tls_certs.intermediate_cert.read_text())
    server_ctx.load_cert_chain(chain, tls_certs.server_key)
    with pytest.raises(ssl.SSLCertVerificationError, match="expired"):
        _handshake(server_ctx, _client_ctx(tls_certs))


def test_faulty_files_are_faulty(tls_certs: TlsCerts) -> None:
    assert "ENCRYPTED PRIVATE KEY" in tls_certs.encrypted_key.read_text()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tls_certs.server_chain, tls_certs.encrypted_key, password=PASSPHRASE)
    with pytest.raises(ssl.SSLError):
        ctx.load_cert_chain(tls_certs.server_chain, tls_certs.other_key)
