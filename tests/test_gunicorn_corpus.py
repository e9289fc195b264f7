"""A corpus of gunicorn deployments, each started with sluicegate by changing the program's name
and nothing else, and checked for what its configuration sets.

tests/corpus/gunicorn/cases/NAME/ holds one deployment: the start line as its Dockerfile's
entrypoint, Procfile or systemd unit runs it (`entrypoint.sh`) and, most often, its
gunicorn.conf.py. They are written in the style of public projects' files (a wiki, an inventory
system, a document manager, a product-analytics platform, an e-learning platform, an art site,
a social reader, a Prometheus and a Datadog setup, gunicorn's own example config...), with the
constructs those use: settings from the environment, the project imported by the config file
and by its hooks, `pythonpath`, hooks writing to `server.log`, `raw_env`, log files, pid files,
unix sockets. tests/corpus/gunicorn/project/ is the project they serve (a Django-shaped
`mysite`, a Flask-shaped app factory, an app outside the working directory).

Each case is copied to a fresh directory and its `entrypoint.sh` run by /bin/sh with
`gunicorn` at the start of the command replaced by `sluicegate` (the console script, on PATH),
HOST=127.0.0.1 and PORT=0, and no PYTHONPATH: what is importable is what sys.path is made of.
`CHECKS` (below) says what is checked for each: the worker count, where it listens, the hooks
it defines that ran (they record to $CORPUS_MARKS), the log lines where the config sends them,
and an answer over the socket. What a config sets that sluicegate does not do yet is named
in `UNCHECKED`, and left out of the checks.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest

from tests.helpers import listening_addresses, wait_for

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus" / "gunicorn"
PYTHON = os.environ.get("SLUICEGATE_TEST_PYTHON", str(ROOT / ".venv" / "bin" / "python"))
BIN = Path(PYTHON).parent
START_TIMEOUT = 30.0

#: The program at the head of a start line (alone on a line, or after `exec`).
COMMAND_RE = re.compile(r"(^|\bexec\s+)gunicorn(?=\s)", re.M)


class Deployment:
    """One case, copied to `where` and started by its entrypoint."""

    def __init__(self, name: str, where: Path, project_dir: str = "") -> None:
        self.name = name
        self.dir = where
        shutil.copytree(CORPUS / "project", where / project_dir, dirs_exist_ok=True)
        shutil.copytree(CORPUS / "cases" / name, where, dirs_exist_ok=True)
        script = (where / "entrypoint.sh").read_text()
        rewritten, n = COMMAND_RE.subn(r"\1sluicegate", script)
        assert n == 1, f"{name}/entrypoint.sh: expected one gunicorn command"
        (where / "entrypoint.sh").write_text(rewritten)
        self.marks_path = where / "marks"
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("SLUICEGATE_") and k != "PYTHONPATH"}
        env.update(PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", HOST="127.0.0.1",
                   PORT="0", CORPUS_MARKS=str(self.marks_path), SOCKET_DIR=str(where),
                   PYTHONUNBUFFERED="1")
        self.stderr: List[str] = []
        self.stdout: List[str] = []
        self.proc = subprocess.Popen(["/bin/sh", "entrypoint.sh"], cwd=str(where), env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True)
        for pipe, lines in ((self.proc.stderr, self.stderr), (self.proc.stdout, self.stdout)):
            threading.Thread(target=self._drain, args=(pipe, lines), daemon=True).start()

    @staticmethod
    def _drain(pipe: Any, lines: List[str]) -> None:
        for raw in iter(pipe.readline, b""):
            lines.append(raw.decode("utf-8", "replace"))

    # -- what it said --------------------------------------------------------------------

    def error_log(self) -> str:
        """Standard error, and the error log file if the config names one."""
        text = "".join(self.stderr)
        log_file = self.dir / "logs" / "error.log"
        if log_file.exists():
            text += log_file.read_text()
        return text

    def out(self) -> str:
        return "".join(self.stdout)

    def marks(self, hook: str) -> List[Dict[str, Any]]:
        try:
            lines = self.marks_path.read_text().splitlines()
        except FileNotFoundError:
            return []
        return [m for m in map(json.loads, lines) if m["hook"] == hook]

    def context(self) -> str:
        return f"--- stderr/error log:\n{self.error_log()[-6000:]}\n--- stdout:\n{self.out()[-2000:]}"

    def wait_log(self, pattern: str, count: int = 1) -> List[str]:
        return wait_for(lambda: (lambda found: found if len(found) >= count else None)(
            re.findall(pattern, self.error_log())), f"{count} x {pattern!r} in the error log",
            timeout=START_TIMEOUT, context=self.context)

    def wait_ready(self) -> List[Any]:
        """The addresses of the `Listening at:` lines, once the server says it serves."""
        def ready() -> Optional[List[Any]]:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited {self.proc.returncode}\n"
                                     + self.context())
            found = [a for line in self.error_log().splitlines()
                     for a in listening_addresses(line)]
            return found or None
        return wait_for(ready, f"{self.name} to listen", timeout=START_TIMEOUT,
                        context=self.context)

    def workers_ready(self) -> List[str]:
        return re.findall(r"Worker (\d+) ready", self.error_log())

    # -- talking to it ----------------------------------------------------------------------

    def get(self, address: Any, path: str = "/") -> str:
        kind, where = address
        if kind == "unix":
            conn: http.client.HTTPConnection = _UnixConnection(where)
        else:
            conn = http.client.HTTPConnection(*where, timeout=10)
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read().decode()
        conn.close()
        assert response.status == 200, (response.status, body, self.context())
        return body

    def stop(self) -> Optional[int]:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        return self.proc.returncode


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=10)
        self.path_ = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(10)
        self.sock.connect(self.path_)


# --- what is checked, per case


def check_wiki(d: Deployment) -> None:
    """Django wiki in a container: settings from the environment, gthread, 2 workers, access
    log to stdout, post_fork logging through server.log."""
    (address,) = d.wait_ready()
    assert address[0] == "tcp" and address[1][0] == "127.0.0.1"
    assert len(d.workers_ready()) == 2
    spawned = d.wait_log(r"Worker spawned \(pid: (\d+)\)", 2)
    assert sorted(spawned) == sorted(d.workers_ready())
    assert d.get(address, "/wiki/Main_Page").startswith("/wiki/Main_Page pid=")
    wait_for(lambda: "GET /wiki/Main_Page" in d.out(), "the access line on stdout",
             context=d.context)


def check_inventory(d: Deployment) -> None:
    """Inventory system: workers from an environment variable parsed in the config, a timeout
    given as a string, the app preloaded, and post_fork importing the project's tracing."""
    (address,) = d.wait_ready()
    assert len(d.workers_ready()) == 3
    assert "(app preloaded)" in d.error_log()
    traced = wait_for(lambda: len(d.marks("setup_tracing")) == 3 and d.marks("setup_tracing"),
                      "setup_tracing in each worker", context=d.context)
    assert {m["service"] for m in traced} == {"inventory"}
    assert sorted(str(m["pid"]) for m in traced) == sorted(d.workers_ready())
    assert "pid=" in d.get(address, "/api/part/")


