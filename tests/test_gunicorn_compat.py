"""Switching from gunicorn by changing the program's name: gunicorn's flags, its `MODULE` app
form, its `:PORT` binds and its Python configuration file, run through the real `sluicegate`
command (a subprocess), and served over real sockets where the form decides what is served.

Each newcomer command that failed or blamed the wrong thing has its own test: it now works, or
is refused with one line naming the real cause.
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Optional

import pytest

from tests.helpers import wait_for, wait_in_file

ROOT = Path(__file__).resolve().parent.parent
PYTHON_DIR = ROOT / "python"
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))
PYTHON = os.environ.get("SLUICEGATE_TEST_PYTHON", str(ROOT / ".venv" / "bin" / "python"))
TIMEOUT = 20.0

# A Django-shaped project: the WSGI callable is `application` in mysite/wsgi.py.
MYSITE_WSGI = """
    def application(environ, start_response):
        body = b"mysite says hi"
        start_response("200 OK", [("Content-Type", "text/plain"),
                                  ("Content-Length", str(len(body)))])
        return [body]
"""

# Three gunicorn.conf.py files shaped like real ones.
DJANGO_CONF = """
    # gunicorn.conf.py of a Django project, as its docs and blog posts write it
    import multiprocessing

    wsgi_app = "mysite.wsgi:application"
    bind = "127.0.0.1:0"
    workers = multiprocessing.cpu_count() * 2 + 1
    timeout = 120
    graceful_timeout = 20
    accesslog = "-"
    errorlog = "-"
    loglevel = "warning"
    max_requests = 1000
    max_requests_jitter = 50

    def post_fork(server, worker):
        server.log.info("Worker spawned (pid: %s)", worker.pid)

    def when_ready(server):
        pass
"""

CONTAINER_CONF = """
    # gunicorn.conf.py of a Flask app in a container
    import os

    bind = [os.environ.get("SGTEST_BIND", "0.0.0.0:8080")]
    worker_class = "gthread"
    threads = int(os.environ.get("SGTEST_THREADS", "8"))
    workers = 2
    keepalive = 5
    forwarded_allow_ips = "*"
    proxy_protocol = False
    worker_tmp_dir = "/dev/shm"
    limit_request_line = 8190
    limit_request_fields = 50
"""

OPS_CONF = """
    # gunicorn.conf.py of an operations team
    proc_name = "billing"
    pidfile = "/tmp/sgtest-billing.pid"
    umask = 0o007
    preload_app = True
    daemon = False
    worker_class = "sync"
    worker_connections = 1000
    raw_env = ["DJANGO_SETTINGS_MODULE=billing.settings"]
    access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s'
    reload = True
    reload_extra_files = ["templates/"]
    _private_helper = 3
    some_constant = "not a gunicorn setting"

    def on_starting(server):
        pass

    def pre_request(worker, req):
        pass

    def worker_abort(worker):
        pass
"""


def _env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICEGATE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), os.environ.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def run_cli(*args: str, cwd: Path, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sluicegate", *args], cwd=str(cwd), env=_env(env),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT,
    )


def one_line_error(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got:\n{result.stderr}"
    assert lines[0].startswith("sluicegate: error: "), lines[0]
    assert result.returncode == 2, result.returncode
    return lines[0]


def printed(result: subprocess.CompletedProcess) -> Dict[str, str]:
    """--print-config's lines as {option: 'value  # source'}."""
    assert result.returncode == 0, result.stderr
    out = {}
    for line in result.stdout.splitlines():
        m = re.match(r"(\w+) = (.*)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "mysite").mkdir()
    (tmp_path / "mysite" / "__init__.py").write_text("")
    (tmp_path / "mysite" / "wsgi.py").write_text(textwrap.dedent(MYSITE_WSGI).lstrip())
    for name, text in (("django.conf.py", DJANGO_CONF), ("container.conf.py", CONTAINER_CONF),
                       ("ops.conf.py", OPS_CONF)):
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip())
    return tmp_path


# --- gunicorn's flags


