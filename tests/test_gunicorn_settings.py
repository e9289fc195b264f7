"""Every gunicorn setting has one answer (done, ignored with a reason, refused with a reason),
the same on the command line, in a gunicorn.conf.py and in the TOML file; and the settings a
gunicorn start line reaches for do what they do in gunicorn, on a real server.

The table is checked against the gunicorn installed beside the tests (requirements-dev.txt): a
gunicorn setting or flag with no answer fails here. The three sources are compared in-process
(the same parsing the `sluicegate` command runs); what has a runtime effect is checked over real
sockets on a started server.
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))

import gunicorn.config  # noqa: E402

from sluicegate import command_line, gunicorn_settings, options  # noqa: E402
from sluicegate.errors import OptionError  # noqa: E402
from sluicegate.command_line import from_command_line  # noqa: E402
from sluicegate.resolution import Raw, raw_values, validate  # noqa: E402
from sluicegate.validated import Config  # noqa: E402

from tests.helpers import wait_for  # noqa: E402

#: Seconds a socket operation may take (bounded waits, never a speed assertion).
STOP_TIMEOUT = 10.0

GS = gunicorn_settings


# --- the table against the installed gunicorn


def _takes(setting: Any) -> str:
    """How gunicorn's own command line takes the setting (gunicorn_settings' names)."""
    if not setting.cli:
        return GS.FILE_ONLY
    if setting.nargs == "?":
        return GS.OPTIONAL
    if setting.action == "store_true":
        return GS.SWITCH
    if setting.action == "store_const":
        return GS.SWITCH_OFF if setting.const is False else GS.SWITCH
    if setting.action == "append":
        return GS.LIST
    return GS.VALUE


def _is_hook(setting: Any) -> bool:
    return "Hooks" in setting.section


def test_every_gunicorn_setting_has_an_answer():
    """Fails when the installed gunicorn has a setting (or a hook) this table does not answer,
    or a flag that sluicegate's command line does not take."""
    known = gunicorn.config.KNOWN_SETTINGS
    assert len(known) >= 119, "gunicorn 27's settings expected: pip install 'gunicorn>=27'"
    hooks = GS.hook_answers()
    missing = [s.name for s in known if s.name not in GS.BY_NAME and s.name not in hooks]
    assert not missing, f"gunicorn settings without an answer in gunicorn_settings.py: {missing}"
    parser_flags = set(command_line.build_parser("0")._option_string_actions)
    for s in known:
        if _is_hook(s):
            assert s.name in hooks, s.name
            continue
        ours = GS.BY_NAME[s.name]
        assert ours.flags == tuple(s.cli or ()), (s.name, ours.flags, s.cli)
        assert ours.takes == _takes(s), (s.name, ours.takes, _takes(s))
        assert set(ours.flags) <= parser_flags, (s.name, set(ours.flags) - parser_flags)
        assert ours.answer in (GS.DONE, GS.IGNORED, GS.REFUSED) and ours.text, s.name


def test_a_setting_that_is_an_option_is_answered_done():
    """A gunicorn setting whose flag (or name) a sluicegate option has must be done, mapped to
    that option: else a gunicorn.conf.py would refuse or ignore what the command line does."""
    option_flags = {f: o.name for o in options.OPTIONS if not o.positional for f in o.flags}
    for s in GS.SETTINGS:
        owners = {option_flags[f] for f in s.flags if f in option_flags}
        if s.name in options.BY_NAME:
            owners.add(s.name)
        if owners:
            assert s.answer == GS.DONE and owners == {s.option}, (s.name, owners, s.answer)


def test_docs_list_every_gunicorn_setting_with_its_answer():
    text = (ROOT / "docs" / "options.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| [^|]* \| (done|ignored|refused) \|", text, re.M))
    for s in gunicorn.config.KNOWN_SETTINGS:
        answer = GS.hook_answers()[s.name][0] if _is_hook(s) else GS.BY_NAME[s.name].answer
        assert rows.get(s.name) == answer, s.name


# --- the same answer from the three sources


def _cli_config(*argv: str) -> Config:
    return validate(raw_values(from_command_line(list(argv)), env={}))


