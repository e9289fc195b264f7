"""`--reload`: a change to the app's code replaces the workers; code with a
syntax error leaves the old workers serving and logs the error; the next good change reloads;
a `--reload-extra` file triggers it too. Real files in a temporary app directory, real
inotify (watchfiles), a real server process."""


import pytest

from tests.helpers import wait_for, write_whole

pytest.importorskip("watchfiles")

APP = """
def app(environ, start_response):
    body = {body!r}
    start_response('200 OK', [('Content-Length', str(len(body)))])
    return [body]
"""


write = write_whole


def wait_for_body(srv, expected, timeout=30):
    last = {}

    def answered() -> bool:
        last["body"] = srv.request("GET", "/").body
        return last["body"] == expected

    wait_for(answered, f"the answer {expected!r}", timeout, interval=0.05,
             context=lambda: f"still {last.get('body')!r}\n{srv.log_text()[-2000:]}")


def test_a_code_change_reloads_and_a_syntax_error_keeps_the_old_workers(start_server, tmp_path):
    module = tmp_path / "devapp.py"
    write(module, APP.format(body=b"one"))
    srv = start_server(None, "--reload", "devapp:app", cwd=tmp_path)
    assert srv.request("GET", "/").body == b"one"

    write(module, APP.format(body=b"two"))
    wait_for_body(srv, b"two")
    srv.wait_log(r"Code changed \(devapp.py\)")

    mark = srv.log_mark()
    write(module, "def app(environ, start_response)\n    return []\n")  # a syntax error
    srv.wait_log(r"Reload abandoned: the old workers keep serving", since=mark)
    assert "SyntaxError" in srv.log_since(mark)
    assert srv.request("GET", "/").body == b"two"
    assert srv.alive()

    write(module, APP.format(body=b"three"))
    wait_for_body(srv, b"three")


def test_a_reload_extra_file_triggers_a_reload(start_server, tmp_path):
    write(tmp_path / "devapp.py", APP.format(body=b"same"))
    extra = tmp_path / "settings.ini"
    extra.write_text("a = 1\n")
    srv = start_server(None, "--reload", "--reload-extra", str(extra), "devapp:app",
                       cwd=tmp_path)
    first = srv.log_text().count("ready")
    write(extra, "a = 2\n")
    srv.wait_log(r"Code changed \(settings.ini\)")
    srv.wait_log(r"Reload done")
    assert srv.log_text().count("ready") > first


def test_a_reload_with_nothing_changed_in_the_options_says_no_option_changed(
        start_server, tmp_path):
    """`--reload` without `--workers` runs one worker; reading the options again gave no
    worker count, and the first reload logged `configuration re-read (changed: workers)`."""
    module = tmp_path / "devapp.py"
    write(module, APP.format(body=b"one"))
    srv = start_server(None, "--reload", "devapp:app", cwd=tmp_path)
    mark = srv.log_mark()
    write(module, APP.format(body=b"two"))
    wait_for_body(srv, b"two")
    srv.wait_log(r"Reload done", since=mark)
    log = srv.log_since(mark)
    assert "configuration re-read" not in log, log
    assert "starting 1 new worker(s)" in log, log
