"""Deterministic payloads shared by the apps (which serve them) and the harness (which verifies them).

Owns the names, sizes and contents of every body the scenarios send or expect, so that a server's
answer can be compared byte for byte against the same definition the app served from. Files go to
benchmarks/.work/data/ (gitignored) and are generated on first use; the same call always produces
the same bytes, so a sha256 computed by the harness matches what any app process serves.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / ".work" / "data"
STATIC = DATA / "static"  # served under URL prefix /static/ by apps, static features and nginx

HELLO = b"Hello, World!"
PONG = b"pong"
S1_SIZES = {"688128": 688_128, "64MiB": 64 * 1024 * 1024}  # the field report's size, and a big one
S2_SMALL = "file_21324.bin"  # 21,324 bytes, the field report's static file
S2_SMALL_SIZE = 21_324
S2_HUGE = "file_1GiB.bin"
S2_HUGE_SIZE = 1024 * 1024 * 1024
S3_SIZE = 2_500_000  # "a 2.5 MB text"
S3_BLOCKS = (128, 8192)
S8_SIZE = 64 * 1024 * 1024

_MIB = 1024 * 1024


def _base_block() -> bytes:
    """1 MiB of pseudo-random bytes from a fixed seed (incompressible, reproducible)."""
    out = bytearray()
    h = hashlib.sha256(b"sluicegate-benchmark")
    while len(out) < _MIB:
        h = hashlib.sha256(h.digest())
        out += h.digest() * 32  # 1 KiB per hash: cheap, and still not a repeated short pattern
    return bytes(out[:_MIB])


def text(size: int = S3_SIZE) -> bytes:
    """`size` bytes of ASCII text lines (no CR, so a chunked stream's terminator cannot occur in it)."""
    line = b"".join(b"%06d the quick brown fox jumps over the lazy dog\n" % i for i in range(1000))
    return (line * (size // len(line) + 1))[:size]


def _write(path: Path, size: int) -> Path:
    if path.exists() and path.stat().st_size == size:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        base = _base_block()
        for i in range(0, size, _MIB):
            block = i.to_bytes(8, "big") + base[8:]
            f.write(block[: min(_MIB, size - i)])
    os.replace(tmp, path)
    path.chmod(0o644)
    return path


def body_path(key: str) -> Path:
    """The S1 body file for a size key of S1_SIZES ('688128' or '64MiB')."""
    return _write(DATA / f"body_{key}.bin", S1_SIZES[key])


def static_path(name: str = S2_SMALL) -> Path:
    size = {S2_SMALL: S2_SMALL_SIZE, S2_HUGE: S2_HUGE_SIZE}[name]
    return _write(STATIC / name, size)


def ensure(huge: bool = False) -> None:
    """Generate every file the apps serve (the 1 GiB one only when asked)."""
    for key in S1_SIZES:
        body_path(key)
    static_path(S2_SMALL)
    if huge:
        static_path(S2_HUGE)
    for d in (DATA, STATIC):
        d.chmod(0o755)  # mod_wsgi's daemon and nginx's workers read them as www-data / nobody
