"""gunicorn's server hooks (hooks.py), run by real servers: each hook of tests/apps/hooks.py
appends `NAME PID ...` to a file of the test's, and the tests check which ran, in which process,
in what order, and what a raising hook does. Also the logging options (`--log-config-dict`,
`--log-config`) and their gunicorn spellings.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import sys
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parent.parent
HOOKS = ("--hooks", "tests.apps.hooks")


@pytest.fixture
def hooked(start_server, tmp_path):
    """start_server with tests/apps/hooks.py as --hooks, recording into tmp_path/hooks."""
    def start(app, *options, env=None, **kwargs):
        env = {"SGTEST_HOOKS_FILE": str(tmp_path / "hooks"), **(env or {})}
        return start_server(app, *options, *HOOKS, env=env, **kwargs)
    return start


class Records:
    """What the hooks recorded (tmp_path/hooks): one list of fields per line."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "hooks"

    def all(self) -> List[List[str]]:
        try:
            return [line.split() for line in self.path.read_text().splitlines()]
        except FileNotFoundError:
            return []

    def named(self, name: str) -> List[List[str]]:
        return [r for r in self.all() if r[0] == name]

    def wait(self, name: str, count: int = 1) -> List[List[str]]:
        return wait_for(lambda: self.named(name) if len(self.named(name)) >= count else None,
                        f"{count} {name} hook line(s)", context=lambda: repr(self.all()))


@pytest.fixture
def recorded(tmp_path):
    return Records(tmp_path)


def get(server, path: str, token: str) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    conn.request("GET", path, headers={"X-Token": token})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def test_hooks_run_in_the_master_and_in_each_worker(hooked, recorded):
    server = hooked("workers", "--workers", "2")
    master = str(server.pid)
    recorded.wait("when_ready")
    assert get(server, "/pid?x=1", "tok1").status == 200
    recorded.wait("post_request")
    assert server.stop() == 0
    got = recorded.all()
    names = [r[0] for r in got]
    assert names[0] == "on_starting" and names[-1] == "on_exit", got
    assert recorded.named("on_starting") == [["on_starting", master, master]]
    assert recorded.named("when_ready") == [["when_ready", master, master, "2"]]
    assert recorded.named("on_exit") == [["on_exit", master, master]]
    forks = recorded.named("post_fork")
    workers = sorted(r[1] for r in forks)
    assert len(workers) == 2 and master not in workers, got
    for r in forks:  # in the worker: the server is its master, the worker itself
        assert r == ["post_fork", r[1], master, r[1]], got
    for pid in workers:
        mine = [r[0] for r in got if r[1] == pid]
        assert mine[:2] == ["post_fork", "post_worker_init"], got
        assert mine[-1] == "worker_exit", got
    assert sorted(r[1] for r in recorded.named("worker_exit")) == workers
    assert all(r[2] == master for r in recorded.named("worker_exit")), got
    # child_exit: in the master, once per worker, given the worker's pid
    assert sorted(r[3] for r in recorded.named("child_exit")) == workers
    assert all(r[1] == master for r in recorded.named("child_exit")), got
    # pre_request / post_request: in the worker that served, with the request and the response
    (pre,) = recorded.named("pre_request")
    assert pre[1] in workers and pre[2:] == [pre[1], "GET", "/pid", "x=1", "tok1"], got
    (post,) = recorded.named("post_request")
    assert post[1] == pre[1] and post[3:] == ["GET", "/pid", "200"], got
    assert names.index("when_ready") > max(i for i, n in enumerate(names)
                                            if n == "post_worker_init"), got


def test_single_process_hooks(hooked, recorded):
    """No --workers: the hooks that have a meaning without a master, all in the one process."""
    server = hooked("hello")
    recorded.wait("when_ready")
    assert get(server, "/", "tok2").status == 200
    recorded.wait("post_request")
    assert server.stop() == 0
    got = recorded.all()
    assert [r[0] for r in got] == ["on_starting", "post_worker_init", "when_ready",
                                   "pre_request", "post_request", "worker_exit", "on_exit"], got
    assert {r[1] for r in got} == {str(server.pid)}, got


def test_on_reload_runs_in_the_master_on_hup(hooked, recorded):
    server = hooked("workers", "--workers", "1")
    recorded.wait("when_ready")
    server.signal(signal.SIGHUP)
    (reload,) = recorded.wait("on_reload")
    assert reload[1:] == [str(server.pid), str(server.pid)]
    recorded.wait("post_worker_init", count=2)  # the new worker


