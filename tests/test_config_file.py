"""`--config FILE`: options from TOML, with the command line over the
environment over the file over the defaults; `--check-config`, `--print-config`; a bad file is
one line naming the file, the key and its line (exit 2); a reload (HUP) re-reads it.
"""

import signal
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def sluicegate(*args, env=None, cwd=ROOT):
    import os
    penv = {k: v for k, v in os.environ.items() if not k.startswith("SLUICEGATE_")}
    penv["PYTHONPATH"] = str(ROOT)
    penv.update(env or {})
    return subprocess.run([sys.executable, "-m", "sluicegate", *args], capture_output=True,
                          text=True, timeout=60, env=penv, cwd=cwd)


def test_precedence_command_line_over_environment_over_file_over_default(tmp_path):
    conf = tmp_path / "sg.toml"
    conf.write_text('app = "tests.apps.workers:app"\n'
                    'threads = "2:20"\n'
                    'graceful_timeout = 7\n'
                    'max-requests = 500\n'
                    'bind = ["127.0.0.1:0"]\n')
    r = sluicegate("--config", str(conf), "--print-config", "--graceful-timeout", "9",
                   env={"SLUICEGATE_THREADS": "3:30"})
    assert r.returncode == 0, r.stderr
    lines = {line.split(" =")[0]: line for line in r.stdout.splitlines() if " = " in line}
    assert lines["graceful_timeout"].startswith('graceful_timeout = "9"  # --graceful-timeout')
    assert lines["threads"] == 'threads = "3:30"  # SLUICEGATE_THREADS'
    assert lines["max_requests"] == f"max_requests = 500  # {conf}, line 4: max-requests"
    assert lines["app"] == f'app = "tests.apps.workers:app"  # {conf}, line 1: app'
    assert lines["limit_body"].endswith("# default")


@pytest.mark.parametrize("content, expected", [
    ('app = "x:y"\nthreds = "2:4"\n', r"line 2: threds: unknown option \(did you mean 'threads'\?\)"),
    ('app = "x:y"\nthreads = "5:2"\n', r"line 2: threads '5:2': MIN \(5\) is larger than MAX \(2\)"),
    ('app = "x:y"\nthreads = \n', r"not a valid TOML file"),
    ('[server]\nthreads = "1:2"\n', r"line 1: server: expected a value, not a table"),
])
def test_a_bad_file_is_one_line_naming_file_and_key(tmp_path, content, expected):
    import re
    conf = tmp_path / "bad.toml"
    conf.write_text(content)
    r = sluicegate("--config", str(conf), "--check-config")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"sluicegate: error: {conf}")
    assert re.search(expected, lines[0]), lines[0]


def test_config_off_reads_no_file(tmp_path):
    # --help shows the default as "off"; saying it must not read a file named "off".
    (tmp_path / "off").write_text("threads = \n")  # read, it would be an error
    r = sluicegate("--config", "off", "--check-config", "tests.apps.workers:app", cwd=tmp_path,
                   env={"PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr


def test_check_config_imports_the_app(tmp_path):
    ok = sluicegate("--check-config", "tests.apps.workers:app")
    assert ok.returncode == 0 and "configuration OK" in ok.stdout
    bad = sluicegate("--check-config", "tests.apps.boot_fails:app")
    assert bad.returncode == 2
    assert "sluicegate_test_no_such_dependency" in bad.stderr


def test_hup_rereads_the_file(start_server, tmp_path):
    conf = tmp_path / "sg.toml"
    conf.write_text('threads = "1:8"\n')
    srv = start_server("workers", "--workers", "1", "--config", str(conf))
    srv.wait_log(r"threads 1:8 \(--threads\)|threads 1:8")
    conf.write_text('threads = "1:9"\n')
    srv.signal(signal.SIGHUP)
    srv.wait_log(r"configuration re-read \(changed: threads\)")
    srv.wait_log(r"Worker \d+: app tests.apps.workers:app, threads 1:9")
    conf.write_text('threads = "9:1"\n')
    srv.signal(signal.SIGHUP)
    srv.wait_log(r"the configuration is not valid .*MIN \(9\) is larger than MAX \(1\).*keep serving")
    status = srv.request("GET", "/pid").status
    assert status == 200


@pytest.mark.parametrize("args, expected", [
    (["--user", "sluicegate_test_no_such_user"],
     "--user: no such user 'sluicegate_test_no_such_user'"),
    (["--group", "sluicegate_test_no_such_group"],
     "--group: no such group 'sluicegate_test_no_such_group'"),
    (["--access-log", "{missing}/access.log"], "--access-log '{missing}/access.log': no such "
                                               "directory '{missing}'"),
    (["--error-log", "{missing}/error.log"], "--error-log '{missing}/error.log': no such "
                                             "directory '{missing}'"),
    (["--pid", "{missing}/sg.pid"], "--pid '{missing}/sg.pid': no such directory '{missing}'"),
], ids=["user", "group", "access-log", "error-log", "pid"])
def test_check_config_refuses_what_cannot_start(tmp_path, args, expected):
    """--check-config used to say "configuration OK" for configs a start then
    refused. Each of these fails a real start; --check-config now fails too, in one line."""
    missing = str(tmp_path / "no-such-dir")
    args = [a.format(missing=missing) for a in args]
    start = sluicegate("--bind", "127.0.0.1:0", *args, "tests.apps.workers:app")
    assert start.returncode != 0 and "sluicegate: error: " in start.stderr, start.stderr
    r = sluicegate("--check-config", *args, "tests.apps.workers:app")
    assert r.returncode == 2, r.stdout
    assert r.stderr.splitlines() == [f"sluicegate: error: {expected.format(missing=missing)}"]
    assert "configuration OK" not in r.stdout


def test_check_config_accepts_files_in_existing_directories(tmp_path):
    import getpass
    for access_log in (str(tmp_path / "a.log"), "-"):
        r = sluicegate("--check-config", "--access-log", access_log,
                       "--error-log", str(tmp_path / "e.log"), "--pid", str(tmp_path / "sg.pid"),
                       "--user", getpass.getuser(), "tests.apps.workers:app")
        assert r.returncode == 0, r.stderr
        assert not any(tmp_path.iterdir()), "--check-config wrote a file"
