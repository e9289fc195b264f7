"""The server's own log lines survive an app that calls `logging.config.dictConfig` with
`disable_existing_loggers` left True (regression, fixed in 7eed96b): the start and
`Listening at` lines (the fixture waits for them: without the fix it times out), an app error,
signals, and the shutdown lines, in a single process and with workers."""

import signal

import pytest


@pytest.mark.parametrize("options", [(), ("--workers", "2")])
def test_server_log_lines_survive_the_apps_dictconfig(start_server, options):
    srv = start_server("reconfigures_logging", *options)
    assert srv.request("GET", "/").body == b"ok"
    assert srv.request("GET", "/fail").status == 500
    srv.wait_log(r"app failure for the log test")
    srv.signal(signal.SIGTERM)
    assert srv.wait_exit() == 0
    text = srv.log_text()
    assert "Received SIGTERM" in text
    assert "Shutdown complete" in text
