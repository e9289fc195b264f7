"""Every server in the comparison: how to start it for an app, with which settings, and whether it
is here at all.

Owns the one table of servers (sluicegate, the peers, the nginx anchor). Each entry turns a
Target (which app module, whether the app blocks, whether /static/ goes to the server's own static
feature) and a port into a command line, and states its settings in words for the report.
Fairness rules live here, in one place:
  * one worker process for every server (S9 and S10: the same number of workers for every
    server), bound to 127.0.0.1 on a free port, no access log;
  * the same thread count for every thread-pool server: FAST_THREADS for apps that do not block,
    BLOCKING_THREADS (the largest S5 client count) for the app that sleeps;
  * keep-alive idle timeouts of KEEPALIVE_S everywhere they can be set, so that S7's idle
    connections are not closed by a short default while the measurement runs;
  * connection and backlog limits raised where a default would refuse S5/S7's connections;
  * a server's static feature only where it has one (S2 "static" cases).
Every departure from a server's defaults is written in its `settings` string, which the report
prints beside its figures.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
APPS = BENCH / "apps"
WORK = BENCH / ".work"
VENV = BENCH / ".venv"
MODWSGI_VENV = BENCH / ".venv-modwsgi"
SLUICEGATE_PY = BENCH.parent / ".venv" / "bin" / "python"
# A second build of sluicegate to compare with the work tree's in one interleaved run (e.g. the
# last commit before a change, built in a git worktree): the Python of its venv.
SLUICEGATE_BASE_PY = Path(os.environ["SLUICEGATE_BASE_PY"]) if os.environ.get("SLUICEGATE_BASE_PY") else None

sys.path.insert(0, str(APPS))
sys.path.insert(0, str(BENCH))
import payloads  # noqa: E402
from bench import nginx  # noqa: E402

FAST_THREADS = 4  # thread-pool size for apps that do not block (waitress's default)
BLOCKING_THREADS = 1000  # S5's largest client count: no pool caps below the ideal rate
KEEPALIVE_S = 120
BACKLOG = 4096  # net.core.somaxconn here
MAX_CONNECTIONS = 19000  # below the 20,000 fds the machine allows a process


@dataclass(frozen=True)
class Target:
    """What a server is asked to serve."""

    module: str  # app module in benchmarks/apps, callable `app`
    probe: str  # path of the readiness probe
    expect: bytes  # its exact body
    blocking: bool = False  # S5: the app sleeps; thread pools get BLOCKING_THREADS
    unframed: bool = False  # S3: the app sends no Content-Length (the server must chunk or close)
    static: bool = False  # S2 static cases: /static/ is served by the server's own feature
    health: bool = False  # S12: the server answers /healthz itself, if it can (sluicegate's --health-path)
    pool: int | None = None  # S13: the peers' thread count, where the scenario sets it
    ours_threads: str | None = None  # S13: sluicegate's --threads MIN:MAX, where the scenario sets it
    workers: int | None = None  # S9/S10: worker processes (None: one process; sluicegate without a master)
    max_requests: int = 0  # S10: recycle a worker after this many requests, where the server can
    respawn: bool = False  # S10: the server must replace a killed worker (granian needs a flag)

    @property
    def threads(self) -> int:
        if self.pool is not None:
            return self.pool
        return BLOCKING_THREADS if self.blocking else FAST_THREADS


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str]
    settings: str
    cwd: Path = APPS


@dataclass(frozen=True)
class Server:
    name: str
    kind: str  # "ours", "peer" or "anchor"
    install_key: str | None  # key in .work/install.json (None: not installed by setup.sh's pip)
    describe: str  # one line for the report

    @property
    def has_static(self) -> bool:
        return self.name in STATIC_FEATURE

    def launch(self, target: Target, port: int) -> Launch | None:
        """The command for target on port, or None if this server cannot serve it."""
        if target.static and not self.has_static:
            return None
        if (target.workers or 1) > 1 and self.name not in WORKER_PROCESSES:
            return None  # S9/S10's two workers: a single-process server is n/a, not run as one
        return _LAUNCHERS[self.name](target, port)

    def available(self) -> tuple[bool, str]:
        return _available(self.name)

    def version(self) -> str | None:
        return _version(self.name)


def _env(venv_bin: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH")}
    env["PYTHONPATH"] = str(APPS)
    env["PYTHONUNBUFFERED"] = "1"
    if venv_bin is not None:
        env["PATH"] = f"{venv_bin}:{env.get('PATH', '/usr/bin:/bin')}"
        env["VIRTUAL_ENV"] = str(venv_bin.parent)
    return env


def _vbin(name: str) -> str:
    return str(VENV / "bin" / name)


# ---- one launcher per server -----------------------------------------------------------------

def _sluicegate_py(name: str) -> Path | None:
    return SLUICEGATE_BASE_PY if name == "sluicegate-base" else SLUICEGATE_PY


def _sluicegate(t: Target, port: int, py: Path = SLUICEGATE_PY) -> Launch:
    argv = [str(py), "-m", "sluicegate", "--bind", f"127.0.0.1:{port}"]
    settings = ["defaults"]
    if t.blocking:
        argv += ["--threads", f"16:{BLOCKING_THREADS}"]
        settings = [f"--threads 16:{BLOCKING_THREADS}"]
    if t.ours_threads:
        argv += ["--threads", t.ours_threads]
        settings = [f"--threads {t.ours_threads}"]
    if t.static:
        argv += ["--static", f"/static={payloads.STATIC}"]
        settings.append("--static /static=DIR")
    if t.health and py == SLUICEGATE_PY:
        argv += ["--health-path", "/healthz"]
        settings.append("--health-path /healthz")
    if t.workers is not None:
        argv += ["--workers", str(t.workers)]
        settings.append(f"--workers {t.workers}")
    if t.max_requests:
        argv += ["--max-requests", str(t.max_requests)]
        settings.append(f"--max-requests {t.max_requests}")
    return Launch(argv + [f"{t.module}:app"], _env(py.parent), ", ".join(settings))


def _gunicorn(worker: str):
    def launch(t: Target, port: int) -> Launch:
        w = t.workers or 1
        argv = [_vbin("gunicorn"), "-w", str(w), "-k", worker, "--bind", f"127.0.0.1:{port}",
                "--backlog", str(BACKLOG), "--keep-alive", str(KEEPALIVE_S), "--timeout", "120",
                "--log-level", "warning", "--chdir", str(APPS)]
        settings = f"-w {w} -k {worker}"
        if t.max_requests:
            argv += ["--max-requests", str(t.max_requests)]
            settings += f" --max-requests {t.max_requests}"
        if worker == "gthread":
            argv += ["--threads", str(t.threads), "--worker-connections", str(MAX_CONNECTIONS)]
            settings += f" --threads {t.threads} --worker-connections {MAX_CONNECTIONS}"
        elif worker == "gevent":
            argv += ["--worker-connections", str(MAX_CONNECTIONS)]
            settings += f" --worker-connections {MAX_CONNECTIONS}"
        else:
            settings += " (one request at a time, closes after each response)"
        settings += f" --keep-alive {KEEPALIVE_S}"
        return Launch(argv + [f"{t.module}:app"], _env(VENV / "bin"), settings)
    return launch


def _waitress(t: Target, port: int) -> Launch:
    # --asyncore-use-poll: with select() (the default) waitress fails beyond 1,023 descriptors;
    # said in BENCHMARKS.md, not tuned around silently.
    argv = [_vbin("waitress-serve"), f"--listen=127.0.0.1:{port}", f"--threads={t.threads}",
            f"--connection-limit={MAX_CONNECTIONS}", "--asyncore-use-poll", f"--backlog={BACKLOG}",
            f"--channel-timeout={KEEPALIVE_S}", f"{t.module}:app"]
    return Launch(argv, _env(VENV / "bin"),
                  f"--threads={t.threads} --connection-limit={MAX_CONNECTIONS} --asyncore-use-poll")


def _uwsgi(t: Target, port: int) -> Launch:
    # --http11-socket (keep-alive, in the worker) is uWSGI's fastest HTTP mode, but it sends a body
    # without Content-Length with neither chunking nor a close: the client never sees its end.
    # For such apps the --http router (a separate process) chunks it.
    if t.unframed:
        http = ["--http", f"127.0.0.1:{port}", "--http-keepalive", "--http-auto-chunked"]
        settings = "--http router --http-keepalive --http-auto-chunked"
    else:
        http = ["--http11-socket", f"127.0.0.1:{port}"]
        settings = "--http11-socket"
    w = t.workers or 1
    argv = [_vbin("uwsgi"), "--master", "--die-on-term", *http, "--processes", str(w), "--threads", str(t.threads), "--module", f"{t.module}:app",
            "--chdir", str(APPS), "--pythonpath", str(APPS), "--disable-logging", "--listen", str(BACKLOG),
            "--socket-timeout", str(KEEPALIVE_S), "--buffer-size", "32768", "--need-app",
            # Without it the headers' write and the body's sendfile meet Nagle and the client's
            # delayed ACK: 40 ms per file_wrapper response (23 req/s per connection, measured).
            "--tcp-nodelay"]
    settings += f" --tcp-nodelay --processes {w} --threads {t.threads}"
    if t.max_requests:
        argv += ["--max-requests", str(t.max_requests)]
        settings += f" --max-requests {t.max_requests}"
    if t.static:
        argv += ["--static-map", f"/static={payloads.STATIC}"]
        settings += " --static-map /static=DIR"
    return Launch(argv, _env(VENV / "bin"), settings)


def _granian(t: Target, port: int) -> Launch | None:
    w = t.workers or 1
    argv = [_vbin("granian"), "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port),
            "--workers", str(w), "--blocking-threads", str(t.threads), "--http", "1", "--no-ws",
            "--backlog", str(BACKLOG), "--backpressure", str(MAX_CONNECTIONS), "--log-level", "warning",
            "--no-access-log", "--working-dir", str(APPS)]
    settings = f"--workers {w} --blocking-threads {t.threads} --http 1 --backpressure {MAX_CONNECTIONS}"
    if t.max_requests:
        return None  # granian recycles by lifetime (>= 60 s) or RSS, not by request count
    if t.respawn:
        argv += ["--respawn-failed-workers", "--respawn-interval", "0"]
        settings += " --respawn-failed-workers --respawn-interval 0"
    if t.static:
        argv += ["--static-path-route", "/static", "--static-path-mount", str(payloads.STATIC)]
        settings += " --static-path-mount DIR"
    return Launch(argv + [f"{t.module}:app"], _env(VENV / "bin"), settings)


def _modwsgi(t: Target, port: int) -> Launch:
    root = WORK / "modwsgi" / str(port)
    root.mkdir(parents=True, exist_ok=True)
    extra = root.parent / "extra.conf"
    # Apache's default closes a keep-alive connection after 100 requests; nginx's anchor and the
    # other servers do not, so neither does this one.
    extra.write_text("MaxKeepAliveRequests 0\n")
    argv = [str(MODWSGI_VENV / "bin" / "mod_wsgi-express"), "start-server", str(APPS / f"{t.module}.py"),
            "--callable-object", "app", "--host", "127.0.0.1", "--port", str(port),
            "--processes", str(t.workers or 1), "--threads", str(t.threads), "--user", "www-data", "--group", "www-data",
            "--server-root", str(root), "--python-path", str(APPS), "--keep-alive-timeout", str(KEEPALIVE_S),
            "--server-mpm", "event", "--max-clients", str(max(t.threads * 2, 200)),
            "--include-file", str(extra), "--log-level", "warn", "--startup-log",
            # S8: the default --limit-request-body is 10 MB (413), and chunked request bodies are
            # refused (411) unless --chunked-request.
            "--limit-request-body", str(128 * 1024 * 1024), "--chunked-request",
            # Debian's apxs does not name its binary; mod_wsgi-express would look for "httpd".
            "--httpd-executable", "/usr/sbin/apache2", "--locale", "C.UTF-8", "--server-backlog", str(BACKLOG)]
    settings = (f"--processes {t.workers or 1} --threads {t.threads} --server-mpm event --max-clients {max(t.threads * 2, 200)}"
                " --limit-request-body 128MiB --chunked-request --user www-data")
    if t.static:
        argv += ["--document-root", str(payloads.DATA)]  # DATA/static/... answers /static/...
        settings += " --document-root DIR"
    return Launch(argv, _env(MODWSGI_VENV / "bin"), settings)


def _library(name: str, settings_fn):
    def launch(t: Target, port: int) -> Launch:
        argv = [_vbin("python"), str(BENCH / "run.py"), "launch", name, str(port), f"{t.module}:app",
                "--threads", str(t.threads), "--keepalive", str(KEEPALIVE_S)]
        return Launch(argv, _env(VENV / "bin"), settings_fn(t))
    return launch


def _nginx(t: Target, port: int) -> Launch | None:
    # nginx serves the same bytes where that means anything: hello world, pong, files.
    if t.module not in ("s6_hello", "s4_pong", "s1_bodies", "s2_static") or (t.module == "s2_static" and not t.static):
        return None
    conf = nginx.config(WORK / "nginx" / str(port), port)
    return Launch(nginx.argv(conf), _env(None), "1 worker, sendfile on, tcp_nopush on", cwd=conf.parent)


_LAUNCHERS = {
    "sluicegate": _sluicegate,
    "sluicegate-base": lambda t, port: _sluicegate(t, port, SLUICEGATE_BASE_PY or SLUICEGATE_PY),
    "sluicegate-w1": lambda t, port: _sluicegate(dataclasses.replace(t, workers=t.workers or 1), port),
    "bjoern": _library("bjoern", lambda t: "bjoern.run (single thread, libev)"),
    "gunicorn-gthread": _gunicorn("gthread"),
    "gunicorn-sync": _gunicorn("sync"),
    "gunicorn-gevent": _gunicorn("gevent"),
    "gevent-pywsgi": _library("gevent-pywsgi", lambda t: "gevent.pywsgi.WSGIServer, monkey.patch_all()"),
    "waitress": _waitress,
    "uwsgi": _uwsgi,
    "mod_wsgi": _modwsgi,
    "granian": _granian,
    "pyruvate": _library("pyruvate", lambda t: f"{t.threads} workers, defaults (max_reuse_count=0: one response per connection)"),
    "fastwsgi": _library("fastwsgi", lambda t: "workers=1, max_content_length=128 MiB"),
    "fastpysgi": _library("fastpysgi", lambda t: "workers=1, max_content_length=128 MiB"),
    "cheroot": _library("cheroot", lambda t: f"numthreads={t.threads}, request_queue_size=4096"),
    "meinheld": _library("meinheld", lambda t: f"set_keepalive({KEEPALIVE_S}), max_content_length=128 MiB"),
    "nginx": _nginx,
}

SERVERS: dict[str, Server] = {s.name: s for s in (
    Server("sluicegate", "ours", None, "this project (Rust core, WSGI)"),
    Server("sluicegate-base", "peer", None, "another build of this project ($SLUICEGATE_BASE_PY), for before/after runs"),
    Server("sluicegate-w1", "peer", None, "this project under a master with one worker (--workers 1)"),
    Server("bjoern", "peer", "bjoern", "C, libev, single-threaded"),
    Server("gunicorn-gthread", "peer", "gunicorn", "gunicorn, gthread worker"),
    Server("gunicorn-sync", "peer", "gunicorn", "gunicorn, sync worker"),
    Server("gunicorn-gevent", "peer", "gevent", "gunicorn, gevent worker"),
    Server("gevent-pywsgi", "peer", "gevent", "gevent.pywsgi"),
    Server("waitress", "peer", "waitress", "pure Python, asyncore + threads"),
    Server("uwsgi", "peer", "uwsgi", "C, uWSGI --http11-socket"),
    Server("mod_wsgi", "peer", "mod_wsgi", "Apache httpd + mod_wsgi-express daemon mode"),
    Server("granian", "peer", "granian", "Rust (hyper/tokio), WSGI interface"),
    Server("pyruvate", "peer", "pyruvate", "Rust, WSGI"),
    Server("fastwsgi", "peer", "fastwsgi", "C, libuv"),
    Server("fastpysgi", "peer", "fastpysgi", "C, libuv (fastwsgi's successor)"),
    Server("cheroot", "peer", "cheroot", "pure Python, thread pool (CherryPy's server)"),
    Server("meinheld", "peer", "meinheld", "C, picoev + greenlets"),
    Server("nginx", "anchor", None, "nginx serving the same bytes (the loopback/load-generator limit)"),
)}

# The builds of this project (this tree, another build, one worker): they take sluicegate's options.
OUR_BUILDS = ("sluicegate", "sluicegate-base", "sluicegate-w1")
# Servers with a static-file feature of their own (S2's "static" cases).
STATIC_FEATURE = frozenset({*OUR_BUILDS, "uwsgi", "mod_wsgi", "granian", "nginx"})
# Servers that run several worker processes of one app (S9's and S10's 2 workers).
WORKER_PROCESSES = frozenset({*OUR_BUILDS, "gunicorn-gthread", "gunicorn-sync", "gunicorn-gevent", "uwsgi",
                              "mod_wsgi", "granian"})
QUICK_DEFAULT = ("sluicegate", "bjoern", "gunicorn-gthread", "nginx")  # nginx: the anchor, cheap


@functools.cache
def _install_record() -> dict:
    import json

    path = WORK / "install.json"
    return json.loads(path.read_text()) if path.exists() else {}


@functools.cache
def _available(name: str) -> tuple[bool, str]:
    if name in OUR_BUILDS:
        py = _sluicegate_py(name)
        if py is None:
            return False, "SLUICEGATE_BASE_PY is not set (the Python of the other build's venv)"
        if not py.exists():
            return False, f"not built (no {py}; run ./dev build)"
        r = subprocess.run([str(py), "-c", "import sluicegate._core"], capture_output=True, text=True,
                           timeout=60)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["?"])[-1]
            return False, f"not built ({last[:200]})"
        return True, ""
    if name == "nginx":
        return (True, "") if Path(nginx.NGINX).exists() else (False, "nginx not installed (run setup.sh)")
    rec = _install_record().get(SERVERS[name].install_key or "", {})
    if rec.get("status") == "built":
        return True, ""
    if rec:
        return False, f"failed to install: {rec.get('error')}"
    return False, "not installed (run benchmarks/setup.sh)"


@functools.cache
def _version(name: str) -> str | None:
    if name in OUR_BUILDS:
        r = subprocess.run([str(_sluicegate_py(name)), "-c",
                            "import importlib.metadata as m; print(m.version('sluicegate'))"],
                           capture_output=True, text=True, timeout=60)
        return r.stdout.strip() or None
    if name == "nginx":
        return nginx.version()
    return _install_record().get(SERVERS[name].install_key or "", {}).get("version")
