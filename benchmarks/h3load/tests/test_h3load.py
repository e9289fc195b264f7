"""h3load against an independent HTTP/3 server (aioquic, tests/aioquic_server.py): the counts,
the body checks (a wrong byte is a mismatch, not a success), POST bodies, timed runs, errors.

    cargo build --release --manifest-path benchmarks/h3load/Cargo.toml
    python -m venv V && V/bin/pip install aioquic pytest
    V/bin/python -m pytest benchmarks/h3load/tests -q
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
H3LOAD = Path(os.environ.get("H3LOAD", HERE.parent / "target" / "release" / "h3load"))
PATTERN = bytes(range(256)) * 4096


def pattern(n: int) -> bytes:
    return (PATTERN * (n // len(PATTERN) + 1))[:n]


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not H3LOAD.exists():
        pytest.skip(f"{H3LOAD} is not built (cargo build --release --manifest-path benchmarks/h3load/Cargo.toml)")
    d = tmp_path_factory.mktemp("h3")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    port = free_udp_port()
    proc = subprocess.Popen([sys.executable, str(HERE / "aioquic_server.py"), "--cert", str(cert), "--key", str(key),
                             "--port", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield f"https://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def run(*args: str) -> tuple[int, dict, str]:
    r = subprocess.run([str(H3LOAD), *args], capture_output=True, text=True, timeout=120)
    lines = r.stdout.strip().splitlines()
    return r.returncode, json.loads(lines[-1]), r.stdout


def test_counts_and_length(server):
    rc, j, _ = run("-c", "2", "-m", "5", "-n", "200", "--expect-body-len", "13", f"{server}/hello")
    assert rc == 0
    assert (j["done"], j["ok"], j["errors"], j["verified"]) == (200, 200, 0, True)
    assert j["body_bytes"] == 200 * 13
    assert j["latency_ms"]["p50"] <= j["latency_ms"]["p99"] <= j["latency_ms"]["max"]


def test_wrong_length_is_a_mismatch(server):
    rc, j, out = run("-n", "5", "--expect-body-len", "12", f"{server}/hello")
    assert rc == 1
    assert (j["done"], j["ok"], j["len_mismatch"]) == (5, 0, 5)
    assert "body of 13 bytes, expected 12" in out


def test_sha256_of_large_bodies(server):
    n = 3_000_000
    rc, j, _ = run("-c", "2", "-m", "2", "-n", "6", "--expect-sha256", hashlib.sha256(pattern(n)).hexdigest(),
                   f"{server}/bytes/{n}")
    assert rc == 0
    assert (j["done"], j["ok"], j["sha_mismatch"], j["body_bytes"]) == (6, 6, 0, 6 * n)


def test_one_changed_byte_is_caught(server):
    n = 100_000
    rc, j, _ = run("-n", "9", "--expect-sha256", hashlib.sha256(pattern(n)).hexdigest(), f"{server}/flaky/{n}")
    # Every third answer has one byte changed, same length: only the hash can tell.
    assert rc == 1
    assert (j["done"], j["ok"], j["sha_mismatch"], j["len_mismatch"]) == (9, 6, 3, 0)


def test_post_body(server, tmp_path):
    body = os.urandom(1_000_000)
    (tmp_path / "b").write_bytes(body)
    answer = hashlib.sha256(body).hexdigest().encode()
    rc, j, _ = run("-n", "4", "-m", "2", "-d", str(tmp_path / "b"), "--expect-sha256",
                   hashlib.sha256(answer).hexdigest(), f"{server}/sha256")
    assert rc == 0
    assert (j["done"], j["ok"]) == (4, 4)


def test_status(server):
    rc, j, _ = run("-n", "3", f"{server}/status/404")
    assert rc == 1 and j["bad_status"] == 3
    rc, j, _ = run("-n", "3", "--expect-status", "404", f"{server}/status/404")
    assert rc == 0 and j["ok"] == 3


def test_streams_run_concurrently(server):
    # 100 streams of a 0.1 s answer on one connection: the server sees them wait together.
    rc, j, _ = run("-c", "1", "-m", "100", "-n", "300", "--expect-body-len", "10", f"{server}/sleep")
    assert rc == 0 and j["ok"] == 300
    rc, j, _ = run("-n", "1", "--expect-sha256", hashlib.sha256(b"100").hexdigest(), f"{server}/sleeping-max")
    assert rc == 0, "the server did not see 100 requests waiting at once"


def test_timed_run(server):
    rc, j, _ = run("-c", "2", "-m", "4", "-D", "1s", "--expect-body-len", "13", f"{server}/hello")
    assert rc == 0
    assert j["done"] > 0 and j["ok"] == j["done"] and j["errors"] == 0
    assert 0.9 < j["seconds"] < 3


def test_no_server_is_a_connect_error():
    if not H3LOAD.exists():
        pytest.skip("h3load is not built")
    rc, j, _ = run("-n", "1", "--timeout", "1", f"https://127.0.0.1:{free_udp_port()}/")
    assert rc == 1
    assert (j["done"], j["connect_errors"]) == (0, 1)