def test_gunicorn_flags_set_the_same_options(project):
    result = run_cli("-w", "3", "-t", "20", "--keep-alive", "5", "--access-logfile", "-",
                     "--graceful-timeout", "7", "--max-requests", "100", "--max-requests-jitter",
                     "10", "--log-level", "debug", "-b", "127.0.0.1:9000", "-p", "app.pid",
                     "--limit-request-fields", "50", "--print-config", "mysite.wsgi", cwd=project)
    values = printed(result)
    expected = {
        "workers": '"3"  # --workers', "timeout": '"20"  # --timeout',
        "keepalive_timeout": '"5"  # --keepalive-timeout', "access_log": '"-"  # --access-log',
        "graceful_timeout": '"7"  # --graceful-timeout',
        "max_requests": '"100"  # --max-requests',
        "max_requests_jitter": '"10"  # --max-requests-jitter',
        "log_level": '"debug"  # --log-level', "bind": '["127.0.0.1:9000"]  # --bind',
        "pid": '"app.pid"  # --pid', "limit_headers": '"50"  # --limit-headers',
        "app": '"mysite.wsgi"  # MODULE:APP',
    }
    assert {k: values[k] for k in expected} == expected


def test_help_shows_the_gunicorn_spellings(project):
    text = run_cli("--help", cwd=project).stdout
    for flag in ("-w N, --workers N", "-c FILE, --config FILE", "--keep-alive", "--access-logfile",
                 "-t SECONDS, --timeout SECONDS"):
        assert flag in text, flag


@pytest.mark.parametrize("args, expected", [
    (["--acess-logfile", "-"], "unknown option --acess-logfile (did you mean --access-logfile?)"),
    (["--worker", "2"], "unknown option --worker (did you mean --workers?)"),
    (["--keepalive=5"], "unknown option --keepalive (did you mean --keep-alive?)"),
    (["--daemon"], "--daemon: sluicegate does not daemonize: run it under systemd"),
    (["--ciphers", "HIGH"], "--ciphers 'HIGH': TLS is rustls in the Rust core"),
    (["--bogus"], "unknown option --bogus (see sluicegate --help)"),
    (["-x", "2"], "unknown option -x"),
    (["--bind", "8000"], "--bind '8000': a port alone is not an address: did you mean "
                         "127.0.0.1:8000 (this machine only) or :8000 (every interface)?"),
    (["--timeout", "-1"], "--timeout '-1': must be a number of seconds >= 0 (0: off)"),
    (["-t", "-1"], "--timeout '-1': must be a number of seconds >= 0 (0: off)"),
    (["-w", "many"], "--workers 'many': expected N or auto"),
])
def test_refused_with_the_real_cause(project, args, expected):
    line = one_line_error(run_cli(*args, "mysite.wsgi", cwd=project))
    assert expected in line, line
    assert "mysite" not in line, "the error must not blame the app path"


def test_worker_class_sync_and_gthread_are_what_sluicegate_does(project):
    for name in ("sync", "gthread"):
        assert printed(run_cli("-k", name, "--print-config", "mysite.wsgi", cwd=project))[
            "worker_class"] == f'"{name}"  # --worker-class'
    line = one_line_error(run_cli("-k", "gevent", "mysite.wsgi", cwd=project))
    assert line.startswith("sluicegate: error: --worker-class 'gevent': sluicegate has only its "
                           "own workers")
    # The same answer from a gunicorn.conf.py (it used to be a warning there).
    (project / "gevent.conf.py").write_text("worker_class = 'gevent'\n")
    line = one_line_error(run_cli("-c", "gevent.conf.py", "mysite.wsgi", cwd=project))
    assert line.startswith("sluicegate: error: gevent.conf.py, line 1: worker_class 'gevent': "
                           "sluicegate has only its own workers")


def test_env_is_set_before_the_app_is_imported(project):
    (project / "needsenv.py").write_text(
        "import os\n"
        "assert os.environ['SG_GREETING'] == 'a=b', os.environ.get('SG_GREETING')\n"
        "assert os.environ['SG_OTHER'] == ''\n"
        "def application(environ, start_response):\n"
        "    start_response('200 OK', [])\n"
        "    return [b'']\n"
    )
    result = run_cli("-e", "SG_GREETING=a=b", "--env", "SG_OTHER=", "--check-config", "needsenv",
                     cwd=project)
    assert result.returncode == 0, result.stderr
    line = one_line_error(run_cli("-e", "NOEQUALS", "needsenv", cwd=project))
    assert "--env 'NOEQUALS': expected KEY=VALUE" in line


