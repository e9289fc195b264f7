"""uWSGI's request log lines (`--access-log-format uwsgi`, `--uwsgi-log-format`,
src/observe/uwsgi_format.rs), compared field by field with real uWSGI's for the same requests
to the same app: uWSGI with `http-socket` and its default line or a `log-format`, sluicegate
with the same. Left out of the comparison: the pid, the request's start time and its
duration (they differ between any two runs), and the count of "switches" (uWSGI counts its own
core's switches: 2 for a request whose body came in a later read than its head, which sluicegate,
with no such cores, always writes as 1).
"""

import http.client
import os
import re
import shutil
import signal
import subprocess
import tempfile

import pytest

from tests.conftest import PYTHON, ROOT
from tests.helpers import wait_for

UWSGI = shutil.which("uwsgi", path=os.path.dirname(PYTHON)) or shutil.which("uwsgi")

#: The requests: (method, target, extra headers, body).
REQUESTS = [
    ("GET", "/?u=alice", {"User-Agent": "test-agent/1.0", "Referer": "http://ref.test/p"}, None),
    ("POST", "/post", {"Content-Type": "application/x-www-form-urlencoded"}, b"a=1&b=22"),
    ("GET", "/missing", {"X-Twice": "one", "x-twice": "two"}, None),
    ("GET", "/caf%C3%A9/x?q=a%20b", {}, None),
]

#: A log-format naming uWSGI's variables (but the times and the pid, compared apart).
FORMAT = ("REQ %(addr) (%(user)) %(method) %(uri) %(proto) %(status) rsize=%(rsize) "
          "hsize=%(hsize) size=%(size) headers=%(headers) vars=%(vars) pkt=%(pktsize) "
          "cl=%(cl) host=%(host) ua=%(uagent) ref=%(referer) qs=%(var.QUERY_STRING) "
          "user=%(userid) wid=%(wid) core=%(core) sw=%(switches) m1=%(modifier1) "
          "werr=%(werr) | %(msecs) %(micros) %(pid) %(ltime) %(ctime) %(epoch)")

DEFAULT_LINE = re.compile(
    r"\[pid: (?P<pid>\d+)\|app: (?P<app>-?\d+)\|req: (?P<req>-?\d+/\d+)\] (?P<addr>\S*) "
    r"\((?P<user>[^)]*)\) \{(?P<vars>\d+) vars in (?P<pkt>\d+) bytes\} \[(?P<date>[^\]]+)\] "
    r"(?P<method>\S+) (?P<uri>\S+) => generated (?P<size>\d+) bytes in (?P<msecs>\d+) "
    r"(?P<unit>msecs|micros) "
    r"\((?P<proto>\S+) (?P<status>\d+)\) (?P<headers>\d+) headers in (?P<hsize>\d+) bytes "
    r"\((?P<switches>\d+) switches on core (?P<core>\d+)\)$")


def send_all(port):
    for method, target, headers, body in REQUESTS:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        c.putheader("Host", "logs.test")
        for k, v in headers.items():
            c.putheader(k, v)
        if body is not None:
            c.putheader("Content-Length", str(len(body)))
        c.endheaders(body)
        r = c.getresponse()
        r.read()
        c.close()


def five_digit_port():
    """A free port of five digits (both servers' SERVER_PORT is in the packet size)."""
    import socket
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if port >= 10000:
            return port


