"""The TLS listener as a real TLS scanner sees it: `sslyze` (PyPI, requirements-dev.txt), which
brings its own OpenSSL builds (nassl: a legacy one that still speaks SSL 2.0/3.0, export and NULL
suites, compression) and so can offer the server what no modern client would.

One scan, its whole text output printed into the test log (shown with `pytest -rP`, and on
failure), its JSON read for the assertions: no protocol below TLS 1.2 accepted, no weak TLS 1.2
cipher suite (only AEAD suites with ECDHE: no CBC, SHA-1 MAC, RC4, 3DES, export or NULL),
secure renegotiation offered (RFC 5746) and client-initiated renegotiation refused, no TLS
compression (CRIME), and TLS_FALLBACK_SCSV honoured. The scan's running time is bounded by
`SCAN_TIMEOUT` (a bound, not an assertion: a scan over loopback ends in seconds).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.test_tls import tls_options
from tests.tls_certs import tls_certs  # noqa: F401  (the fixture)

# Upper bound for the whole scan: sslyze tries every suite of every protocol (hundreds of
# handshakes); on 2 shared cores that is well under a minute.
SCAN_TIMEOUT = 240

# What the scan runs, and the JSON key of each result.
SCANS = {
    "--sslv2": "ssl_2_0_cipher_suites",
    "--sslv3": "ssl_3_0_cipher_suites",
    "--tlsv1": "tls_1_0_cipher_suites",
    "--tlsv1_1": "tls_1_1_cipher_suites",
    "--tlsv1_2": "tls_1_2_cipher_suites",
    "--tlsv1_3": "tls_1_3_cipher_suites",
    "--reneg": "session_renegotiation",
    "--compression": "tls_compression",
    "--fallback": "tls_fallback_scsv",
}

# Substrings of an IANA suite name that make a suite weak (or a mode this server should not use).
WEAK = ("CBC", "RC4", "3DES", "DES_", "EXPORT", "NULL", "ANON", "MD5", "_SHA\0")


def sslyze_available() -> bool:
    try:
        import sslyze  # noqa: F401
    except ImportError:
        return False
    return True


def scan(host: str, port: int, json_path) -> dict:
    cmd = [sys.executable, "-m", "sslyze", "--mozilla_config=disable",
           f"--json_out={json_path}", *SCANS, f"{host}:{port}"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=SCAN_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        print(e.stdout or "", e.stderr or "")
        raise AssertionError(f"sslyze did not finish within {SCAN_TIMEOUT}s") from e
    print("$", " ".join(cmd))
    print(r.stdout)
    print(r.stderr)
    assert r.returncode == 0, r.stderr
    doc = json.loads(json_path.read_text())
    [server] = doc["server_scan_results"]
    assert server["scan_status"] == "COMPLETED", server.get("connectivity_error_trace")
    results = server["scan_result"]
    for key in SCANS.values():
        assert results[key]["status"] == "COMPLETED", (key, results[key].get("error_trace"))
    return {key: results[key]["result"] for key in SCANS.values()}


def accepted(result: dict) -> list:
    return [s["cipher_suite"]["name"] for s in result["accepted_cipher_suites"]]


@pytest.mark.skipif(not sslyze_available(), reason="sslyze is not installed (requirements-dev.txt)")
def test_a_tls_scanner_finds_no_old_protocol_weak_cipher_renegotiation_or_compression(
        start_server, tls_certs, tmp_path):
    srv = start_server("hello", *tls_options(tls_certs))
    r = scan(srv.host, srv.port, tmp_path / "sslyze.json")

    for key in ("ssl_2_0_cipher_suites", "ssl_3_0_cipher_suites", "tls_1_0_cipher_suites",
                "tls_1_1_cipher_suites"):
        assert accepted(r[key]) == [], f"{key}: a protocol below TLS 1.2 was accepted"

    tls12 = accepted(r["tls_1_2_cipher_suites"])
    tls13 = accepted(r["tls_1_3_cipher_suites"])
    assert tls12 and tls13, "TLS 1.2 and 1.3 are both served"
    for name in tls12:
        assert name.startswith("TLS_ECDHE_"), f"{name}: no forward secrecy"
        assert name.endswith(("_GCM_SHA256", "_GCM_SHA384", "_CHACHA20_POLY1305_SHA256")), name
        assert not any(w in name + "\0" for w in WEAK), f"{name}: a weak cipher suite"
    assert set(tls13) <= {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                          "TLS_CHACHA20_POLY1305_SHA256"}

    reneg = r["session_renegotiation"]
    assert reneg["supports_secure_renegotiation"] is True
    assert reneg["is_vulnerable_to_client_renegotiation_dos"] is False
    assert r["tls_compression"]["supports_compression"] is False
    assert r["tls_fallback_scsv"]["supports_fallback_scsv"] is True