def test_a_second_app_path_is_named(project):
    line = one_line_error(run_cli("mysite.wsgi", "other:app", cwd=project))
    assert "unexpected argument 'other:app'" in line


def test_module_alone_without_application_says_what_it_meant(project):
    (project / "plain.py").write_text("app = None\n")
    result = run_cli("--check-config", "plain", cwd=project)
    assert result.returncode == 2
    assert ("module 'plain' has no attribute 'application' (app path 'plain' means "
            "'plain:application'; name the app: plain:APP)") in result.stderr


def test_check_config_takes_module_alone(project):
    result = run_cli("--check-config", "mysite.wsgi", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "configuration OK" in result.stdout


# --- gunicorn.conf.py


def test_django_shaped_conf(project):
    result = run_cli("-c", "django.conf.py", "--print-config", cwd=project)
    values = printed(result)
    assert values["app"] == '"mysite.wsgi:application"  # django.conf.py, line 4: wsgi_app'
    assert values["bind"] == '["127.0.0.1:0"]  # django.conf.py, line 5: bind'
    assert values["workers"] == f"{os.cpu_count() * 2 + 1}  # django.conf.py, line 6: workers"
    assert values["timeout"].startswith("120  #")
    assert values["graceful_timeout"].startswith("20  #")
    assert values["access_log"].startswith('"-"  #')
    assert values["log_level"].startswith('"warning"  #')
    assert values["max_requests"].startswith("1000  #")
    assert values["max_requests_jitter"].startswith("50  #")
    assert "# hooks: the functions post_fork, when_ready  # django.conf.py: hooks" \
        in result.stdout.splitlines(), result.stdout
    assert result.stderr.splitlines() == [], result.stderr  # its hooks run: nothing to warn of


def test_container_shaped_conf(project):
    result = run_cli("--config", "container.conf.py", "--print-config", "mysite.wsgi", cwd=project,
                     env={"SGTEST_BIND": ":8001", "SGTEST_THREADS": "16"})
    values = printed(result)
    assert values["bind"].startswith('[":8001"]  # container.conf.py, line 4: bind')
    assert values["threads"].startswith("16  #")
    assert values["workers"].startswith("2  #")
    assert values["keepalive_timeout"].startswith("5  #")
    assert values["forwarded_allow_ips"].startswith('"*"  #')
    assert values["limit_request_line"].startswith("8190  #")
    assert values["limit_headers"].startswith("50  #")
    assert values["worker_class"].startswith('"gthread"  # container.conf.py, line 5')
    assert "worker_tmp_dir ignored: where gunicorn's workers keep their heartbeat" \
        in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_ops_shaped_conf_names_every_ignored_setting(project):
    result = run_cli("-c", "ops.conf.py", "--print-config", "mysite.wsgi", cwd=project)
    values = printed(result)
    assert values["pid"].startswith('"/tmp/sgtest-billing.pid"  #')
    assert values["umask"].startswith("7  #")
    assert values["preload"].startswith("true  #")
    assert values["reload"].startswith("true  #")
    assert values["reload_extra"].startswith('["templates/"]  #')
    lines = result.stderr.splitlines()
    assert values["env"].startswith('["DJANGO_SETTINGS_MODULE=billing.settings"]  #')
    assert values["proc_name"].startswith('"billing"  # ops.conf.py, line 2: proc_name')
    assert values["worker_class"].startswith('"sync"  #')
    # gunicorn's common layout, written as gunicorn writes it (no warning about it).
    assert values["access_log_format"].startswith(
        '"%(h)s %(l)s %(u)s %(t)s \\"%(r)s\\" %(s)s %(b)s"  #'), values["access_log_format"]
    for name in ("worker_connections", "worker_abort"):
        assert sum(f": {name}" in line for line in lines) == 1, (name, result.stderr)
    assert "gunicorn hook worker_abort() not run: sluicegate does not SIGABRT" in result.stderr
    assert "on_starting" not in result.stderr and "pre_request" not in result.stderr  # they run
    assert "# hooks: the functions on_starting, pre_request  # ops.conf.py: hooks" \
        in result.stdout.splitlines(), result.stdout
    assert "daemon" not in result.stderr  # daemon = False is what sluicegate does
    assert "some_constant" not in result.stderr and "_private_helper" not in result.stderr
    assert len(lines) == 2, result.stderr


def test_the_command_line_wins_over_the_conf(project):
    values = printed(run_cli("-c", "django.conf.py", "-w", "2", "--print-config", cwd=project))
    assert values["workers"] == '"2"  # --workers'


def test_bad_value_in_conf_names_file_line_and_setting(project):
    (project / "bad.conf.py").write_text("bind = '127.0.0.1:0'\nworkers = 'lots'\n")
    line = one_line_error(run_cli("-c", "bad.conf.py", "mysite.wsgi", cwd=project))
    assert line == "sluicegate: error: bad.conf.py, line 2: workers 'lots': expected N or auto"


def test_conf_that_raises_names_file_and_line(project):
    (project / "raises.conf.py").write_text("import os\nworkers = int(os.environ['NO_SUCH_SG'])\n")
    line = one_line_error(run_cli("-c", "raises.conf.py", "mysite.wsgi", cwd=project))
    assert line == ("sluicegate: error: raises.conf.py, line 2: running the gunicorn config file "
                    "raised KeyError: 'NO_SUCH_SG'")


def test_conf_that_is_not_python(project):
    (project / "broken.conf.py").write_text("workers = \n")
    line = one_line_error(run_cli("-c", "broken.conf.py", "mysite.wsgi", cwd=project))
    assert line.startswith("sluicegate: error: broken.conf.py, line 1: not valid Python")


# --- served over real sockets


def _core_importable() -> bool:
    probe = subprocess.run([PYTHON, "-c", "import sluicegate._core"], env=_env(),
                           capture_output=True, timeout=TIMEOUT)
    return probe.returncode == 0


needs_core = pytest.mark.skipif(
    not _core_importable(),
    reason="sluicegate._core (the Rust extension) cannot be imported yet: build it with ./dev build",
)


def fetch(port: int, host: str = "127.0.0.1") -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT)
    conn.request("GET", "/")
    response = conn.getresponse()
    response.body = response.read()  # type: ignore[attr-defined]
    conn.close()
    return response


