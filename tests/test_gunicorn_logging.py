"""Logging as gunicorn configures it, over real servers: a `logconfig_dict` merged into
gunicorn's defaults (no "version" needed, built on `gunicorn.glogging.CONFIG_DEFAULTS` as real
config files do), `--log-config` ini files and `--log-config-json` files naming gunicorn's
loggers (`gunicorn.error`, `gunicorn.access`), whose handlers then get the server's error and
access lines, and `--log-syslog` to a real unix datagram socket this test binds.
"""

import json
import re
import socket
import textwrap

import pytest

from tests.helpers import wait_for


def file_text(path):
    return path.read_text() if path.exists() else ""


def request(server, path="/hello"):
    assert server.request("GET", path).status == 200


def test_logconfig_dict_built_on_gunicorns_defaults_in_a_config_file(start_server, tmp_path):
    """A gunicorn.conf.py that imports gunicorn.glogging and adds handlers to its loggers,
    without "version": the error lines reach gunicorn.error's file, the access lines
    gunicorn.access's (and no more go to standard error or out by our own handlers)."""
    pytest.importorskip("gunicorn.glogging")
    errors, access = tmp_path / "error.log", tmp_path / "access.log"
    conf = tmp_path / "gunicorn.conf.py"
    conf.write_text(textwrap.dedent(f"""
        from gunicorn.glogging import CONFIG_DEFAULTS

        loggers = dict(CONFIG_DEFAULTS["loggers"])
        loggers["gunicorn.error"] = dict(loggers["gunicorn.error"], handlers=["error_file"],
                                         propagate=False)
        loggers["gunicorn.access"] = dict(loggers["gunicorn.access"], handlers=["access_file"],
                                          propagate=False)
        logconfig_dict = {{
            "loggers": loggers,
            "handlers": dict(CONFIG_DEFAULTS["handlers"],
                             error_file={{"class": "logging.FileHandler",
                                          "filename": {str(errors)!r},
                                          "formatter": "generic"}},
                             access_file={{"class": "logging.FileHandler",
                                           "filename": {str(access)!r},
                                           "formatter": "access"}}),
            "formatters": dict(CONFIG_DEFAULTS["formatters"],
                               access={{"format": "ACCESS %(name)s %(message)s"}}),
        }}
        access_log_format = '%(h)s "%(r)s" %(s)s'
    """))
    server = start_server("hello", "--config", str(conf), "--workers", "1", wait_ready=False)
    wait_for(lambda: "Listening at: " in file_text(errors), "the readiness line in error.log",
             context=lambda: server.log_text())
    port = int(re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", errors.read_text())[1])
    server.addresses.append(("tcp", ("127.0.0.1", port)))
    request(server)
    wait_for(lambda: 'ACCESS gunicorn.access 127.0.0.1 "GET /hello HTTP/1.1" 200'
             in file_text(access), "the access line in access.log", context=lambda: file_text(
                 access) + server.log_text() + server.stdout_text())
    assert re.search(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}\] \[\d+\] \[INFO\] "
                     r"Booting worker with pid \d+$", errors.read_text(), re.M), errors.read_text()
    assert "Listening at" not in server.log_text()  # ours went to gunicorn.error's file
    assert "GET /hello" not in server.stdout_text()


def ini(errors, access):
    return textwrap.dedent(f"""
        [loggers]
        keys=root, gunicorn.error, gunicorn.access

        [handlers]
        keys=error_file, access_file

        [formatters]
        keys=generic, access

        [logger_root]
        level=INFO
        handlers=

        [logger_gunicorn.error]
        level=INFO
        handlers=error_file
        propagate=0
        qualname=gunicorn.error

        [logger_gunicorn.access]
        level=INFO
        handlers=access_file
        propagate=0
        qualname=gunicorn.access

        [handler_error_file]
        class=logging.FileHandler
        formatter=generic
        args=({str(errors)!r},)

        [handler_access_file]
        class=logging.FileHandler
        formatter=access
        args=({str(access)!r},)

        [formatter_generic]
        format=INI %(name)s [%(levelname)s] %(message)s

        [formatter_access]
        format=INI-ACCESS %(message)s
    """)


