"""gunicorn's access log format, side by side with gunicorn itself: the same requests, sent as
the same bytes to a real gunicorn (from requirements-dev.txt) and to sluicegate, each given the
same format (gunicorn's default, one on the command line with every atom, one in a gunicorn
config file), must give the same lines, byte for byte, but for the atoms that measure time or
name the process (t, T, D, M, L, p), which are masked in both before comparing.
"""

import re
from pathlib import Path

import pytest

from tests.conftest import PYTHON, ServerProcess
from tests.http_util import Conn, request_bytes, wait_for

GUNICORN = Path(PYTHON).parent / "gunicorn"
APP = "tests.apps.access_atoms:app"

GUNICORN_DEFAULT = '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"'
#: Every atom, each request and response header kind, unknown names, a literal '%'.
EVERY_ATOM = ('%(h)s|%(l)s|%(u)s|"%(r)s"|%(m)s|%(U)s|%(q)s|%(H)s|%(s)s|%(B)s|%(b)s|"%(f)s"|'
              '"%(a)s"|%({x-dup}i)s|%({User-Agent}i)s|%({X-Out}o)s|%({content-type}o)s|'
              '%({missing}i)s|%({missing}o)s|%(zz)s|<<%(T)s>><<%(D)s>><<%(M)s>><<%(L)s>>'
              '<<%(p)s>><<%(t)s>>|100%%')
#: Environ atoms, widths, precisions and numbers, read from a gunicorn config file. (Not
#: `%({HTTP_X_DUP}e)s` of a repeated header: sluicegate's environ joins the values with ", ",
#: gunicorn's with ",", a difference of the environ the app sees, not of the log.)
IN_A_FILE = ('%(h)-15s %({REQUEST_METHOD}e)s %({PATH_INFO}e)s %({QUERY_STRING}e)s '
             '%({RAW_URI}e)s %({SERVER_PROTOCOL}e)s %({HTTP_REFERER}e)s %({CONTENT_TYPE}e)s '
             '%({content_length}e)s %({REMOTE_ADDR}e)s %(s)5s %(B)08d %(a).10s <<%(D)d>> '
             '%({x_app_tag}e)s %({X_APP_COUNT}e)s %({wsgi.url_scheme}e)s %({nothing}e)s')

REQUESTS = [
    request_bytes("GET", "/"),
    request_bytes("GET", "/a%20b/%C3%A9?x=1&y=%22q%22&out=given", headers=[
        ("User-Agent", 'Mozilla/5.0 (X11; "quoted")'), ("Referer", "https://ref.example/p?q=1"),
        ("Authorization", "Basic Ym9iOnNlY3JldA=="), ("X-Dup", "first"), ("X-Dup", "second")]),
    request_bytes("POST", "/form?status=201&size=0", headers=[
        ("Content-Type", "application/x-www-form-urlencoded"), ("User-Agent", "curl/8.5.0")],
        body=b"a=1&b=2"),
    request_bytes("HEAD", "/head?size=7"),
    request_bytes("GET", "/missing?status=404&size=9", version="HTTP/1.0", host=None),
    request_bytes("DELETE", "/item/7?status=500", headers=[
        ("Authorization", "Bearer not-basic"), ("User-Agent", "é-agent")]),
]

TIME_ATOM = re.compile(r"\[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\]")
MARKED = re.compile(r"<<[^>]*>>")


def masked(line: str) -> str:
    return MARKED.sub("<<>>", TIME_ATOM.sub("[TIME]", line))


def send_all(port: int) -> None:
    for raw in REQUESTS:
        with Conn.open(port) as c:
            c.send(raw)
            c.read_response(method=raw.split(b" ", 1)[0].decode())


def run_and_collect(server: ServerProcess, count: int):
    send_all(server.port)
    wait_for(lambda: len(server.stdout_lines) >= count, f"{count} access lines",
             context=lambda: server.stdout_text() + server.log_text())
    return [masked(line) for line in server.stdout_lines[:count]]


def gunicorn(*args: str) -> ServerProcess:
    return ServerProcess(None, command=[str(GUNICORN), "--bind", "127.0.0.1:0",
                                        "--access-logfile", "-", *args, APP])


def sluicegate(*args: str) -> ServerProcess:
    return ServerProcess(None, command=[PYTHON, "-m", "sluicegate", "--bind", "127.0.0.1:0",
                                        "--access-log", "-", *args, APP])


def both_lines(gunicorn_args, sluicegate_args):
    if not GUNICORN.exists():
        pytest.skip("gunicorn is not installed in .venv (./dev build installs it)")
    out = []
    for start, args in ((gunicorn, gunicorn_args), (sluicegate, sluicegate_args)):
        server = start(*args)
        try:
            out.append(run_and_collect(server, len(REQUESTS)))
        finally:
            server.stop()
    return out


def test_gunicorns_default_format_gives_gunicorns_lines():
    theirs, ours = both_lines([], ["--access-logformat", GUNICORN_DEFAULT])
    assert ours == theirs
    # What the comparison covers: a Basic user, quotes escaped, '-' for absent fields.
    assert any(line.startswith('127.0.0.1 - bob [TIME] "GET /a%20b/%C3%A9?x=1&y=%22q%22&out='
                               'given HTTP/1.1" 200 5 "https://ref.example/p?q=1" '
                               '"Mozilla/5.0 (X11; \\"quoted\\")"') for line in ours), ours
    assert '127.0.0.1 - - [TIME] "HEAD /head?size=7 HTTP/1.1" 200 0 "-" "-"' in ours


def test_every_atom_on_the_command_line_gives_gunicorns_lines():
    theirs, ours = both_lines(["--access-logformat", EVERY_ATOM],
                              ["--access-logformat", EVERY_ATOM])
    assert ours == theirs
    assert any("|/a b/Ã©|x=1&y=%22q%22&out=given|" in line and "|second|" in line
               and "|given|text/plain; charset=utf-8|-|-|-|" in line for line in ours), ours


def test_a_format_in_a_gunicorn_config_file_gives_gunicorns_lines(tmp_path):
    conf = tmp_path / "gunicorn.conf.py"
    conf.write_text(f"access_log_format = {IN_A_FILE!r}\n")
    theirs, ours = both_lines(["-c", str(conf)], ["--config", str(conf)])
    assert ours == theirs
    assert any(" https://ref.example/p?q=1 " in line and "00000005" in line for line in ours), ours
    # Variables the app set in its environ, read as it left them ('"' escaped in text only).
    assert any(line.endswith(' tag \\"/form\\" 2 http -') for line in ours), ours


def test_a_format_gunicorn_cannot_use_is_refused_at_start():
    server = ServerProcess(None, command=[PYTHON, "-m", "sluicegate", "--bind", "127.0.0.1:0",
                                          "--access-logformat", "%(s)d", APP], wait_ready=False)
    assert server.wait_exit() == 2
    assert "is text, and %d of text fails in gunicorn too" in server.log_text()