@needs_core
def test_module_alone_and_colon_port_serve(start_server, project):
    """`sluicegate --bind :0 mysite.wsgi`: every interface (0.0.0.0), mysite.wsgi:application."""
    server = start_server(None, "mysite.wsgi", binds=[":0"], cwd=project)
    assert re.search(r"Listening at: http://0\.0\.0\.0:\d+$", server.log_text(), re.M), server.log_text()
    response = fetch(server.port)
    assert (response.status, response.body) == (200, b"mysite says hi")


@needs_core
def test_workers_conf_and_access_logfile_serve(start_server, project):
    """`sluicegate -w 2 -c django.conf.py --access-logfile -`, the app named by the file."""
    # --log-level info over the file's "warning": readiness is the INFO line "Listening at:".
    server = start_server(None, "-w", "2", "-c", "django.conf.py", "--access-logfile", "-",
                          "--log-level", "info", cwd=project)
    response = fetch(server.port)
    assert (response.status, response.body) == (200, b"mysite says hi")
    server.wait_log(r"Worker spawned \(pid: \d+\)")  # the file's post_fork hook ran
    assert server.stop() == 0
    assert any('"GET / HTTP/1.1" 200' in line for line in server.stdout_lines), server.stdout_lines


@needs_core
def test_error_logfile_takes_the_error_log(project):
    """`--error-logfile FILE` (gunicorn's; also --log-file, --error-log): the start, the workers'
    lines and the stop go to FILE, nothing to standard error."""
    log_path = project / "error.log"
    proc = subprocess.Popen(
        [PYTHON, "-m", "sluicegate", "--bind", "127.0.0.1:0", "-w", "1", "--error-logfile",
         str(log_path), "mysite.wsgi"],
        cwd=str(project), env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    try:
        text = wait_in_file(log_path, "Listening at:", TIMEOUT, process=proc)
        port = int(re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", text).group(1))
        response = fetch(port)
        assert (response.status, response.body) == (200, b"mysite says hi")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(TIMEOUT)
    stdout, stderr = proc.communicate()
    assert stderr == ""
    text = log_path.read_text()
    assert "Booting worker" in text and "Shutdown complete" in text


def test_error_logfile_that_cannot_be_opened(project):
    line = one_line_error(run_cli("--error-logfile", "/nonexistent-dir-sg/e.log", "mysite.wsgi",
                                  cwd=project))
    assert line == ("sluicegate: error: --error-log '/nonexistent-dir-sg/e.log': cannot open it: "
                    "No such file or directory")


def test_static_takes_djangos_static_url(project):
    """`--static /static/=DIR`, STATIC_URL as Django writes it, is the mount /static."""
    (project / "staticfiles").mkdir()
    values = printed(run_cli("--static", "/static/=staticfiles", "--print-config", "mysite.wsgi",
                             cwd=project))
    assert values["static"] == '["/static/=staticfiles"]  # --static'
    from sluicegate.parsers import parse_static

    cwd = os.getcwd()
    os.chdir(project)
    try:
        assert parse_static("/static/=staticfiles").prefix == "/static"
        assert parse_static("//=staticfiles").prefix == "/"
    finally:
        os.chdir(cwd)


@needs_core
def test_static_with_trailing_slash_serves(start_server, project):
    (project / "staticfiles").mkdir()
    (project / "staticfiles" / "app.css").write_text("body{}")
    server = start_server(None, "--static", "/static/=staticfiles", "mysite.wsgi", cwd=project)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT)
    conn.request("GET", "/static/app.css")
    response = conn.getresponse()
    assert (response.status, response.read()) == (200, b"body{}")
    conn.close()


@needs_core
def test_usr1_reopens_the_error_log_in_the_master_and_the_workers(project):
    """logrotate moves the error log away and sends USR1: the master and each worker open
    the file again by its path (relative to where sluicegate started, whatever --chdir), and
    what they write next goes to the new file, an app's print() too with --capture-output."""
    (project / "site").mkdir()
    (project / "site" / "printing.py").write_text(
        "def application(environ, start_response):\n"
        "    print('app says', environ['PATH_INFO'])\n"
        "    start_response('200 OK', [('Content-Length', '2')])\n"
        "    return [b'ok']\n")
    log_path = project / "error.log"
    proc = subprocess.Popen(
        [PYTHON, "-m", "sluicegate", "--bind", "127.0.0.1:0", "-w", "2", "--error-log",
         "error.log", "--capture-output", "--chdir", "site", "printing"],
        cwd=str(project), env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    try:
        text = wait_in_file(log_path, "Listening at:", TIMEOUT, process=proc)
        port = int(re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", text).group(1))
        rotated = project / "error.log.1"
        os.rename(log_path, rotated)
        proc.send_signal(signal.SIGUSR1)
        wait_in_file(log_path, "Received SIGUSR1: workers reopen their log files", TIMEOUT,
                     process=proc)
        # The master and both workers each say so in the new file.
        wait_for(lambda: log_path.read_text().count("error log") >= 3,
                 "the master and both workers to reopen the error log", TIMEOUT,
                 context=log_path.read_text)
        for i in range(4):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
            c.request("GET", f"/after{i}")
            assert c.getresponse().status == 200
            c.close()
        wait_in_file(log_path, "app says /after3", TIMEOUT, process=proc)
        assert "app says" not in rotated.read_text()
        # A relative --chdir is where sluicegate started plus it, for the workers of a reload
        # too (they went to site/site and failed to boot).
        proc.send_signal(signal.SIGHUP)
        wait_in_file(log_path, "Reload done", TIMEOUT, process=proc)
        assert "changed:" not in log_path.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(TIMEOUT) == 0
        assert "Shutdown complete" in log_path.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(TIMEOUT)
    proc.communicate()
