"""gunicorn's hooks as gunicorn calls them, run by real servers from gunicorn.conf.py files:
the objects they receive (`server`, `worker`), their signatures (`post_worker_init(worker)`; a
wrong one refused at start and by --check-config), `sys.path` as gunicorn builds it for them
(the console script and `python -m`), `--pythonpath`, `sys.exit()` in a master hook, `raw_env`
applied again on HUP, and ASGI apps and worker classes refused with what to run instead.

Each hook here writes one JSON line to the file $SGTEST_HOOKS_FILE; the tests read them.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List

import pytest

from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parent.parent
PYTHON = os.environ.get("SLUICEGATE_TEST_PYTHON", str(ROOT / ".venv" / "bin" / "python"))
CONSOLE_SCRIPT = str(Path(PYTHON).parent / "sluicegate")

RECORD = """
    import json, os

    def _record(name, **fields):
        with open(os.environ["SGTEST_HOOKS_FILE"], "a") as f:
            f.write(json.dumps({"hook": name, "in": os.getpid(), **fields}) + "\\n")
"""


def records(path: Path) -> List[Dict[str, Any]]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines()]
    except FileNotFoundError:
        return []


def named(path: Path, hook: str) -> List[Dict[str, Any]]:
    return [r for r in records(path) if r["hook"] == hook]


def wait_named(path: Path, hook: str, count: int = 1) -> List[Dict[str, Any]]:
    return wait_for(lambda: named(path, hook) if len(named(path, hook)) >= count else None,
                    f"{count} {hook} record(s)", context=lambda: repr(records(path)))


def write_conf(directory: Path, body: str, name: str = "gunicorn.conf.py") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(RECORD) + textwrap.dedent(body))
    return path


def start_conf(start_server, conf: Path, app: str, *options: str, env: Dict[str, str],
               wait_ready: bool = True):
    """A server from the gunicorn.conf.py `conf` (which binds one address), as a deployment
    starts it: `sluicegate -c FILE [OPTIONS] APP`."""
    return start_server(None, command=[PYTHON, "-m", "sluicegate", "-c", str(conf), *options,
                                       app], env=env, wait_ready=wait_ready)


def get(server, path: str = "/") -> bytes:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    assert response.status == 200, (response.status, body)
    return body


def run(*args: str, cwd: Path, command: str = "", env: Dict[str, str] = {}
        ) -> subprocess.CompletedProcess:
    """The command (`python -m sluicegate` unless `command`) run to its end, without
    PYTHONPATH: what is importable is what sys.path is made of."""
    penv = {k: v for k, v in os.environ.items()
            if not k.startswith("SLUICEGATE_") and k != "PYTHONPATH"}
    penv.update(env)
    cmd = [command] if command else [PYTHON, "-m", "sluicegate"]
    return subprocess.run(cmd + list(args), cwd=str(cwd), env=penv, capture_output=True,
                          text=True, timeout=60)


# --- the objects hooks receive

OBJECTS_CONF = """
    bind = "127.0.0.1:0"
    workers = 2
    loglevel = "info"
    accesslog = "-"
    proc_name = None

    def on_starting(server):
        server.log.info("on_starting says hello from %s", server.pid)
        _record("on_starting", pid=server.pid, address=server.address, bind=server.cfg.bind,
                workers=server.cfg.workers, num_workers=server.num_workers,
                accesslog=server.cfg.accesslog, loglevel=server.cfg.loglevel,
                proc_name=server.proc_name, worker_connections=server.cfg.worker_connections)

    def post_fork(server, worker):
        worker.log.info("worker spawned (pid: %s)", worker.pid)
        worker.tmp.notify()
        _record("post_fork", server_pid=server.pid, pid=worker.pid, ppid=worker.ppid,
                age=worker.age, alive=worker.alive, booted=worker.booted,
                tmp=worker.tmp.fileno() > 2, timeout=worker.cfg.timeout,
                listeners=[str(x) for x in server.LISTENERS])

    def post_worker_init(worker):
        _record("post_worker_init", pid=worker.pid, ppid=worker.ppid, age=worker.age,
                booted=worker.booted, wsgi=callable(worker.wsgi))

    def when_ready(server):
        _record("when_ready", pid=server.pid, address=server.address,
                workers=sorted(server.WORKERS), ages=sorted(w.age for w in server.WORKERS.values()),
                listeners=[str(x) for x in server.LISTENERS])

    def child_exit(server, worker):
        _record("child_exit", pid=worker.pid, server_pid=server.pid)

    def worker_exit(server, worker):
        _record("worker_exit", pid=worker.pid, alive=worker.alive)