def test_a_raising_post_fork_fails_the_boot(hooked, recorded):
    server = hooked("workers", "--workers", "2", wait_ready=False,
                          env={"SGTEST_HOOK_RAISES": "post_fork"})
    assert server.wait_exit() == 3
    log = server.log_text()
    assert "Hook post_fork() raised RuntimeError: post_fork was told to fail" in log, log
    assert "Traceback (most recent call last)" in log, log
    assert "failed to boot" in log, log
    assert not recorded.named("post_worker_init"), recorded.all()


def test_a_raising_post_worker_init_fails_a_single_server(hooked):
    server = hooked("hello", wait_ready=False,
                          env={"SGTEST_HOOK_RAISES": "post_worker_init"})
    assert server.wait_exit() == 1
    log = server.log_text()
    assert "Hook post_worker_init() raised RuntimeError" in log, log
    assert "sluicegate: error: hook post_worker_init() raised RuntimeError" in log, log


@pytest.mark.parametrize("hook", ["when_ready", "pre_request", "post_request"])
def test_other_raising_hooks_are_logged_and_serving_continues(hooked, recorded, hook):
    server = hooked("workers", "--workers", "1", env={"SGTEST_HOOK_RAISES": hook})
    recorded.wait("when_ready")
    assert get(server, "/pid", "t").status == 200
    assert get(server, "/pid", "t").status == 200
    server.wait_log(rf"Hook {hook}\(\) raised RuntimeError: {hook} was told to fail")
    assert "Traceback (most recent call last)" in server.log_text()
    assert server.stop() == 0


def test_a_hooks_module_that_does_not_import(start_server):
    server = start_server("hello", "--hooks", "tests.apps.no_such_hooks", wait_ready=False)
    assert server.wait_exit() == 1
    assert "sluicegate: error: --hooks tests.apps.no_such_hooks: cannot import it: " \
           "ModuleNotFoundError" in server.log_text(), server.log_text()


def test_no_request_hooks_no_wrapper():
    """Without pre_request/post_request the app is served as it is (zero cost)."""
    sys.path.insert(0, str(ROOT / "python"))
    from sluicegate import hook_objects, hooks

    def app(environ, start_response):
        return []

    me = hook_objects.worker(None)
    assert hooks.wrap_app(None, app, me) is app
    assert hooks.wrap_app(hooks.from_mapping({"post_fork": print}, "x"), app, me) is app
    assert hooks.wrap_app(hooks.from_mapping({"pre_request": print}, "x"), app, me) is not app


GUNICORN_CONF = """
    import os

    bind = "127.0.0.1:0"
    workers = 2

    def _line(*fields):
        with open(os.environ["SGTEST_HOOKS_FILE"], "a") as f:
            f.write(" ".join(str(x) for x in fields) + "\\n")

    def post_fork(server, worker):
        _line("post_fork", os.getpid(), server.pid, worker.pid)

    def when_ready(server):
        _line("when_ready", os.getpid(), server.pid, server.cfg.workers)

    def worker_abort(worker):
        pass
"""


def test_gunicorn_conf_hooks(start_server, tmp_path, recorded):
    (tmp_path / "gunicorn.conf.py").write_text(textwrap.dedent(GUNICORN_CONF))
    server = start_server(None, "-c", str(tmp_path / "gunicorn.conf.py"), "tests.apps.workers:app",
                          binds=[], env={"SGTEST_HOOKS_FILE": str(recorded.path)})
    recorded.wait("when_ready")
    master = str(server.pid)
    assert recorded.named("when_ready") == [["when_ready", master, master, "2"]]
    forks = recorded.named("post_fork")
    assert len(forks) == 2 and all(r[1] == r[3] != master and r[2] == master for r in forks)
    assert "worker_abort() not run: sluicegate does not SIGABRT" in server.log_text()


# --- logging configuration