def uwsgi_lines(extra, marker):
    """Real uWSGI's request lines for REQUESTS (one process, a master, http-socket)."""
    tmp = tempfile.mkdtemp(prefix="sguwsgilog-")
    log = os.path.join(tmp, "uwsgi.log")
    port = five_digit_port()
    p = subprocess.Popen(
        [UWSGI, "--master", "--processes", "1", "--http-socket", f"127.0.0.1:{port}",
         "--module", "tests.apps.uwsgi_logged:app", "--chdir", str(ROOT), "--logto", log,
         *extra], cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        wait_for(lambda: os.path.exists(log) and "spawned uWSGI worker 1" in open(log).read(),
                 "uWSGI's worker")
        send_all(port)
        return wait_for(lambda: (lambda ls: ls if len(ls) == len(REQUESTS) else None)(
            [ln for ln in open(log).read().splitlines() if ln.startswith(marker)]),
            "uWSGI's request lines")
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(30)


def sluicegate_lines(start_server, extra, marker):
    log = os.path.join(tempfile.mkdtemp(prefix="sguwsgilog-"), "access.log")
    port = five_digit_port()
    srv = start_server("uwsgi_logged", "--workers", "1", "--uwsgi-module", "--access-log", log,
                       *extra, binds=[f"127.0.0.1:{port}"])
    send_all(srv.port)
    return wait_for(lambda: (lambda ls: ls if len(ls) == len(REQUESTS) else None)(
        [ln for ln in open(log).read().splitlines() if ln.startswith(marker)]
        if os.path.exists(log) else []), "sluicegate's request lines")


@pytest.mark.skipif(UWSGI is None, reason="uwsgi is not installed (requirements-dev.txt)")
def test_the_default_line_is_uwsgis(start_server):
    """uWSGI's default request line, the same fields for the same requests."""
    theirs = uwsgi_lines([], "[pid:")
    ours = sluicegate_lines(start_server, ["--access-log-format", "uwsgi"], "[pid:")
    for t, o in zip(theirs, ours):
        mt, mo = DEFAULT_LINE.match(t), DEFAULT_LINE.match(o)
        assert mt and mo, (t, o)
        t_fields = {k: v for k, v in mt.groupdict().items()
                    if k not in ("pid", "date", "msecs", "switches")}
        o_fields = {k: v for k, v in mo.groupdict().items()
                    if k not in ("pid", "date", "msecs", "switches")}
        assert o_fields == t_fields, f"\nuWSGI:      {t}\nsluicegate: {o}"
        assert len(mo["date"]) == len(mt["date"]) == 24


@pytest.mark.skipif(UWSGI is None, reason="uwsgi is not installed (requirements-dev.txt)")
def test_the_default_line_with_log_micros_is_uwsgis(start_server):
    """uWSGI's log-micros: the default line's time in microseconds, `in T micros`
    (`--access-log-format uwsgi-micros`), the same fields for the same requests."""
    theirs = uwsgi_lines(["--log-micros"], "[pid:")
    ours = sluicegate_lines(start_server, ["--access-log-format", "uwsgi-micros"], "[pid:")
    for t, o in zip(theirs, ours):
        mt, mo = DEFAULT_LINE.match(t), DEFAULT_LINE.match(o)
        assert mt and mo, (t, o)
        assert mt["unit"] == "micros", t
        t_fields = {k: v for k, v in mt.groupdict().items()
                    if k not in ("pid", "date", "msecs", "switches")}
        o_fields = {k: v for k, v in mo.groupdict().items()
                    if k not in ("pid", "date", "msecs", "switches")}
        assert o_fields == t_fields, f"\nuWSGI:      {t}\nsluicegate: {o}"


@pytest.mark.skipif(UWSGI is None, reason="uwsgi is not installed (requirements-dev.txt)")
def test_a_log_format_is_uwsgis(start_server):
    """A uWSGI log-format with its variables and an app's set_logvar value: the same text for
    the same requests, but the times and the pid (compared in shape only)."""
    theirs = uwsgi_lines(["--log-format", FORMAT], "REQ ")
    ours = sluicegate_lines(start_server, ["--uwsgi-log-format", FORMAT], "REQ ")
    for t, o in zip(theirs, ours):
        t_fixed, _, t_times = t.partition(" | ")
        o_fixed, _, o_times = o.partition(" | ")
        # %(switches): uWSGI counts one more when the body came in a read after the head's
        # (timing); sluicegate writes 1. Compared in shape.
        assert re.search(r" sw=\d+ ", t_fixed) and re.search(r" sw=1 ", o_fixed), o
        t_fixed = re.sub(r" sw=\d+ ", " sw=N ", t_fixed)
        o_fixed = re.sub(r" sw=\d+ ", " sw=N ", o_fixed)
        assert o_fixed == t_fixed, f"\nuWSGI:      {t}\nsluicegate: {o}"
        shape = re.compile(r"^\d+ \d+ \d+ \d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4} "
                           r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} \d+$")
        assert shape.match(t_times) and shape.match(o_times), (t_times, o_times)


def get(port, target, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", target, headers=headers or {})
    c.getresponse().read()
    c.close()


def lines_of(path, count):
    return wait_for(lambda: (lambda ls: ls if len(ls) >= count else None)(
        open(path).read().splitlines() if os.path.exists(path) else []),
        f"{count} line(s) in {path}")


def test_access_log_when_logs_only_the_listed_requests(start_server):
    """--access-log-when 4xx (uWSGI's disable-logging + log-4xx): the 200 sent first has no
    line, the 404 after it has one (one worker writes its lines in order)."""
    log = os.path.join(tempfile.mkdtemp(prefix="sguwsgilog-"), "access.log")
    srv = start_server("uwsgi_logged", "--workers", "1", "--uwsgi-module", "--access-log", log,
                       "--access-log-format", "uwsgi", "--access-log-when", "4xx")
    get(srv.port, "/first")
    get(srv.port, "/missing")
    lines = lines_of(log, 1)
    assert len(lines) == 1 and "GET /missing =>" in lines[0] and "(HTTP/1.1 404)" in lines[0]


def test_access_log_forwarded_for_gives_the_forwarded_address(start_server):
    """--access-log-forwarded-for (uWSGI's log-x-forwarded-for): the address of uWSGI's line is
    the request's X-Forwarded-For; a request without one keeps the peer's."""
    log = os.path.join(tempfile.mkdtemp(prefix="sguwsgilog-"), "access.log")
    srv = start_server("uwsgi_logged", "--workers", "1", "--uwsgi-module", "--access-log", log,
                       "--uwsgi-log-format", "%(addr) %(uri)", "--access-log-forwarded-for")
    get(srv.port, "/a", {"X-Forwarded-For": "203.0.113.7"})
    get(srv.port, "/b")
    assert lines_of(log, 2) == ["203.0.113.7 /a", "127.0.0.1 /b"]


def test_set_logvar_works_while_the_body_is_iterated_and_closed(start_server):
    """uwsgi.set_logvar from the response iterable, after the app returned (while the body is
    iterated and in its close()): the request is still the thread's (`_core.current_environ`),
    and the line has both values."""
    log = os.path.join(tempfile.mkdtemp(prefix="sguwsgilog-"), "access.log")
    srv = start_server("uwsgi_logged", "--workers", "1", "--uwsgi-module", "--access-log", log,
                       "--uwsgi-log-format", "%(uri) %(userid) %(late)")
    get(srv.port, "/late?u=bob")
    get(srv.port, "/plain")
    assert lines_of(log, 2) == ["/late?u=bob bob closed", "/plain - -"]


def test_touch_logreopen_reopens_the_access_log(start_server):
    """--touch-logreopen FILE: touching FILE has the workers reopen their logs, so that after a
    rotation (the file moved away) the next line goes to a new file at the path."""
    tmp = tempfile.mkdtemp(prefix="sguwsgilog-")
    log, touch = os.path.join(tmp, "access.log"), os.path.join(tmp, "reopen")
    open(touch, "w").close()
    srv = start_server("uwsgi_logged", "--workers", "1", "--access-log", log, "--uwsgi-module",
                       "--access-log-format", "uwsgi", "--touch-logreopen", touch)
    get(srv.port, "/before")
    lines_of(log, 1)
    os.rename(log, log + ".1")
    mark = srv.log_mark()
    st = os.stat(touch)
    os.utime(touch, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    srv.wait_log(r"touch-logreopen\): workers reopen their log files", since=mark)
    wait_for(lambda: os.path.exists(log), "the access log opened again at its path")
    get(srv.port, "/after")
    assert "GET /after =>" in lines_of(log, 1)[0]
    assert "GET /before =>" in open(log + ".1").read()


def test_log_reopen_reopens_the_logs_on_a_reload(start_server):
    """--log-reopen (uWSGI's log-reopen): a reload (HUP) reopens the log files too."""
    log = os.path.join(tempfile.mkdtemp(prefix="sguwsgilog-"), "access.log")
    srv = start_server("uwsgi_logged", "--workers", "1", "--access-log", log, "--log-reopen")
    mark = srv.log_mark()
    srv.signal(signal.SIGHUP)
    srv.wait_log(r"SIGHUP with --log-reopen: workers reopen their log files", since=mark)


@pytest.mark.parametrize("value, shape", [
    ("on", r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}"),
    ("%Y/%m/%d", r"\d{4}/\d\d/\d\d"),
])
def test_log_date_starts_each_error_log_line_with_the_date(start_server, value, shape):
    """--log-date (uWSGI's log-date): `DATE - ` before each error log line, in C's ctime form
    for `on`, else in the strftime format given."""
    srv = start_server("hello", "--log-date", value)
    line = next(ln for ln in srv.log_text().splitlines() if "Listening at:" in ln)
    assert re.match(shape + r" - \[\d+\] \[INFO\] Listening at: http://", line), line
