"""The `sluicegate-uwsgi` command (python/sluicegate/uwsgi_cli.py) as a process: its one-line
errors, uWSGI 2.0's signals through --on-term, HUP reading the configuration files again, and
a virtualenv with a sluicegate-uwsgi of its own taking the start over. Real processes, real
sockets (http-socket on port 0)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sluicegate.options import BY_NAME
from tests.conftest import PYTHON, ROOT, ServerProcess
from tests.helpers import wait_for

pytest.importorskip("sluicegate.uwsgi_config")

#: What a start under sluicegate-uwsgi sets (--uwsgi-module always, --on-term with a
#: master); built elsewhere (CONTRACT).
serving = pytest.mark.skipif(not {"uwsgi_module", "on_term"} <= set(BY_NAME),
                             reason="--uwsgi-module and --on-term are built elsewhere (CONTRACT)")

COMMAND = [PYTHON, "-m", "sluicegate.uwsgi_cli"]


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UWSGI_", "SLUICEGATE_"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=60,
                          cwd=cwd, env=env)


def ini(path: Path, **options: str) -> Path:
    lines = ["[uwsgi]", f"chdir = {ROOT}", "module = tests.apps.whoami:app",
             "http-socket = 127.0.0.1:0"]
    lines += [f"{k.replace('_', '-')} = {v}" for k, v in options.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_version_and_help():
    assert run("--version").stdout.startswith("sluicegate ")
    assert "docs/uwsgi.md" in run("--help").stdout


def test_a_refused_option_stops_the_start_with_one_line(tmp_path):
    done = run("--ini", str(ini(tmp_path / "a.ini", spooler=str(tmp_path))))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"sluicegate: error: uWSGI spooler = {str(tmp_path)!r}: uWSGI's spooler (tasks in "
        "files) has no counterpart: run the tasks in a task queue"]


@serving
def test_an_ignored_option_warns_in_one_line_and_the_app_serves(tmp_path):
    server = ServerProcess(None, command=[*COMMAND, "--ini", str(ini(
        tmp_path / "a.ini", enable_threads="true"))])
    try:
        assert server.request().status == 200
        assert "sluicegate: warning: uWSGI enable-threads ignored: Python threads always " \
               "run here" in server.log_text()
    finally:
        server.stop(signal.SIGINT)


def workers(server: ServerProcess) -> set:
    return {server.request().body for _ in range(8)}


@serving
@pytest.mark.skipif("on_term" not in BY_NAME, reason="--on-term is built elsewhere (CONTRACT)")
def test_sigterm_reloads_unless_die_on_term(tmp_path):
    """uWSGI 2.0: with a master, TERM reloads (new workers, the server stays); with
    die-on-term it stops; INT stops."""
    server = ServerProcess(None, command=[*COMMAND, "--ini", str(ini(
        tmp_path / "a.ini", master="true"))])
    try:
        before = server.request().body
        server.signal(signal.SIGTERM)
        wait_for(lambda: server.request().body != before or None, "a new worker after TERM")
        assert server.alive()
        server.signal(signal.SIGINT)
        assert server.wait_exit() == 0
    finally:
        server.stop(signal.SIGINT)
    server = ServerProcess(None, command=[*COMMAND, "--ini", str(ini(
        tmp_path / "b.ini", master="true", die_on_term="true"))])
    server.signal(signal.SIGTERM)
    assert server.wait_exit() == 0


@serving
def test_hup_reads_the_configuration_again(tmp_path):
    """HUP is uWSGI's graceful reload, which reads the files again: a file now asking for two
    processes gets two workers."""
    path = ini(tmp_path / "a.ini", master="true", processes="1")
    server = ServerProcess(None, command=[*COMMAND, "--ini", str(path)])
    try:
        assert len(workers(server)) == 1
        ini(path, master="true", processes="2")
        server.signal(signal.SIGHUP)
        wait_for(lambda: len(workers(server)) == 2 or None, "two workers after HUP")
    finally:
        server.stop(signal.SIGINT)


def test_a_virtualenv_with_its_own_sluicegate_uwsgi_takes_the_start_over(tmp_path):
    """virtualenv (home): that environment's sluicegate-uwsgi is run with the same arguments
    (here a stand-in that prints them)."""
    program = tmp_path / "venv" / "bin" / "sluicegate-uwsgi"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\necho \"venv's own: $*\"\n")
    program.chmod(0o755)
    path = ini(tmp_path / "a.ini", virtualenv=str(tmp_path / "venv"))
    done = run("--ini", str(path))
    assert done.stdout == f"venv's own: --ini {path}\n", done.stderr


@serving
def test_the_app_reads_the_resolved_options_in_uwsgi_opt_and_hup_renews_them(tmp_path):
    """uwsgi.opt is what the configuration resolved (uwsgi_cli.publish), in every worker, and
    a HUP's new workers see the files as they are then."""
    app = tmp_path / "opt_app.py"
    app.write_text("import uwsgi\n\ndef application(environ, start_response):\n"
                   "    start_response('200 OK', [])\n"
                   "    return [uwsgi.opt['harakiri']]\n")
    path = tmp_path / "a.ini"
    lines = "[uwsgi]\nwsgi-file = {}\nhttp-socket = 127.0.0.1:0\nmaster = true\nharakiri = {}\n"
    path.write_text(lines.format(app, 77))
    server = ServerProcess(None, command=[*COMMAND, "--ini", str(path)])
    try:
        assert server.request().body == b"77"
        path.write_text(lines.format(app, 78))
        server.signal(signal.SIGHUP)
        wait_for(lambda: server.request().body == b"78" or None, "uwsgi.opt after HUP")
    finally:
        server.stop(signal.SIGINT)