"""


def test_hooks_get_gunicorns_server_and_worker(start_server, tmp_path):
    """What real gunicorn.conf.py hooks read (server.address, server.cfg.*, server.log,
    server.WORKERS, worker.pid/ppid/age/alive/tmp/log/cfg) is there, with gunicorn's types;
    post_worker_init gets the worker alone (two arguments failed every worker's boot)."""
    conf = write_conf(tmp_path, OBJECTS_CONF)
    out = tmp_path / "hooks"
    server = start_conf(start_server, conf, "tests.apps.workers:app",
                        env={"SGTEST_HOOKS_FILE": str(out)})
    (ready,) = wait_named(out, "when_ready")
    master = server.pid
    (starting,) = named(out, "on_starting")
    assert starting["pid"] == master and starting["in"] == master
    assert starting["bind"] == ["127.0.0.1:0"] and starting["address"] == [["127.0.0.1", 0]]
    assert starting["workers"] == 2 and starting["num_workers"] == 2
    assert starting["accesslog"] == "-" and starting["loglevel"] == "info"
    assert starting["proc_name"] == "tests.apps.workers:app"
    assert starting["worker_connections"] == 1000
    assert f"on_starting says hello from {master}" in server.log_text()
    forks = named(out, "post_fork")
    assert len(forks) == 2, records(out)
    for f in forks:
        assert f["in"] == f["pid"] != master and f["ppid"] == f["server_pid"] == master
        assert f["alive"] is True and f["booted"] is False and f["tmp"] is True
        assert f["timeout"] == 0 and f["listeners"] == [f"http://127.0.0.1:{server.port}"]
        assert f"worker spawned (pid: {f['pid']})" in server.log_text()
    assert sorted(f["age"] for f in forks) == [1, 2]
    inits = named(out, "post_worker_init")
    assert sorted(i["pid"] for i in inits) == sorted(f["pid"] for f in forks), records(out)
    assert all(i["in"] == i["pid"] and i["ppid"] == master and i["booted"] and i["wsgi"]
               for i in inits)
    assert ready["workers"] == sorted(f["pid"] for f in forks) and ready["ages"] == [1, 2]
    assert ready["address"] == [["127.0.0.1", server.port]]
    assert ready["listeners"] == [f"http://127.0.0.1:{server.port}"]
    assert int(get(server, "/pid")) in ready["workers"]
    assert server.stop() == 0
    exits = named(out, "worker_exit")
    assert sorted(e["pid"] for e in exits) == ready["workers"]
    assert all(e["alive"] is False for e in exits)
    assert sorted(c["pid"] for c in named(out, "child_exit")) == ready["workers"]


def test_single_server_post_worker_init_takes_the_worker(start_server, tmp_path):
    conf = write_conf(tmp_path, """
        def post_worker_init(worker):
            _record("post_worker_init", pid=worker.pid, age=worker.age, wsgi=callable(worker.wsgi))
    """)
    out = tmp_path / "hooks"
    server = start_server("hello", "-c", str(conf), env={"SGTEST_HOOKS_FILE": str(out)})
    (init,) = wait_named(out, "post_worker_init")
    assert init["pid"] == init["in"] == server.pid and init["age"] == 1 and init["wsgi"]


WRONG_ARITY = """
    def post_worker_init(server, worker):
        pass
"""


def test_a_hook_with_gunicorns_wrong_signature_is_refused(tmp_path):
    """gunicorn refuses a hook it cannot call ("Value must have an arity of: 1"); so does
    --check-config, where it used to say `configuration OK`, and so does a start."""
    (tmp_path / "app.py").write_text("def app(environ, start_response):\n    return []\n")
    conf = write_conf(tmp_path, WRONG_ARITY)
    for extra in (["--check-config"], ["-b", "127.0.0.1:0"]):
        result = run("-c", str(conf), *extra, "app:app", cwd=tmp_path)
        assert result.returncode == 2, (result.stdout, result.stderr)
        assert "configuration OK" not in result.stdout
        assert "hook post_worker_init(server, worker) (gunicorn.conf.py, line" in result.stderr
        assert "cannot be called as gunicorn calls it: post_worker_init(worker)" in result.stderr


def test_a_hooks_module_with_a_wrong_signature_fails_check_config(tmp_path):
    (tmp_path / "app.py").write_text("def app(environ, start_response):\n    return []\n")
    (tmp_path / "myhooks.py").write_text(textwrap.dedent(WRONG_ARITY))
    result = run("--check-config", "--hooks", "myhooks", "app:app", cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "--hooks myhooks: hook post_worker_init(server, worker)" in result.stderr


# --- sys.path as gunicorn builds it

PROJECT_CONF = """
    import sys
    from myproject.settings import WORKERS   # the config file imports the project

    bind = "127.0.0.1:0"
    workers = WORKERS

    def on_starting(server):
        from myproject import hooks_support
        _record("on_starting", path0=sys.path[0], note=hooks_support.NOTE)

    def post_fork(server, worker):
        from myproject.hooks_support import NOTE   # gunicorn users do this (tracing, db)
        _record("post_fork", note=NOTE)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    pkg = tmp_path / "myproject"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "settings.py").write_text("WORKERS = 2\n")
    (pkg / "hooks_support.py").write_text("NOTE = 'from the project'\n")
    (pkg / "wsgi.py").write_text(textwrap.dedent("""
        def application(environ, start_response):
            start_response("200 OK", [("Content-Length", "7")])
            return [b"project"]
    """))
    write_conf(tmp_path, PROJECT_CONF)
    return tmp_path


@pytest.mark.parametrize("how", ["console script", "python -m"])
def test_hooks_import_the_project_from_the_working_directory(start_server, project, how):
    """The console script has the virtualenv's bin/ at sys.path[0], not the working directory:
    a post_fork hook importing the project failed every worker's boot there (exit 3)."""
    out = project / "hooks"
    command = [CONSOLE_SCRIPT] if how == "console script" else [PYTHON, "-m", "sluicegate"]
    server = start_server(None, command=[*command, "-c", "gunicorn.conf.py", "myproject.wsgi"],
                          cwd=project, env={"SGTEST_HOOKS_FILE": str(out), "PYTHONPATH": ""})
    assert len(wait_named(out, "post_fork", 2)) == 2
    (starting,) = named(out, "on_starting")
    assert starting["path0"] == str(project) and starting["note"] == "from the project"
    assert all(r["note"] == "from the project" for r in named(out, "post_fork"))
    assert get(server) == b"project"


def test_pythonpath_puts_directories_first(start_server, tmp_path):
    """--pythonpath (comma-separated, relative to the working directory): an app and hooks
    outside the working directory are found, the last directory given first, as gunicorn."""
    lib, extra, here = tmp_path / "lib", tmp_path / "extra", tmp_path / "here"
    for d in (lib, extra, here):
        d.mkdir()
    (lib / "outside.py").write_text(textwrap.dedent("""
        def app(environ, start_response):
            start_response("200 OK", [("Content-Length", "7")])
            return [b"outside"]
    """))
    (extra / "helper.py").write_text("NOTE = 'helper'\n")
    conf = write_conf(here, """
        import sys

        def on_starting(server):
            import helper
            _record("on_starting", path=sys.path[:3], note=helper.NOTE)
    """)
    out = tmp_path / "hooks"
    server = start_server(None, command=[CONSOLE_SCRIPT, "-b", "127.0.0.1:0", "-c", str(conf),
                                         "--pythonpath", "../lib,../extra", "outside:app"],
                          cwd=here, env={"SGTEST_HOOKS_FILE": str(out), "PYTHONPATH": ""})
    assert get(server) == b"outside"
    (starting,) = named(out, "on_starting")
    assert starting["path"] == [str(extra), str(lib), str(here)], starting
    assert starting["note"] == "helper"


def test_pythonpath_in_a_gunicorn_conf(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "outside.py").write_text("def app(environ, start_response):\n    return []\n")
    conf = write_conf(tmp_path, f"pythonpath = {str(lib)!r}\n")
    result = run("-c", str(conf), "--check-config", "outside:app", cwd=tmp_path,
                 command=CONSOLE_SCRIPT)
    assert result.returncode == 0, result.stderr
    assert "configuration OK" in result.stdout
    assert "pythonpath ignored" not in result.stderr


# --- sys.exit() in the master's hooks

EXITING_CONF = """
    import os, sys

    bind = "127.0.0.1:0"

    def _maybe_exit(name):
        _record(name)
        if os.environ.get("SGTEST_EXIT_IN") == name:
            sys.exit(5)

    def on_starting(server):
        _maybe_exit("on_starting")

    def when_ready(server):
        _maybe_exit("when_ready")

    def on_reload(server):
        _maybe_exit("on_reload")

    def child_exit(server, worker):
        _maybe_exit("child_exit")
"""


@pytest.mark.parametrize("hook", ["on_starting", "when_ready", "on_reload", "child_exit"])
def test_sys_exit_in_a_master_hook_stops_with_its_status(start_server, tmp_path, hook):
    """gunicorn's master calls these with nothing that catches SystemExit: the master ends
    with the status given. sluicegate says so on one line naming the hook, stops its workers
    and exits with that status."""
    conf = write_conf(tmp_path, EXITING_CONF)
    out = tmp_path / "hooks"
    server = start_conf(start_server, conf, "tests.apps.workers:app", "-w", "1",
                        wait_ready=hook in ("on_reload", "child_exit"),
                        env={"SGTEST_HOOKS_FILE": str(out), "SGTEST_EXIT_IN": hook})
    if hook == "on_reload":
        wait_named(out, "when_ready")
        server.signal(signal.SIGHUP)
    elif hook == "child_exit":
        wait_named(out, "when_ready")
        os.kill(int(get(server, "/pid")), signal.SIGKILL)
    assert server.wait_exit() == 5
    log = server.log_text()
    assert f"Hook {hook}() called sys.exit(5): the server stops with status 5" in log, log
    if hook == "on_starting":
        assert "Listening at:" not in log


def test_sys_exit_in_when_ready_of_a_single_server(start_server, tmp_path):
    conf = write_conf(tmp_path, EXITING_CONF)
    out = tmp_path / "hooks"
    server = start_conf(start_server, conf, "tests.apps.hello:app", wait_ready=False,
                        env={"SGTEST_HOOKS_FILE": str(out), "SGTEST_EXIT_IN": "when_ready"})
    assert server.wait_exit() == 5
    assert "Hook when_ready() called sys.exit(5)" in server.log_text()


# --- raw_env on HUP


def test_a_changed_raw_env_reaches_the_new_workers_on_hup(start_server, tmp_path):
    """gunicorn sets raw_env again on a reload (and unsets what is gone); the new workers
    see the new values."""
    flavour = tmp_path / "flavour"
    flavour.write_text("vanilla")
    conf = tmp_path / "gunicorn.conf.py"
    conf.write_text(textwrap.dedent(f"""
        bind = "127.0.0.1:0"
        workers = 1
        _flavour = open({str(flavour)!r}).read().strip()
        raw_env = ["SGTEST_FLAVOUR=" + _flavour]
        if _flavour == "vanilla":
            raw_env.append("SGTEST_GONE=soon")
    """))
    server = start_conf(start_server, conf, "tests.apps.os_env:app", env={})
    assert json.loads(get(server, "/?SGTEST_FLAVOUR&SGTEST_GONE")) == \
        {"SGTEST_FLAVOUR": "vanilla", "SGTEST_GONE": "soon"}
    flavour.write_text("chocolate")
    mark = server.log_mark()
    server.signal(signal.SIGHUP)
    server.wait_log(r"Worker \d+ stopped", since=mark)  # the old one: only the new serves
    assert "changed: env" in server.log_since(mark)
    assert json.loads(get(server, "/?SGTEST_FLAVOUR&SGTEST_GONE")) == \
        {"SGTEST_FLAVOUR": "chocolate", "SGTEST_GONE": None}


# --- ASGI refused

ASGI_APPS = """
    async def app(scope, receive, send):
        pass

    class Handler:
        async def __call__(self, scope, receive, send):
            pass

    application = Handler()
"""


@pytest.mark.parametrize("spec", ["asgi_app:app", "myproject.asgi:application"])
@pytest.mark.parametrize("flags", [["--check-config"], ["-b", "127.0.0.1:0"],
                                   ["-w", "2", "-b", "127.0.0.1:0"]],
                         ids=["check-config", "single", "workers"])
def test_an_asgi_app_is_refused(tmp_path, spec, flags):
    """At start (a worker's boot fails: exit 3) and by --check-config, where it passed and
    every request then got a 500."""
    (tmp_path / "asgi_app.py").write_text(textwrap.dedent(ASGI_APPS))
    (tmp_path / "myproject").mkdir()
    (tmp_path / "myproject" / "__init__.py").write_text("")
    (tmp_path / "myproject" / "asgi.py").write_text(textwrap.dedent(ASGI_APPS))
    result = run(*flags, spec, cwd=tmp_path)
    assert result.returncode != 0, (result.stdout, result.stderr)
    assert "configuration OK" not in result.stdout
    assert f"{spec!r} is an ASGI app" in result.stderr, result.stderr
    assert "sluicegate serves WSGI apps only" in result.stderr
    if spec.startswith("myproject"):
        assert "myproject.wsgi:application" in result.stderr


WORKERS_MODULE = """
    from {base_module} import {base}

    class ConfigurableWorker({base}):
        CONFIG_KWARGS = {{"proxy_headers": True}}
"""


@pytest.mark.parametrize("where", ["command line", "gunicorn.conf.py"])
@pytest.mark.parametrize("worker_class", [
    "uvicorn.workers.UvicornWorker", "asgi", "myproject.workers.ConfigurableWorker",
    "myproject.gworkers.ConfigurableWorker"])
def test_an_asgi_worker_class_is_refused(tmp_path, where, worker_class):
    """uvicorn's worker, gunicorn's own asgi worker, and a project's subclass of either (one
    whose module imports uvicorn, not installed here; one importing gunicorn's ASGIWorker)."""
    (tmp_path / "app.py").write_text("def app(environ, start_response):\n    return []\n")
    pkg = tmp_path / "myproject"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "workers.py").write_text(textwrap.dedent(WORKERS_MODULE.format(
        base_module="uvicorn.workers", base="UvicornWorker")))
    (pkg / "gworkers.py").write_text(textwrap.dedent(WORKERS_MODULE.format(
        base_module="gunicorn.workers.gasgi", base="ASGIWorker")))
    if where == "command line":
        args = ["-k", worker_class]
    else:
        args = ["-c", str(write_conf(tmp_path, f"worker_class = {worker_class!r}\n"))]
    for check in (True, False):
        flags = ["--check-config"] if check else ["-b", "127.0.0.1:0"]
        result = run(*args, *flags, "app:app", cwd=tmp_path, command=CONSOLE_SCRIPT)
        assert result.returncode == 2, (result.stdout, result.stderr)
        assert f"worker_class {worker_class!r}" in result.stderr, result.stderr
        assert "ASGI" in result.stderr and "sluicegate serves WSGI apps only" in result.stderr
        assert "uvicorn APP" in result.stderr


# --- the other hooks of a gunicorn master and worker

LIFECYCLE_CONF = """
    import sys

    bind = "127.0.0.1:0"
    workers = 2

    def pre_fork(server, worker):
        _record("pre_fork", pid=worker.pid, age=worker.age, server_pid=server.pid)

    def post_fork(server, worker):
        _record("post_fork", pid=worker.pid, age=worker.age)

    def nworkers_changed(server, new_value, old_value):
        _record("nworkers_changed", new=new_value, old=old_value)

    def worker_int(worker):
        _record("worker_int", pid=worker.pid)
        worker.log.info("worker received INT or QUIT signal")

    def pre_exec(server):
        _record("pre_exec", pid=server.pid)
        sys.exit(0)
"""


def test_pre_fork_nworkers_changed_worker_int_and_pre_exec(start_server, tmp_path):
    """pre_fork in the master before each fork (the worker not booted yet), nworkers_changed at
    the start and on TTIN, worker_int in a worker sent INT, pre_exec on USR2 (whose sys.exit()
    means no new master: this one serves on)."""
    conf = write_conf(tmp_path, LIFECYCLE_CONF)
    out = tmp_path / "hooks"
    server = start_conf(start_server, conf, "tests.apps.workers:app",
                        env={"SGTEST_HOOKS_FILE": str(out)})
    forks = wait_named(out, "post_fork", 2)
    master = server.pid
    before = named(out, "pre_fork")
    assert len(before) == 2 and all(p["in"] == p["server_pid"] == master for p in before)
    assert all(p["pid"] == "[booting]" for p in before)
    assert sorted(p["age"] for p in before) == sorted(f["age"] for f in forks) == [1, 2]
    assert [(c["new"], c["old"], c["in"]) for c in named(out, "nworkers_changed")] == \
        [(2, None, master)]
    server.signal(signal.SIGTTIN)
    changed = wait_named(out, "nworkers_changed", 2)
    assert (changed[1]["new"], changed[1]["old"]) == (3, 2)
    assert wait_named(out, "post_fork", 3)[2]["age"] == 3
    victim = forks[0]["pid"]
    os.kill(victim, signal.SIGINT)
    (interrupted,) = wait_named(out, "worker_int")
    assert interrupted["pid"] == interrupted["in"] == victim
    server.wait_log(r"worker received INT or QUIT signal")
    # Its replacement takes its slot (1) but gunicorn's next age: workers started so far.
    assert wait_named(out, "post_fork", 4)[3]["age"] == 4
    server.signal(signal.SIGUSR2)
    (exec_,) = wait_named(out, "pre_exec")
    assert exec_["in"] == master
    server.wait_log(r"Received SIGUSR2: no new master \(pre_exec called sys.exit\(\)\)")
    assert get(server, "/pid")
    assert server.stop() == 0


def test_hooks_import_the_project_from_chdir(start_server, project):
    """--chdir DIR: DIR goes first on sys.path before the hooks run (gunicorn's chdir())."""
    out = project / "hooks"
    (project / "gunicorn.conf.py").write_text(textwrap.dedent(RECORD) + textwrap.dedent("""
        bind = "127.0.0.1:0"
        workers = 1

        def post_fork(server, worker):
            from myproject.hooks_support import NOTE
            _record("post_fork", note=NOTE)
    """))
    server = start_server(None, command=[CONSOLE_SCRIPT, "-c",
                                         f"{project.name}/gunicorn.conf.py",
                                         "--chdir", project.name, "myproject.wsgi"],
                          cwd=project.parent, env={"SGTEST_HOOKS_FILE": str(out),
                                                   "PYTHONPATH": ""})
    (fork,) = wait_named(out, "post_fork")
    assert fork["note"] == "from the project"
    assert get(server) == b"project"


def test_sys_exit_in_post_fork_ends_the_worker_with_its_status(start_server, tmp_path):
    """gunicorn's worker exits with the status post_fork gave; a worker that exits before it
    is ready fails its boot, and among the first workers that stops the server (status 3)."""
    conf = write_conf(tmp_path, """
        import sys

        bind = "127.0.0.1:0"
        workers = 1

        def post_fork(server, worker):
            sys.exit(4)
    """)
    server = start_conf(start_server, conf, "tests.apps.workers:app", env={},
                        wait_ready=False)
    assert server.wait_exit() == 3
    log = server.log_text()
    assert "Hook post_fork() called sys.exit(4)" in log and "Traceback" not in log, log
    assert re.search(r"Worker \d+ failed to boot \(exit status 4\)", log), log


def test_worker_int_in_a_single_server(start_server, tmp_path):
    conf = write_conf(tmp_path, """
        bind = "127.0.0.1:0"

        def worker_int(worker):
            _record("worker_int", pid=worker.pid)
    """)
    out = tmp_path / "hooks"
    server = start_conf(start_server, conf, "tests.apps.hello:app",
                        env={"SGTEST_HOOKS_FILE": str(out)})
    server.signal(signal.SIGINT)
    assert server.wait_exit() == 0
    assert [(r["pid"], r["in"]) for r in named(out, "worker_int")] == [(server.pid, server.pid)]