def dict_config(path: Path) -> Dict[str, object]:
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"tagged": {"format": "TAGGED %(name)s %(levelname)s %(message)s"}},
        "handlers": {
            "stderr": {"class": "logging.StreamHandler", "formatter": "tagged",
                       "stream": "ext://sys.stderr"},
            "file": {"class": "logging.FileHandler", "formatter": "tagged",
                     "filename": str(path)},
        },
        "loggers": {"sluicegate": {"handlers": ["stderr", "file"], "level": "INFO",
                                   "propagate": False}},
        # Merged into gunicorn's defaults, whose root logger names the "console" handler this
        # dict's "handlers" replace: gunicorn refuses the dict without a root of its own.
        "root": {"level": "WARNING", "handlers": []},
    }


def test_log_config_dict_takes_the_server_loggers(start_server, tmp_path):
    out = tmp_path / "server.log"
    server = start_server("errors", "--log-config-dict", json.dumps(dict_config(out)))
    assert "TAGGED sluicegate INFO Listening at: " in server.log_text()
    server.request("GET", "/raise_before")  # an app error: the sluicegate.error logger
    wait_for(lambda: "TAGGED sluicegate.error ERROR" in out.read_text(),
             "the app's error in the configured file",
             context=lambda: out.read_text() + server.log_text())
    assert "Listening at: " in out.read_text()


def test_log_config_ini(start_server, tmp_path):
    out = tmp_path / "server.log"
    ini = tmp_path / "logging.ini"
    ini.write_text(textwrap.dedent(f"""
        [loggers]
        keys=root,sluicegate

        [handlers]
        keys=stderr,file

        [formatters]
        keys=tagged

        [logger_root]
        level=WARNING
        handlers=

        [logger_sluicegate]
        level=INFO
        handlers=stderr,file
        qualname=sluicegate
        propagate=0

        [handler_stderr]
        class=StreamHandler
        formatter=tagged
        args=(sys.stderr,)

        [handler_file]
        class=FileHandler
        formatter=tagged
        args=({str(out)!r},)

        [formatter_tagged]
        format=INI %(name)s %(message)s
    """))
    server = start_server("hello", "--log-config", str(ini))
    assert "INI sluicegate Listening at: " in server.log_text()
    # the file handler comes after the stderr one: its line may follow a moment later
    wait_for(lambda: "INI sluicegate Listening at: " in out.read_text(),
             "the readiness line in the configured file", context=out.read_text)


def test_bad_log_config_dict_is_one_line(start_server):
    server = start_server("hello", "--log-config-dict", '{"version": 1, "handlers": '
                          '{"h": {"class": "no.such.Handler"}}}', wait_ready=False)
    assert server.wait_exit() == 1
    assert "sluicegate: error: --log-config-dict: logging refused it: ValueError" \
        in server.log_text(), server.log_text()
    server2 = start_server("hello", "--log-config-dict", "[1]", wait_ready=False)
    assert server2.wait_exit() == 2
    assert "expected a JSON object" in server2.log_text()


def test_gunicorn_logconfig_dict_and_logconfig_are_mapped(tmp_path):
    sys.path.insert(0, str(ROOT / "python"))
    from sluicegate import gunicorn_config
    from sluicegate.options import BY_NAME

    conf = tmp_path / "gunicorn.conf.py"
    conf.write_text('logconfig_dict = {"version": 1}\nlogconfig = "logging.ini"\n')
    out = gunicorn_config.load(str(conf), BY_NAME)
    assert out["log_config_dict"][0] == {"version": 1}
    assert out["log_config"][0] == "logging.ini"


# --- --capture-output


@pytest.mark.parametrize("workers", [[], ["--workers", "1"]])
def test_capture_output_sends_print_to_the_error_log(start_server, tmp_path, workers):
    log_path = tmp_path / "error.log"
    server = start_server("prints", "--error-log", str(log_path), "--capture-output", *workers,
                          wait_ready=False)
    text = wait_for(lambda: log_path.exists() and "Listening at:" in log_path.read_text()
                    and log_path.read_text(), "the readiness line in the error log file",
                    context=server.log_text)
    port = int(re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", text).group(1))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/hello")
    assert conn.getresponse().read() == b"ok"
    conn.close()
    wait_for(lambda: "PRINTED-BY-APP /hello" in log_path.read_text(),
             "the app's print() in the error log file", context=log_path.read_text)
    assert "STDERR-BY-APP /hello" in log_path.read_text()
    assert server.stop() == 0
    assert "PRINTED-BY-APP" not in server.stdout_text()