def test_the_resolving_process_gives_what_this_process_would(tmp_path, monkeypatch):
    """uwsgi_cli.resolve_apart runs uWSGI's resolution and the validation in a process of its
    own (so that their modules never load in the master): its result, the validated Config
    included, is the in-process one, value for value; and with no such process (an
    interpreter that cannot be started) it resolves here instead."""
    from sluicegate import uwsgi_cli
    from sluicegate.resolution import raw_values, validate

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    path = ini(tmp_path / "a.ini", master="true", processes="2", static_map=f"/s={tmp_path}",
               env="A=1", harakiri="30")
    args = ["--ini", str(path)]
    resolved_here = uwsgi_cli.resolved
    pairs = resolved_here(args, os.environ)
    here = uwsgi_cli.given_from(pairs)

    def not_here(*_):
        raise AssertionError("resolved in this process")

    monkeypatch.setattr(uwsgi_cli, "resolved", not_here)
    apart_pairs, apart = uwsgi_cli.resolve_apart(args)
    assert [tuple(p) for p in apart_pairs] == [tuple(p) for p in pairs]
    assert apart.config == validate(raw_values(here.given)) and apart.reexec == here.reexec
    assert apart.config.static and apart.config.bind  # records made again from plain values
    monkeypatch.setattr(uwsgi_cli, "resolved", resolved_here)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    fallback_pairs, fallback = uwsgi_cli.resolve_apart(args)
    assert fallback.given == here.given and fallback_pairs == pairs


def test_a_gunicorn_config_file_runs_in_the_master_as_before(tmp_path):
    """A --config file named beside a uWSGI configuration (SLUICEGATE_CONFIG) is Python run for
    its effects too: it runs in the master, which the workers are forked from, and not only in
    the process that resolves and validates the options apart (uwsgi_cli.fields_of). Without
    that exception, what the file set in os.environ reached no worker."""
    conf = tmp_path / "gunicorn.conf.py"
    conf.write_text("import os\nos.environ['FROM_CONFIG_FILE'] = 'ran'\n")
    path = tmp_path / "a.ini"
    path.write_text(f"[uwsgi]\nchdir = {ROOT}\nmodule = tests.apps.os_env:app\n"
                    "http-socket = 127.0.0.1:0\nmaster = true\nprocesses = 1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UWSGI_", "SLUICEGATE_"))}
    env.update(PYTHONPATH=str(ROOT), SLUICEGATE_CONFIG=str(conf))
    server = ServerProcess(None, command=[*COMMAND, "--ini", str(path)], env=env)
    try:
        assert server.request(path="/?FROM_CONFIG_FILE").body == b'{"FROM_CONFIG_FILE": "ran"}'
    finally:
        server.stop(signal.SIGINT)
