"""Certificates for the TLS tests, made by the real `openssl` CLI into a temporary folder.

Owns every key and certificate a TLS test needs, so that no test ships a private key or a
certificate that expires under it: a CA, an intermediate CA, a server certificate (ECDSA P-256,
SAN `127.0.0.1` and `localhost`, signed by the intermediate: its chain file is leaf first), a
client certificate for mutual TLS, an expired server certificate, one not valid yet (its
validity starts a year from now; `openssl ca -startdate`, as OpenSSL 3.0's `x509` cannot set
it), a server key encrypted with a passphrase, and a key that matches no certificate. Plain `openssl` (Debian's package, which
`./dev test` installs) rather than `trustme`: it is what an operator runs, and it makes the
faulty inputs (expired, encrypted, mismatched) that a library made for correct certificates will
not. Without `openssl` on PATH the fixture skips its test.

Use it as a fixture (importing it registers it for the module):

    from .tls_certs import tls_certs  # noqa: F401

    def test_something(tls_certs):
        ...tls_certs.server_chain, tls_certs.server_key, tls_certs.ca_cert...
"""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

OPENSSL = shutil.which("openssl")

# Days a certificate made here stays valid: longer than any test session, short enough that a
# folder left behind is useless.
VALID_DAYS = 30

# The passphrase of `encrypted_key`: the server must refuse the file, never ask for this.
PASSPHRASE = "sluicegate-test"

# A minimal configuration so that the system's openssl.cnf adds no extension of its own: every
# extension is named below, as Python's strict verification (VERIFY_X509_STRICT) wants them.
_OPENSSL_CNF = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
"""

_CA_EXT = """\
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""

_SERVER_EXT = """\
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""

_CLIENT_EXT = """\
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""


@dataclass(frozen=True)
class TlsCerts:
    """Paths of the files made by `make_certs` (all PEM)."""

    directory: Path
    ca_cert: Path  # the root a client trusts (and the server's `--ca-certs` for mutual TLS)
    ca_key: Path
    intermediate_cert: Path
    server_cert: Path  # the leaf alone
    server_chain: Path  # leaf, then intermediate: what `--certfile` takes
    server_chain_reversed: Path  # intermediate, then leaf: a chain in the wrong order
    server_key: Path  # PKCS#8, unencrypted
    client_cert: Path  # CN=sluicegate-test-client, O=sluicegate tests; signed by the root
    client_key: Path
    expired_cert: Path  # the server's key, a notAfter in the past
    future_chain: Path  # the server's key, a notBefore a year ahead; then the intermediate
    encrypted_key: Path  # the server's key encrypted with PASSPHRASE
    other_key: Path  # a valid key that matches no certificate here


def _run(directory: Path, *args: str) -> None:
    env = dict(os.environ, OPENSSL_CONF=str(directory / "openssl.cnf"))
    subprocess.run(
        [OPENSSL, *args], cwd=directory, env=env, check=True, capture_output=True
    )


def _ec_key(directory: Path, name: str) -> Path:
    """A PKCS#8 ECDSA P-256 key, the type the server's certificate is measured with."""
    _run(directory, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-out", name)
    return directory / name


def _sign(directory: Path, key: Path, subject: str, issuer_cert: str, issuer_key: str,
          ext: str, out: str, days: int = VALID_DAYS) -> Path:
    csr = out + ".csr"
    ext_file = out + ".ext"
    (directory / ext_file).write_text(ext)
    _run(directory, "req", "-new", "-key", key.name, "-subj", subject, "-out", csr)
    _run(directory, "x509", "-req", "-in", csr, "-CA", issuer_cert, "-CAkey", issuer_key,
         "-CAcreateserial", "-days", str(days), "-sha256", "-extfile", ext_file, "-out", out)
    return directory / out


_FUTURE_CA_CNF = """\
[ca]
default_ca = future
[future]
database = future-index.txt
new_certs_dir = .
serial = future.srl
default_md = sha256
policy = any
unique_subject = no
[any]
commonName = supplied
"""


def _not_yet_valid(directory: Path) -> Path:
    """The server's certificate again (same key, same extensions), valid from a year from now:
    `openssl ca` is the CLI's way to set notBefore."""
    (directory / "future-ca.cnf").write_text(_FUTURE_CA_CNF)
    (directory / "future-index.txt").write_text("")
    (directory / "future.srl").write_text("1000\n")
    start = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=365)
    end = start + datetime.timedelta(days=VALID_DAYS)
    _run(directory, "ca", "-batch", "-config", "future-ca.cnf", "-cert", "intermediate.pem",
         "-keyfile", "intermediate.key", "-in", "server.pem.csr", "-extfile", "server.pem.ext",
         "-notext", "-startdate", start.strftime("%Y%m%d%H%M%SZ"),
         "-enddate", end.strftime("%Y%m%d%H%M%SZ"), "-out", "future.pem")
    return directory / "future.pem"


