"""What is published: the sdist `maturin sdist` makes from this tree, unpacked and read by
cargo as pip's build would read it, and the profile the release wheels are built with
(scripts/wheels.sh). The wheels themselves are built by `./dev wheels`, not here (minutes of
fat-LTO build).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

MATURIN = ROOT / ".venv" / "bin" / "maturin"
CARGO = shutil.which("cargo")


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    if not MATURIN.exists() or CARGO is None:
        pytest.skip("needs maturin in .venv and cargo")
    out = tmp_path_factory.mktemp("sdist")
    subprocess.run([str(MATURIN), "sdist", "--out", str(out)], cwd=ROOT, check=True,
                   capture_output=True)
    (archive,) = out.glob("sluicegate-*.tar.gz")
    with tarfile.open(archive) as t:
        names = t.getnames()
        t.extractall(out / "x", filter="data")
    (top,) = (out / "x").iterdir()
    return archive, names, top


def test_the_sdist_builds_with_every_patched_crate(sdist):
    """The sdist left out vendor/h3 and vendor/h3-quinn, which Cargo.toml's [patch] builds
    with: cargo could not even load its manifest (`failed to load source for dependency
    h3`), so no pip install from it could build."""
    _, _, top = sdist
    patched = tomllib.loads((ROOT / "Cargo.toml").read_text())["patch"]["crates-io"]
    for name, spec in patched.items():
        assert (top / spec["path"] / "Cargo.toml").exists(), name
    r = subprocess.run([CARGO, "metadata", "--offline", "--format-version", "1"], cwd=top,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def test_the_sdist_carries_no_measurements_tests_or_fixtures(sdist):
    """The sdist carried benchmark harnesses, probes and measurements, the tests and their
    fixtures (1.34 MB against the 303 KB the docs gave): only what builds the package and its
    docs goes in."""
    _, names, _ = sdist
    inside = {n.split("/", 2)[1] for n in names if n.count("/") >= 1}
    assert not inside & {"benchmarks", "tests", "fuzz", "BENCHMARKS.md"}, sorted(inside)
    assert {"src", "crates", "python", "vendor", "docs", "Cargo.toml", "Cargo.lock",
            "pyproject.toml", "LICENSE", "README.md"} <= inside


def test_the_sdist_is_the_size_the_docs_give(sdist):
    """docs/packaging.md gives the sdist's size; it must stay true (within a tenth)."""
    archive, _, _ = sdist
    text = (ROOT / "docs" / "packaging.md").read_text()
    kb = int(re.search(r"sdist: about (\d+) KB", text).group(1))
    assert abs(archive.stat().st_size / 1024 - kb) <= kb / 10, (archive.stat().st_size, kb)


def test_release_wheels_are_built_stripped_without_debug_info():
    """The wheels shipped the release profile's debug info (9.3 MB against the docs' 1.6 MB):
    scripts/wheels.sh builds them with a profile of their own, stripped."""
    profiles = tomllib.loads((ROOT / "Cargo.toml").read_text())["profile"]
    wheel = profiles["wheel"]
    assert wheel["inherits"] == "release" and wheel["strip"] is True and wheel["debug"] == 0
    script = (ROOT / "scripts" / "wheels.sh").read_text()
    builds = re.findall(r"maturin build[^\n]*", script)
    assert builds and all("--profile wheel" in b for b in builds), builds