def _file_config(path: Path) -> Config:
    return validate(raw_values({"config": Raw(str(path), "--config")}, env={}))


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f'"{k}" = {_toml(v)}' for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _three_ways(tmp_path: Path, capsys, name: str, value: Any, argv: List[str]
                ) -> List[Tuple[str, Any]]:
    """(outcome, what) from the command line (when the setting has a flag), a gunicorn.conf.py
    and a TOML file: ("config", Config), ("warning", text after where) or ("error", ...)."""
    py, toml = tmp_path / "g.conf.py", tmp_path / "g.toml"
    py.write_text(f"{name} = {value!r}\n")
    toml.write_text(f"{name} = {_toml(value)}\n")
    sources = [(f"{py}, line 1: {name}", lambda: _file_config(py)),
               (f"{toml}, line 1: {name}", lambda: _file_config(toml))]
    if argv:
        setting = GS.BY_NAME[name]
        flag = setting.flags[-1]
        if setting.option and flag in options.BY_NAME[setting.option].flags:
            flag = options.BY_NAME[setting.option].flag  # an option's own spelling
        sources.insert(0, (flag, lambda: _cli_config(*argv)))
    out = []
    for where, load in sources:
        capsys.readouterr()
        try:
            cfg = load()
        except OptionError as e:
            assert str(e).startswith(where), (str(e), where)
            out.append(("error", str(e)[len(where):]))
            continue
        err = capsys.readouterr().err.strip()
        if err:
            prefix = f"sluicegate: warning: {where}"
            assert err.startswith(prefix) and "\n" not in err, (err, prefix)
            out.append(("warning", err[len(prefix):]))
        else:
            out.append(("config", cfg))
    return out


def _argv(setting: GS.Setting, value: Any) -> List[str]:
    flag = setting.flags[-1] if setting.flags else ""
    if not flag:
        return []
    if setting.takes in (GS.SWITCH, GS.SWITCH_OFF):
        return [flag]
    if isinstance(value, list):
        return [a for v in value for a in (flag, str(v))]
    return [flag, str(value)]


NOT_DONE = [s for s in GS.SETTINGS if s.answer != GS.DONE]


@pytest.mark.parametrize("setting", NOT_DONE, ids=[s.name for s in NOT_DONE])
def test_ignored_and_refused_settings_answer_the_same_three_ways(setting, tmp_path, capsys):
    value: Any = {GS.SWITCH: True, GS.SWITCH_OFF: False, GS.LIST: ["x1"]}.get(setting.takes, "x1")
    argv = _argv(setting, value)
    if setting.takes == GS.SWITCH and True in setting.accepts:
        # A switch that is on by default (suppress_ragged_eofs): only a file can turn it off.
        value, argv = False, []
    outcomes = _three_ways(tmp_path, capsys, setting.name, value, argv)
    kinds = {kind for kind, _ in outcomes}
    expected = "warning" if setting.answer == GS.IGNORED else "error"
    assert kinds == {expected}, outcomes
    texts = {text.replace(f" {value!r}", "").replace(" 'x1'", "").replace(" ['x1']", "")
             for _, text in outcomes}
    assert len(texts) == 1, outcomes
    assert setting.text in texts.pop()