@pytest.mark.parametrize("workers", [(), ("--workers", "2")], ids=["single", "workers"])
def test_log_config_ini_naming_gunicorns_loggers_fills_both_files(start_server, tmp_path,
                                                                   workers):
    """Regression: an ini file naming gunicorn.error and gunicorn.access was accepted and
    both files stayed empty."""
    errors, access = tmp_path / "error.log", tmp_path / "access.log"
    conf = tmp_path / "logging.ini"
    conf.write_text(ini(errors, access))
    server = start_server("hello", "--log-config", str(conf), *workers, wait_ready=False)
    wait_for(lambda: "Listening at: " in file_text(errors), "the readiness line in error.log",
             context=lambda: server.log_text())
    port = int(re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", errors.read_text())[1])
    server.addresses.append(("tcp", ("127.0.0.1", port)))
    for _ in range(3):
        request(server)
    wait_for(lambda: file_text(access).count("INI-ACCESS 127.0.0.1 - - [") == 3,
             "three access lines in access.log", context=lambda: file_text(access))
    assert "INI gunicorn.error [INFO] Listening at: http://127.0.0.1:" in errors.read_text()


def test_log_config_json_file_merged_into_gunicorns_defaults(start_server, tmp_path):
    access = tmp_path / "access.log"
    conf = tmp_path / "logging.json"
    conf.write_text(json.dumps({
        "loggers": {"gunicorn.access": {"handlers": ["file"], "level": "INFO",
                                        "propagate": False}},
        "handlers": {"file": {"class": "logging.FileHandler", "filename": str(access)},
                     "console": {"class": "logging.StreamHandler",
                                 "stream": "ext://sys.stderr"}},
    }))
    server = start_server("hello", "--log-config-json", str(conf), "--access-logformat",
                          '%(m)s %(U)s %(s)s')
    request(server, "/json-config")
    wait_for(lambda: "GET /json-config 200\n" in file_text(access), "the access line",
             context=lambda: file_text(access) + server.log_text())


def test_logconfig_dict_merges_as_gunicorn_merges():
    """The defaults are gunicorn's, and the merge is gunicorn's shallow update."""
    glogging = pytest.importorskip("gunicorn.glogging")
    import sys
    from tests.conftest import ROOT
    sys.path.insert(0, str(ROOT / "python"))
    from sluicegate.gunicorn_logging import CONFIG_DEFAULTS, merged

    assert CONFIG_DEFAULTS == glogging.CONFIG_DEFAULTS
    given = {"loggers": {"x": {}}, "root": {"level": "DEBUG"}}
    theirs = glogging.CONFIG_DEFAULTS.copy()
    theirs.update(given)
    assert merged(given) == theirs


def test_log_syslog_to_a_unix_datagram_socket(start_server, tmp_path):
    """--log-syslog with gunicorn's flags: the error and access lines arrive on the socket as
    gunicorn sends them: <PRI>gunicorn.PREFIX.error: [PID] MESSAGE (local3, info: 19*8+6)."""
    path = str(tmp_path / "log.sock")
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(path)
    receiver.settimeout(10)
    try:
        server = start_server("hello", "--log-syslog", "--log-syslog-to", f"unix://{path}#dgram",
                              "--log-syslog-prefix", "shop", "--log-syslog-facility", "local3",
                              "--access-logformat", '%(h)s "%(r)s" %(s)s')
        request(server, "/to-syslog")
        got = []
        while not any(b"gunicorn.shop.access:" in d for d in got):
            got.append(receiver.recv(65536))
    finally:
        receiver.close()
    pid = server.pid
    assert f"<158>gunicorn.shop.error: [{pid}] Listening at: http://127.0.0.1:{server.port}" \
        .encode() in [d.rstrip(b"\x00") for d in got], got
    assert f'<158>gunicorn.shop.access: [{pid}] 127.0.0.1 "GET /to-syslog HTTP/1.1" 200\x00' \
        .encode() in got, got
    assert "Listening at:" in server.log_text()  # standard error keeps its lines too