def check_documents(d: Deployment) -> None:
    """Document manager: bind and workers from DOCS_* variables, preload, and the hooks of
    gunicorn's example (when_ready's line in the error log; worker_int's on a worker's QUIT)."""
    (address,) = d.wait_ready()
    assert address[1][0] == "127.0.0.1" and len(d.workers_ready()) == 2
    d.wait_log(r"Server is ready\. Spawning workers")
    assert "pid=" in d.get(address, "/api/documents/")
    os.kill(int(d.workers_ready()[0]), signal.SIGQUIT)  # worker_int, then the worker stops
    d.wait_log(r"worker received INT or QUIT signal")


def check_documents_asgi(d: Deployment) -> None:
    """The same document manager as shipped, on its uvicorn worker subclass and ASGI app:
    refused before anything starts, saying what to run instead."""
    assert d.proc.wait(START_TIMEOUT) == 2
    log = d.error_log()
    assert "worker_class 'mysite.workers.ConfigurableWorker' imports uvicorn" in log, log
    assert "sluicegate serves WSGI apps only" in log and "Listening at" not in log


def check_analytics(d: Deployment) -> None:
    """Product analytics: a start line with flags over a config file; on_starting prints a
    banner, when_ready sees the real address, post_worker_init(worker) runs in each worker
    (two arguments failed every worker's boot), worker_exit at the stop."""
    (address,) = d.wait_ready()
    assert len(d.workers_ready()) == 2
    assert "ANALYTICS" in d.out() and "Web server starting" in d.out()
    (ready,) = wait_for(lambda: d.marks("when_ready"), "when_ready", context=d.context)
    assert ready["workers"] == 2 and ready["address"] == [list(address[1])]
    inits = d.marks("post_worker_init")
    assert sorted(str(m["pid"]) for m in inits) == sorted(d.workers_ready())
    assert sorted(m["age"] for m in inits) == [1, 2]
    assert "pid=" in d.get(address, "/decide/")
    assert d.stop() == 0
    assert sorted(str(m["pid"]) for m in d.marks("worker_exit")) == sorted(d.workers_ready())