def make_certs(directory: Path, days: int = VALID_DAYS) -> TlsCerts:
    """Makes every file into `directory` (which must exist) and returns their paths; the valid
    certificates last `days` days from now."""
    if OPENSSL is None:
        raise RuntimeError("openssl is not on PATH")
    d = Path(directory)
    (d / "openssl.cnf").write_text(_OPENSSL_CNF)

    ca_key = _ec_key(d, "ca.key")
    # `req -x509` takes extensions from a config section: one made for it (a self-signed root
    # has no authority key identifier to name).
    (d / "ca.cnf").write_text(_OPENSSL_CNF + "[v3]\n" + _CA_EXT.replace(
        "authorityKeyIdentifier = keyid\n", ""))
    _run(d, "req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=sluicegate test CA",
         "-days", str(days), "-sha256", "-config", "ca.cnf", "-extensions", "v3",
         "-out", "ca.pem")

    inter_key = _ec_key(d, "intermediate.key")
    inter = _sign(d, inter_key, "/CN=sluicegate test intermediate", "ca.pem", "ca.key",
                  _CA_EXT, "intermediate.pem", days)

    server_key = _ec_key(d, "server.key")
    server = _sign(d, server_key, "/CN=localhost", "intermediate.pem", "intermediate.key",
                   _SERVER_EXT, "server.pem", days)
    chain = d / "server-chain.pem"
    chain.write_text(server.read_text() + inter.read_text())
    reversed_chain = d / "server-chain-reversed.pem"
    reversed_chain.write_text(inter.read_text() + server.read_text())

    client_key = _ec_key(d, "client.key")
    client = _sign(d, client_key, "/O=sluicegate tests/CN=sluicegate-test-client", "ca.pem",
                   "ca.key", _CLIENT_EXT, "client.pem", days)

    # A negative validity puts notAfter a day before now: expired, and otherwise well formed.
    expired = _sign(d, server_key, "/CN=localhost", "intermediate.pem", "intermediate.key",
                    _SERVER_EXT, "expired.pem", days=-1)

    future_chain = d / "future-chain.pem"
    future_chain.write_text(_not_yet_valid(d).read_text() + inter.read_text())

    _run(d, "pkcs8", "-topk8", "-in", "server.key", "-v2", "aes-256-cbc",
         "-passout", "pass:" + PASSPHRASE, "-out", "server-encrypted.key")
    other_key = _ec_key(d, "other.key")

    return TlsCerts(
        directory=d,
        ca_cert=d / "ca.pem",
        ca_key=ca_key,
        intermediate_cert=inter,
        server_cert=server,
        server_chain=chain,
        server_chain_reversed=reversed_chain,
        server_key=server_key,
        client_cert=client,
        client_key=client_key,
        expired_cert=expired,
        future_chain=future_chain,
        encrypted_key=d / "server-encrypted.key",
        other_key=other_key,
    )


@pytest.fixture(scope="session")
def tls_certs(tmp_path_factory: pytest.TempPathFactory) -> TlsCerts:
    """One set of files per test session (making them takes about a second)."""
    if OPENSSL is None:
        pytest.skip("openssl is not on PATH")
    return make_certs(tmp_path_factory.mktemp("tls-certs"))


if __name__ == "__main__":
    # `python tests/tls_certs.py DIR [DAYS]`: make the files by hand, to try a server with them
    # (src/io/tls/testdata, the Rust unit tests' fixtures, was made with DAYS=36500).
    import sys

    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    days = int(sys.argv[2]) if len(sys.argv) > 2 else VALID_DAYS
    for name, path in vars(make_certs(out, days)).items():
        print(f"{name:24} {path}")