def test_gunicorn_capture_output_is_mapped(tmp_path):
    sys.path.insert(0, str(ROOT / "python"))
    from sluicegate import gunicorn_config
    from sluicegate.options import BY_NAME

    conf = tmp_path / "gunicorn.conf.py"
    conf.write_text('capture_output = True\n')
    assert gunicorn_config.load(str(conf), BY_NAME)["capture_output"][0] is True


def test_toml_hooks_and_log_config_dict_table(tmp_path):
    """The TOML file names the hooks module and gives dictConfig's dict as a table."""
    sys.path.insert(0, str(ROOT / "python"))
    from sluicegate.resolution import Raw, raw_values, validate

    path = tmp_path / "sluicegate.toml"
    path.write_text('hooks = "myproject.hooks"\n\n[log_config_dict]\nversion = 1\n'
                    'disable_existing_loggers = false\n')
    cfg = validate(raw_values({"config": Raw(str(path), "--config")}, env={}))
    assert cfg.hooks is not None and cfg.hooks.source == "myproject.hooks"
    assert cfg.log_config_dict == {"version": 1, "disable_existing_loggers": False}


def test_serve_takes_a_mapping_of_hooks():
    """serve(hooks={...}): functions by gunicorn's names; another name is refused."""
    sys.path.insert(0, str(ROOT / "python"))
    from sluicegate.errors import OptionError
    from sluicegate.resolution import from_keywords, raw_values, validate

    def post_fork(server, worker):
        pass

    cfg = validate(raw_values(from_keywords({"hooks": {"post_fork": post_fork}}), env={}))
    assert cfg.hooks is not None and dict(cfg.hooks.functions) == {"post_fork": post_fork}
    with pytest.raises(OptionError, match="'post_frok' is not a gunicorn hook name"):
        validate(raw_values(from_keywords({"hooks": {"post_frok": post_fork}}), env={}))


DJANGO_GUNICORN_CONF = """
    # A Django project's gunicorn.conf.py: the app, two workers, and the hooks it relies on
    # (the functions of tests/apps/hooks.py, each recording the process it ran in).
    wsgi_app = "tests.apps.django_app:app"
    workers = 2
    from tests.apps.hooks import (post_fork, post_worker_init, when_ready, pre_request,
                                  post_request, worker_exit, child_exit, on_exit)
"""


def test_a_django_app_under_a_gunicorn_conf_with_hooks(start_server, tmp_path, recorded):
    """`sluicegate --config gunicorn.conf.py --workers 2` serving Django: each hook runs in the
    process gunicorn runs it in (master or the worker), around Django's own answers."""
    (tmp_path / "gunicorn.conf.py").write_text(textwrap.dedent(DJANGO_GUNICORN_CONF))
    server = start_server(None, "--config", str(tmp_path / "gunicorn.conf.py"), "--workers", "2",
                          env={"SGTEST_HOOKS_FILE": str(recorded.path)})
    recorded.wait("when_ready")
    master = str(server.pid)
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    conn.request("GET", "/redirect")
    response = conn.getresponse()
    assert (response.status, response.getheader("Location")) == (302, "/target")
    response.read()
    conn.request("GET", "/target")
    response = conn.getresponse()
    assert (response.status, response.read()) == (200, b"target reached")
    conn.close()
    recorded.wait("post_request", 2)
    assert server.stop() == 0
    got = recorded.all()
    assert recorded.named("when_ready") == [["when_ready", master, master, "2"]]
    workers = sorted(r[1] for r in recorded.named("post_fork"))
    assert len(workers) == 2 and master not in workers, got
    for pid in workers:
        mine = [r[0] for r in got if r[1] == pid]
        assert mine[:2] == ["post_fork", "post_worker_init"] and mine[-1] == "worker_exit", got
    served = [r for r in recorded.named("pre_request") + recorded.named("post_request")]
    assert all(r[1] in workers and r[2] == r[1] for r in served), got
    assert [(r[3], r[4]) for r in recorded.named("pre_request")] == [("GET", "/redirect"),
                                                                    ("GET", "/target")]
    assert [(r[4], r[5]) for r in recorded.named("post_request")] == [("/redirect", "302"),
                                                                     ("/target", "200")]
    assert sorted(r[3] for r in recorded.named("child_exit")) == workers
    assert all(r[1] == master for r in recorded.named("child_exit")), got
    assert recorded.named("on_exit") == [["on_exit", master, master]]