#: A gunicorn value for each done setting, what it must give (the Config field), and how the
#: command line writes it when that is not str(value).
DONE_SAMPLES: Dict[str, Tuple[Any, ...]] = {
    "wsgi_app": ("pkg.mod:app", "pkg.mod:app"),
    "bind": ("unix://tmp/x.sock", "tmp/x.sock"),
    "backlog": (64, 64),
    "workers": (3, 3),
    "worker_class": ("sync", "sync"),
    "threads": (8, (1, 8)),
    "max_requests": (100, 100),
    "max_requests_jitter": (10, 10),
    "timeout": (20, 20.0),
    "graceful_timeout": (7, 7.0),
    "keepalive": (5, 5.0),
    "limit_request_line": (0, 0),
    "limit_request_fields": (0, 0),
    "limit_request_field_size": (8190, 8190),
    "reload": (True, True),
    "reload_extra_files": (["templates/"], ("templates/",)),
    "preload_app": (True, True),
    "reuse_port": (True, True),
    "control_socket": ("/tmp/sg-settings.ctl", "/tmp/sg-settings.ctl"),
    "control_socket_disable": (True, True),
    "raw_env": (["A=B"], ("A=B",)),
    "pidfile": ("x.pid", "x.pid"),
    "user": ("nobody", "nobody"),
    "group": ("nogroup", "nogroup"),
    "umask": (0o22, 0o22, "0o22"),
    "secure_scheme_headers": ({"X-FORWARDED-PROTO": "https"}, "x-forwarded"),
    "forwarded_allow_ips": ("*", "*"),
    "proxy_allow_ips": ("10.0.0.0/8", "10.0.0.0/8"),
    "pythonpath": ("src,lib", "src,lib"),
    "proxy_protocol": ("v2", True),
    "root_path": ("/app", "/app"),
    "accesslog": ("-", "-"),
    "access_log_format": ('%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"',
                          '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"'),
    "errorlog": ("err.log", "err.log"),
    "loglevel": ("'warning'", "warning"),
    "capture_output": (True, True),
    "logconfig": ("logging.ini", "logging.ini"),
    "logconfig_dict": ({"version": 1}, {"version": 1}),
    "logconfig_json": ("logging.json", "logging.json"),
    "syslog": (True, True),
    "syslog_addr": ("udp://logs.example:514", "udp://logs.example:514"),
    "syslog_prefix": ("shop", "shop"),
    "syslog_facility": ("local3", "local3"),
    "disable_redirect_access_to_syslog": (True, True),
    "statsd_host": ("localhost:9125", "localhost:9125"),
    "statsd_prefix": ("shop", "shop"),
    "dogstatsd_tags": ("env:prod,team:web", "env:prod,team:web"),
    "proc_name": ("web", "web"),
    "keyfile": ("k.pem", "k.pem"),
    "certfile": ("c.pem", "c.pem"),
    "cert_reqs": (2, "required"),
    "ca_certs": ("ca.pem", "ca.pem"),
    "http_protocols": ("h1", "off"),
    "http2_cleartext": ("prior-knowledge", "on"),
    "http2_max_concurrent_streams": (50, 50),
}

#: Done settings checked elsewhere: the config file itself and the two command-line switches
#: that exit (a TOML file refuses them as keys), --chdir (a real directory, test_cli.py) and
#: --paste (a real PasteDeploy file, below).
DONE_ELSEWHERE = ("config", "check_config", "print_config", "chdir", "paste")


def test_every_done_setting_has_a_sample():
    done = {s.name for s in GS.SETTINGS if s.answer == GS.DONE}
    assert done == set(DONE_SAMPLES) | set(DONE_ELSEWHERE)


@pytest.mark.parametrize("name", sorted(DONE_SAMPLES))
def test_done_settings_set_the_same_value_three_ways(name, tmp_path, capsys):
    value, expected, *cli_text = DONE_SAMPLES[name]
    setting = GS.BY_NAME[name]
    argv = _argv(setting, cli_text[0] if cli_text else value)
    outcomes = _three_ways(tmp_path, capsys, name, value, argv)
    assert {kind for kind, _ in outcomes} == {"config"}, outcomes
    got = [getattr(cfg, str(setting.option)) for _, cfg in outcomes]
    if name == "bind":
        got = [b[0].host for b in got]
    assert got == [expected] * len(got), got


def test_a_refused_value_of_a_done_setting_names_it_three_ways(tmp_path, capsys):
    outcomes = _three_ways(tmp_path, capsys, "header_map", "refuse", ["--header-map", "refuse"])
    assert [k for k, _ in outcomes] == ["error"] * 3
    outcomes = _three_ways(tmp_path, capsys, "secure_scheme_headers", {"X-SCHEME": "https"}, [])
    assert [k for k, _ in outcomes] == ["error"] * 2
    assert all("X-SCHEME: 'https' is not read" in text for _, text in outcomes), outcomes
    # A gunicorn format gunicorn itself cannot write (%d of a text atom): refused.
    outcomes = _three_ways(tmp_path, capsys, "access_log_format", "%(h)s %(s)d",
                           ["--access-logformat", "%(h)s %(s)d"])
    assert [k for k, _ in outcomes] == ["error"] * 3, outcomes
    assert all("is text, and %d of text fails in gunicorn too" in text
               for _, text in outcomes), outcomes


