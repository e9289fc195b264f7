"""Install the peer servers into the benchmark venvs and record each outcome.

Owns the table of peers (pip arguments and the import that proves a peer usable) and the record
file `benchmarks/.work/install.json` that every report copies. Called by `setup.sh`; stdlib only,
run with the project's Python (not the venv's), so that it works before the venv has anything.

Why a record: a peer that does not build on this machine must show up in the report as
"failed: <last line of the error>", not silently vanish from the tables.
Idempotent: a peer recorded as built whose import check still passes is skipped; a peer recorded
as failed is not retried unless --force (a failing C build costs a minute of a 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Peer:
    name: str
    pip_args: tuple[str, ...]
    check: str  # Python code run in the venv; must exit 0 when the peer is usable
    dist: str  # distribution name whose version is reported
    modwsgi_venv: bool = False  # install into the Debian-python venv instead


PEERS: tuple[Peer, ...] = (
    Peer("matplotlib", ("matplotlib",), "import matplotlib", "matplotlib"),
    Peer("gunicorn", ("gunicorn",), "import gunicorn.workers.gthread", "gunicorn"),
    Peer("gevent", ("gevent",), "import gevent.pywsgi", "gevent"),
    Peer("waitress", ("waitress",), "import waitress", "waitress"),
    Peer("uwsgi", ("uWSGI",), "import shutil,sys; sys.exit(not shutil.which('uwsgi', path=sys.prefix + '/bin'))", "uWSGI"),
    Peer("granian", ("granian",), "import granian", "granian"),
    Peer("bjoern", ("bjoern",), "import bjoern", "bjoern"),
    Peer("pyruvate", ("pyruvate",), "import pyruvate", "pyruvate"),
    # fastwsgi 0.0.9 imports pkg_resources, removed from setuptools 81.
    Peer("fastwsgi", ("setuptools<81", "fastwsgi"), "import fastwsgi", "fastwsgi"),
    Peer("fastpysgi", ("fastpysgi",), "import fastpysgi", "fastpysgi"),
    Peer("cheroot", ("cheroot",), "import cheroot.wsgi", "cheroot"),
    # meinheld 1.0.2 pins greenlet<0.5, which does not compile on 3.11: install it without its
    # dependencies beside the current greenlet (already there for gevent).
    Peer("meinheld", ("--no-deps", "meinheld"), "import meinheld.server", "meinheld"),
    # --no-cache-dir: never reuse a wheel built against the other Python.
    Peer("mod_wsgi", ("--no-cache-dir", "mod_wsgi"), "import mod_wsgi.server", "mod_wsgi", modwsgi_venv=True),
    # S13's app, in every venv that serves it (sluicegate's own venv: setup.sh). Django 6 needs
    # Python 3.12; these venvs are 3.11, so the current 5.2 LTS.
    Peer("django", ("django>=5.2,<6", "psycopg[binary]>=3.2", "flask>=3", "sqlalchemy>=2"),
         "import django, psycopg, flask, sqlalchemy", "django"),
    Peer("django-modwsgi", ("--no-cache-dir", "django>=5.2,<6", "psycopg[binary]>=3.2", "flask>=3", "sqlalchemy>=2"),
         "import django, psycopg, flask, sqlalchemy", "django", modwsgi_venv=True),
)


def venv_python(venv: Path) -> str:
    return str(venv / "bin" / "python")


def check(py: str, peer: Peer) -> bool:
    return subprocess.run([py, "-c", peer.check], capture_output=True, timeout=120).returncode == 0


def version(py: str, peer: Peer) -> str | None:
    code = f"import importlib.metadata as m; print(m.version({peer.dist!r}))"
    out = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=60)
    return out.stdout.strip() or None if out.returncode == 0 else None


def last_error_line(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    # pip ends with a generic hint; the line that names the cause is the last "error:" one.
    for ln in reversed(lines):
        low = ln.lower()
        if ("error" in low or "fatal" in low) and not low.startswith(("note:", "hint:", "╰─>", "error: subprocess-exited")):
            return ln[:300]
    return lines[-1][:300] if lines else "no output"


def install(peer: Peer, py: str, log_dir: Path) -> dict:
    t0 = time.monotonic()
    cmd = [py, "-m", "pip", "install", "--disable-pip-version-check", *peer.pip_args]
    print(f"install: {peer.name}: {' '.join(cmd[1:])}", flush=True)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
        out, rc = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = f"{e.stdout or ''}{e.stderr or ''}\nerror: pip timed out after 1200 s", -1
    log = log_dir / f"{peer.name}.log"
    log.write_text(out)
    rec = {"seconds": round(time.monotonic() - t0, 1), "log": str(log), "pip_args": list(peer.pip_args)}
    if rc == 0 and check(py, peer):
        rec.update(status="built", version=version(py, peer))
    elif rc == 0:
        imp = subprocess.run([py, "-c", peer.check], capture_output=True, text=True)
        rec.update(status="failed", error="installed but does not import: " + last_error_line(imp.stderr))
    else:
        rec.update(status="failed", error=last_error_line(out))
    print(f"install: {peer.name}: {rec['status']} {rec.get('version') or rec.get('error')}", flush=True)
    return rec


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--venv", type=Path, required=True)
    ap.add_argument("--modwsgi-venv", type=Path, required=True)
    ap.add_argument("--record", type=Path, required=True)
    ap.add_argument("--logs", type=Path, required=True)
    ap.add_argument("--force", action="store_true", help="retry peers recorded as failed")
    ap.add_argument("--only", default="", help="comma-separated peer names")


def main(args: argparse.Namespace) -> int | None:
    args.logs.mkdir(parents=True, exist_ok=True)
    record: dict = json.loads(args.record.read_text()) if args.record.exists() else {}
    only = {n for n in args.only.split(",") if n}
    for peer in PEERS:
        if only and peer.name not in only:
            continue
        py = venv_python(args.modwsgi_venv if peer.modwsgi_venv else args.venv)
        prev = record.get(peer.name, {})
        if prev.get("status") == "built" and check(py, peer):
            continue
        if prev.get("status") == "failed" and not args.force:
            print(f"install: {peer.name}: failed before ({prev.get('error')}); FORCE=1 to retry")
            continue
        if not Path(py).exists():
            record[peer.name] = {"status": "failed", "error": f"no venv python at {py}"}
            continue
        record[peer.name] = install(peer, py, args.logs)
        record[peer.name]["python"] = subprocess.run(
            [py, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True
        ).stdout.strip()
        args.record.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    args.record.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    built = sorted(n for n, r in record.items() if r.get("status") == "built")
    failed = sorted(f"{n} ({r.get('error')})" for n, r in record.items() if r.get("status") != "built")
    print("install: built: " + ", ".join(built))
    if failed:
        print("install: FAILED: " + "; ".join(failed))
    return 0