def check_elearning(d: Deployment) -> None:
    """E-learning platform: the app found through `pythonpath`, post_fork importing from it,
    pre_request logging each request through worker.log."""
    (address,) = d.wait_ready()
    assert len(d.workers_ready()) == 2
    closed = wait_for(lambda: len(d.marks("close_all_caches")) == 2 and
                      d.marks("close_all_caches"), "close_all_caches in each worker",
                      context=d.context)
    assert sorted(str(m["pid"]) for m in closed) == sorted(d.workers_ready())
    assert d.get(address, "/courses/").startswith("lms /courses/ pid=")
    d.wait_log(r"GET /courses/")


def check_artsite(d: Deployment) -> None:
    """Art site (Flask): an app factory called with an argument on the start line, 3 workers,
    access log on stdout, error log on stderr."""
    (address,) = d.wait_ready()
    assert len(d.workers_ready()) == 3
    assert "Starting gunicorn on 127.0.0.1:0" in d.out()
    assert d.get(address, "/gallery/42").startswith("gallery /gallery/42 pid=")
    wait_for(lambda: "GET /gallery/42" in d.out(), "the access line", context=d.context)


def check_socialreader(d: Deployment) -> None:
    """Social reader: error and access logs in files, a pid file, workers by CPU count."""
    (address,) = d.wait_ready()
    pid_file = d.dir / "run" / "gunicorn.pid"
    wait_for(pid_file.exists, "the pid file", context=d.context)
    master = int(pid_file.read_text().strip())
    assert f"[{master}]" in (d.dir / "logs" / "error.log").read_text()
    assert len(d.workers_ready()) == max(2, min(3, (os.cpu_count() or 1) // 2))
    assert "pid=" in d.get(address, "/reader/feeds")
    access = d.dir / "logs" / "access.log"
    wait_for(lambda: access.exists() and "GET /reader/feeds" in access.read_text(),
             "the access line in logs/access.log", context=d.context)
    assert d.stop() == 0
    assert not pid_file.exists()


def check_prometheus_exporter(d: Deployment) -> None:
    """Prometheus multiprocess setup: raw_env sets PROMETHEUS_MULTIPROC_DIR for the app,
    child_exit calls prometheus_client's mark_process_dead with the dead worker's pid."""
    (address,) = d.wait_ready()
    assert len(d.workers_ready()) == 2
    wait_for(lambda: d.marks("when_ready"), "when_ready", context=d.context)
    body = d.get(address, "/?PROMETHEUS_MULTIPROC_DIR")
    assert body.endswith("env=prometheus_tmp")
    victim = int(body.split("pid=")[1].split()[0])
    os.kill(victim, signal.SIGKILL)
    (dead,) = wait_for(lambda: d.marks("child_exit"), "child_exit", context=d.context)
    assert dead["pid"] == victim and dead["in"] != victim
    d.wait_log(r"Worker \d+ ready", 3)  # its replacement


def check_example_config(d: Deployment) -> None:
    """gunicorn's example config, copied as projects copy it: every hook of the example
    defined, raw_env, umask 0, the sync worker class; the hooks it has run, with its lines."""
    (address,) = d.wait_ready()
    assert len(d.workers_ready()) == 2
    spawned = d.wait_log(r"Worker spawned \(pid: (\d+)\)", 2)
    assert sorted(spawned) == sorted(d.workers_ready())
    d.wait_log(r"Server is ready\. Spawning workers")
    assert d.get(address, "/?EXAMPLE_FLAVOUR").endswith("env=sample")


def check_unix_socket(d: Deployment) -> None:
    """Behind nginx: a unix socket from the config, umask 007 (no access for others), 3
    workers, answered over the socket."""
    (address,) = d.wait_ready()
    assert address == ("unix", str(d.dir / "gunicorn.sock"))
    mode = stat.S_IMODE(os.stat(address[1]).st_mode)
    assert mode & 0o007 == 0, oct(mode)
    assert len(d.workers_ready()) == 3
    assert "pid=" in d.get(address, "/admin/login/")


def check_systemd_unit(d: Deployment) -> None:
    """A systemd unit's ExecStart: --chdir into the source tree, a pid file and an access log
    file (relative ones from there, as gunicorn's), -e for the app's environment."""
    (address,) = d.wait_ready()
    assert len(d.workers_ready()) == 2
    pid_file = d.dir / "src" / "run" / "app.pid"
    assert int(pid_file.read_text()) == _master_pid(d)
    assert d.get(address, "/status?MYSITE_LOG_LEVEL").endswith("env=warning")
    access = d.dir / "src" / "log" / "access.log"
    wait_for(lambda: access.exists() and "GET /status" in access.read_text(),
             "the access line in log/access.log", context=d.context)


def check_datadog(d: Deployment) -> None:
    """Datadog: 2 workers of 8 threads from the environment's defaults; the statsd settings
    and the gunicorn access-log format are read (UNCHECKED says what is not checked)."""
    (address,) = d.wait_ready()
    assert len(d.workers_ready()) == 2
    assert "threads 1:8" in d.error_log()
    assert "pid=" in d.get(address, "/cart")
    wait_for(lambda: "/cart" in d.out(), "an access line on stdout", context=d.context)


def check_logging_dict(d: Deployment) -> None:
    """A logconfig_dict with the project's own logger, workers and timeout imported from the
    project's settings (MYSITE_WORKERS=3 from the entrypoint); the server's lines go to its
    gunicorn.error handler, in the project's format (twice, as gunicorn writes them: once by
    gunicorn.error's handler, once by the root's, which it propagates to)."""
    address = d.wait_ready()[0]
    assert len(set(d.workers_ready())) == 3
    assert re.search(r"VERBOSE INFO gunicorn\.error \d+ Listening at: ", d.error_log()), \
        d.context()
    d.wait_log(r"VERBOSE INFO mysite \d+ worker \d+ forked by \d+", 3)
    assert "pid=" in d.get(address, "/")


def _master_pid(d: Deployment) -> int:
    m = re.search(r"Master (\d+) starting", d.error_log())
    assert m, d.context()
    return int(m.group(1))


#: Case -> (its check, the directory the project is copied into).
CHECKS: Dict[str, Callable[[Deployment], None]] = {
    "wiki": check_wiki,
    "inventory": check_inventory,
    "documents": check_documents,
    "documents_asgi": check_documents_asgi,
    "analytics": check_analytics,
    "elearning": check_elearning,
    "artsite": check_artsite,
    "socialreader": check_socialreader,
    "prometheus_exporter": check_prometheus_exporter,
    "example_config": check_example_config,
    "unix_socket": check_unix_socket,
    "systemd_unit": check_systemd_unit,
    "datadog": check_datadog,
    "logging_dict": check_logging_dict,
}

PROJECT_DIR = {"systemd_unit": "src"}

#: What the corpus's configurations set that these checks leave out: sluicegate reads each
#: (a warning, never a refusal), without gunicorn's effect.
UNCHECKED = {
    "inventory": "worker_tmp_dir",
    "documents": "worker_tmp_dir; the worker_abort hook (sluicegate never SIGABRTs a worker)",
    "analytics": "worker_tmp_dir",
    "elearning": "proc_name (the process title)",
    "example_config": "access_log_format in gunicorn's %(h)s atoms; worker_connections; "
                      "the worker_abort hook (sluicegate never SIGABRTs a worker)",
    "datadog": "the metrics statsd_host, statsd_prefix and dogstatsd_tags send (no statsd "
               "agent here: tests/test_statsd.py sends them to one); access_log_format's "
               "atoms (tests/test_gunicorn_access_log.py compares them with gunicorn's)",
}


def test_the_corpus_has_every_case():
    cases = sorted(p.name for p in (CORPUS / "cases").iterdir() if p.is_dir())
    assert cases == sorted(CHECKS) and len(cases) >= 12
    assert set(UNCHECKED) <= set(CHECKS)
    readme = (CORPUS / "README.md").read_text()
    assert all(f"| `{name}` |" in readme for name in cases), "README.md lists every case"


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_a_gunicorn_deployment_starts_under_sluicegate(tmp_path, name):
    deployment = Deployment(name, tmp_path / name, PROJECT_DIR.get(name, ""))
    try:
        CHECKS[name](deployment)
    finally:
        status = deployment.stop()
    if name != "documents_asgi":
        assert status == 0, deployment.context()
        assert "Traceback" not in deployment.error_log(), deployment.context()