def test_values_that_ask_for_what_sluicegate_does_are_taken_silently(tmp_path, capsys):
    for name, value, argv in (("daemon", False, []), ("header_map", "drop", ["--header-map", "drop"]),
                              ("dirty_workers", 0, ["--dirty-workers", "0"]),
                              ("sendfile", True, [])):
        outcomes = _three_ways(tmp_path, capsys, name, value, argv)
        assert {kind for kind, _ in outcomes} == {"config"}, (name, outcomes)


# --- start lines and files that gunicorn users write, on a real server


def _children(pid: int) -> List[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def _cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode().strip()


def _comm(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()


def _raw_request(port: int, head: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=STOP_TIMEOUT) as s:
        s.sendall(head)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An app under src/ (found through --pythonpath only) that answers its own module's name."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "webapp.py").write_text(textwrap.dedent('''
        def application(environ, start_response):
            body = ("webapp " + environ["wsgi.url_scheme"]).encode()
            start_response("200 OK", [("Content-Type", "text/plain"),
                                      ("Content-Length", str(len(body)))])
            return [body]
    ''').lstrip())
    return tmp_path


def test_a_dockerfile_start_line_starts_and_each_flag_does_what_gunicorns_does(start_server,
                                                                               project):
    # As a shell-form Dockerfile CMD passes it: --log-level "'info'" arrives with its quotes.
    srv = start_server(None, "-n", "shop", "--pythonpath", "src", "--worker-tmp-dir", "/dev/shm",
                       "--worker-connections", "1000", "--limit-request-field_size", "100",
                       "--limit-request-line", "0", "--log-level", "'info'", "-w", "2",
                       "webapp", cwd=project)
    log = srv.log_text()
    assert "--worker-tmp-dir ignored: where gunicorn's workers keep" in log
    assert "--worker-connections ignored:" in log
    assert srv.request().body == b"webapp http"  # found through --pythonpath src
    # --limit-request-line 0: no limit of its own; a 20 kB target is served.
    long_target = "/" + "a" * 20000
    assert _raw_request(srv.port, f"GET {long_target} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
                        ).startswith(b"HTTP/1.1 200 ")
    # --limit-request-field_size 100: a field line of 100 bytes (CRLF included) passes, 101 not.
    ok_field = "X-Pad: " + "p" * (100 - len("X-Pad: ") - 2)
    assert _raw_request(srv.port, f"GET / HTTP/1.1\r\nHost: x\r\n{ok_field}\r\n\r\n".encode()
                        ).startswith(b"HTTP/1.1 200 ")
    assert _raw_request(srv.port, f"GET / HTTP/1.1\r\nHost: x\r\n{ok_field}p\r\n\r\n".encode()
                        ).startswith(b"HTTP/1.1 431 ")
    # -n shop: the master and each worker carry gunicorn's titles (setproctitle is installed).
    assert _cmdline(srv.pid) == "sluicegate: master [shop]"
    workers = wait_for(lambda: len(_children(srv.pid)) == 2 and _children(srv.pid),
                       "two workers")
    for pid in workers:
        wait_for(lambda: _cmdline(pid) == "sluicegate: worker [shop]",
                 f"worker {pid}'s title", context=lambda: _cmdline(pid))


def test_gunicorn_cmd_args_from_the_environment_are_flags_the_command_line_overrides(
        start_server, project):
    env = {"GUNICORN_CMD_ARGS": "--workers=2 --name=fromenv --threads 4 --worker-tmp-dir /dev/shm"}
    srv = start_server(None, "--threads", "2", "--pythonpath", "src", "webapp", cwd=project,
                       env=env)
    assert srv.request().body == b"webapp http"
    assert _cmdline(srv.pid) == "sluicegate: master [fromenv]"
    wait_for(lambda: len(_children(srv.pid)) == 2, "two workers")
    assert "GUNICORN_CMD_ARGS --worker-tmp-dir ignored:" in srv.log_text()
    # The command line's --threads 2 wins over the environment's 4; the environment's
    # --workers 2 over the configuration file's 3.
    import subprocess
    (project / "gunicorn.conf.py").write_text("workers = 3\n")
    penv = {k: v for k, v in os.environ.items() if not k.startswith("SLUICEGATE_")}
    penv.update(env, PYTHONPATH=str(ROOT / "python"))
    out = subprocess.run([sys.executable, "-m", "sluicegate", "--threads", "2", "--print-config"],
                         cwd=project, env=penv, capture_output=True, text=True,
                         timeout=STOP_TIMEOUT).stdout
    assert 'threads = "2"  # --threads' in out
    assert 'workers = "2"  # GUNICORN_CMD_ARGS --workers' in out
    bad = start_server(None, "webapp", cwd=project, env={"GUNICORN_CMD_ARGS": "--workers=lots"},
                       wait_ready=False)
    assert bad.wait_exit() == 2
    assert "GUNICORN_CMD_ARGS --workers 'lots': expected N or auto" in bad.log_text()


def test_name_without_setproctitle_sets_the_short_process_name(start_server, project):
    # A setproctitle that cannot be imported, ahead of the installed one on sys.path.
    shadow = project / "shadow" / "setproctitle"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed here')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(project / "shadow"), str(ROOT)])}
    srv = start_server(None, "--name", "shop", "--workers", "1", "--pythonpath", "src", "webapp",
                       cwd=project, env=env)
    assert _comm(srv.pid) == "master:shop"
    worker = wait_for(lambda: _children(srv.pid), "a worker")[0]
    wait_for(lambda: _comm(worker) == "worker:shop", "the worker's name",
             context=lambda: _comm(worker))
    assert "sluicegate: master" not in _cmdline(srv.pid)  # the command line is left alone
    single = start_server(None, "--name", "solo", "--pythonpath", "src", "webapp", cwd=project,
                          env=env)
    assert _comm(single.pid) == "server:solo"


def test_unix_bind_is_read_as_gunicorn_reads_it(start_server, project):
    (project / "tmp").mkdir()
    conf = project / "gunicorn.conf.py"
    conf.write_text('bind = "unix://tmp/x.sock"\npythonpath = "src"\nwsgi_app = "webapp"\n')
    srv = start_server(None, "-c", "gunicorn.conf.py", binds=[], cwd=project, wait_ready=False)
    srv.wait_log(r"Listening at: unix:tmp/x\.sock")
    assert (project / "tmp" / "x.sock").exists()  # ./tmp/x.sock, not /tmp/x.sock
    conn = _unix_get(str(project / "tmp" / "x.sock"))
    assert conn == b"webapp http"
    absolute = project / "abs.sock"
    srv2 = start_server(None, "--bind", f"unix://{absolute}", "--pythonpath", "src", "webapp",
                        binds=[], cwd=project)
    assert _unix_get(str(absolute)) == b"webapp http"
    srv.stop(), srv2.stop()


def _unix_get(path: str) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(STOP_TIMEOUT)
        s.connect(path)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.split(b"\r\n\r\n", 1)[1]


def test_reuse_port_lets_two_servers_share_a_port(start_server, project):
    first = start_server(None, "--reuse-port", "--pythonpath", "src", "webapp", cwd=project)
    port = first.port
    second = start_server(None, "--reuse-port", "--pythonpath", "src", "webapp", cwd=project,
                          binds=[f"127.0.0.1:{port}"])
    assert second.port == port
    assert second.request().body == b"webapp http"
    # Without it the same start fails: the address is in use.
    third = start_server(None, "--pythonpath", "src", "webapp", cwd=project,
                         binds=[f"127.0.0.1:{port}"], wait_ready=False)
    assert third.wait_exit() != 0
    assert "ddress already in use" in third.log_text()


def test_paste_loads_the_app_with_paste_deploy(start_server, project):
    (project / "src" / "pasteapp.py").write_text(textwrap.dedent('''
        import logging

        def factory(global_conf, greeting="hi"):
            def app(environ, start_response):
                logging.getLogger("pasteapp").warning("served %s", environ["PATH_INFO"])
                body = greeting.encode()
                start_response("200 OK", [("Content-Length", str(len(body)))])
                return [body]
            return app
    ''').lstrip())
    # A Pyramid-style file: the app, and logging sections gunicorn gives to fileConfig.
    (project / "app.ini").write_text(textwrap.dedent('''
        [app:main]
        use = call:pasteapp:factory
        greeting = from paste

        [loggers]
        keys = root, pasteapp

        [handlers]
        keys = file

        [formatters]
        keys = plain

        [logger_root]
        level = WARNING
        handlers =

        [logger_pasteapp]
        level = INFO
        handlers = file
        qualname = pasteapp

        [handler_file]
        class = FileHandler
        args = ('app.log', 'a')
        formatter = plain

        [formatter_plain]
        format = %(name)s: %(message)s
    ''').lstrip())
    srv = start_server(None, "--pythonpath", "src", "--paste", "app.ini", cwd=project)
    assert srv.request(path="/one").body == b"from paste"
    wait_for(lambda: "pasteapp: served /one" in _read(project / "app.log"), "the app's log line",
             context=lambda: _read(project / "app.log"))
    (project / "gunicorn.conf.py").write_text('paste = "app.ini"\npythonpath = "src"\n')
    srv2 = start_server(None, "-c", "gunicorn.conf.py", cwd=project)
    assert srv2.request().body == b"from paste"


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_secure_scheme_headers_from_a_conf_file_reach_the_app(start_server, project):
    (project / "gunicorn.conf.py").write_text(
        'secure_scheme_headers = {"X-FORWARDED-PROTO": "https"}\npythonpath = "src"\n')
    srv = start_server(None, "-c", "gunicorn.conf.py", "webapp", cwd=project)
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=STOP_TIMEOUT)
    conn.request("GET", "/", headers={"X-Forwarded-Proto": "https"})
    assert conn.getresponse().read() == b"webapp https"
    conn.close()


def test_gunicorn_conf_py_in_the_working_directory_is_read_as_gunicorn_reads_it(project):
    import subprocess

    (project / "gunicorn.conf.py").write_text('workers = 3\nwsgi_app = "webapp"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICEGATE_")}
    env["PYTHONPATH"] = str(ROOT / "python")

    def printed(*args: str) -> str:
        result = subprocess.run([sys.executable, "-m", "sluicegate", *args, "--print-config"],
                                cwd=project, env=env, capture_output=True, text=True,
                                timeout=STOP_TIMEOUT)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert "workers = 3  # gunicorn.conf.py, line 1: workers" in printed()
    assert "# workers: off  (default)" in printed("--config", "off")
    other = project / "other.toml"
    other.write_text("workers = 2\n")
    assert "workers = 2  #" in printed("-c", str(other))  # a named file, and only that one


@pytest.mark.parametrize("bind, kind, host", [
    ("unix://tmp/x.sock", "unix", "tmp/x.sock"),    # gunicorn: ./tmp/x.sock
    ("unix:///run/x.sock", "unix", "/run/x.sock"),
    ("unix:/run/x.sock", "unix", "/run/x.sock"),
    ("unix:x.sock", "unix", "x.sock"),
    ("tcp://127.0.0.1:9000", "tcp", "127.0.0.1"),
])
def test_bind_addresses_read_as_gunicorns_parse_address_reads_them(bind, kind, host):
    address = _cli_config("--bind", bind).bind[0]
    assert (address.kind, address.host) == (kind, host)


def test_fd_bind_is_refused_saying_what_to_use():
    with pytest.raises(OptionError, match=r"--bind 'fd://3': gunicorn's fd://N .*\(LISTEN_FDS\)"):
        _cli_config("--bind", "fd://3")


def test_limit_request_fields_0_and_http_protocols_h1_on_a_server(start_server, project):
    """gunicorn's --limit-request-fields 0 (its most, here no limit of its own) and
    --http-protocols h1 (HTTP/1.1 only: an HTTP/2 preface is answered 505)."""
    srv = start_server(None, "--limit-request-fields", "0", "--http-protocols", "h1",
                       "--pythonpath", "src", "webapp", cwd=project)
    many = "".join(f"X-F{i}: v\r\n" for i in range(150))  # past the default 100
    assert _raw_request(srv.port, f"GET / HTTP/1.1\r\nHost: x\r\n{many}\r\n".encode()
                        ).startswith(b"HTTP/1.1 200 ")
    assert _raw_request(srv.port, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").startswith(b"HTTP/1.1 505")
    default = start_server(None, "--pythonpath", "src", "webapp", cwd=project)
    assert _raw_request(default.port, f"GET / HTTP/1.1\r\nHost: x\r\n{many}\r\n".encode()
                        ).startswith(b"HTTP/1.1 431 ")
