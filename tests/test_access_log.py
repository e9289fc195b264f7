"""The access log: one line per request in gunicorn's default format
``%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"``, to a file or to stdout
(``--access-log -``). The log may be written asynchronously, so tests poll (bounded)."""

import fcntl
import os
import re
import signal
import struct
import termios

import pytest

from tests.http_util import Conn, request_bytes, wait_for

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux

LINE = re.compile(r'^(?P<h>\S+) (?P<l>\S+) (?P<u>\S+) \[(?P<t>[^\]]+)\] "(?P<r>[^"]*)" '
                  r'(?P<s>\d{3}) (?P<b>\d+|-) "(?P<f>[^"]*)" "(?P<a>[^"]*)"$')
GUNICORN_TIME = re.compile(r"^\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}$")


def read_lines(path):
    try:
        with open(path) as f:
            return [line.rstrip("\n") for line in f if line.strip()]
    except FileNotFoundError:
        return []


def test_access_log_file_has_one_gunicorn_style_line_per_request(start_server, tmp_path):
    log = tmp_path / "access.log"
    srv = start_server("hello", "--access-log", str(log))
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/some/path?x=1", headers=[
            ("Referer", "http://ref.example/page"), ("User-Agent", "sgtest-agent/1.0")]))
        assert c.read_response().body == b"path=/some/path"
        c.send(request_bytes("POST", "/second", body=b"abc", version="HTTP/1.1"))
        assert c.read_response().status == 200
    lines = wait_for(lambda: len(read_lines(log)) >= 2 and read_lines(log),
                     "two access log lines")
    assert len(lines) == 2, lines
    m = LINE.match(lines[0])
    assert m, f"not in gunicorn's default format: {lines[0]!r}"
    assert m["h"] == "127.0.0.1"
    assert m["l"] == "-" and m["u"] == "-"
    assert GUNICORN_TIME.match(m["t"]), m["t"]
    assert m["r"] == "GET /some/path?x=1 HTTP/1.1"
    assert m["s"] == "200"
    assert m["b"] == str(len(b"path=/some/path"))
    assert m["f"] == "http://ref.example/page"
    assert m["a"] == "sgtest-agent/1.0"
    m2 = LINE.match(lines[1])
    assert m2 and m2["r"] == "POST /second HTTP/1.1" and m2["s"] == "200"
    assert m2["b"] == str(len(b"path=/second"))
    assert m2["f"] == "-" and m2["a"] == "-"


def test_access_log_records_error_statuses(start_server, tmp_path):
    log = tmp_path / "access.log"
    srv = start_server("errors", "--access-log", str(log))
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/raise_before"))
        assert c.read_response().status == 500
    lines = wait_for(lambda: read_lines(log), "an access log line")
    m = LINE.match(lines[0])
    assert m and m["r"] == "GET /raise_before HTTP/1.1" and m["s"] == "500"


def test_access_log_to_stdout(start_server):
    srv = start_server("hello", "--access-log", "-")
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/to-stdout"))
        assert c.read_response().status == 200
    m = srv.wait_log(r'"GET /to-stdout HTTP/1\.1" 200 ', stream="stdout")
    assert LINE.match(m.string), m.string


# The format with quoted fields that may hold escapes (\" and \\).
Q = r'"((?:[^"\\]|\\.)*)"'
LINE_ESCAPED = re.compile(r'^(\S+) - - \[[^\]]+\] ' + Q + r' (\d{3}) (\d+|-) ' + Q + ' ' + Q + '$')
# Fields escaped as in the log: backslash-escaped quote and backslash, \xHH elsewhere.
ESCAPED_FIELD = re.compile(r'^(?:[\x20-\x21\x23-\x5b\x5d-\x7e]|\\"|\\\\|\\x[0-9a-f]{2})*$')


def test_every_byte_the_parser_accepts_in_a_target_is_escaped_in_the_log(start_server, tmp_path):
    """Regression (5edbee8): a '"' in the request target was logged unescaped (the User-Agent
    was escaped), so a client could close the request field and forge the rest of the line."""
    log = tmp_path / "access.log"
    srv = start_server("hello", "--access-log", str(log))
    accepted = []
    refused = []  # answered 400: logged too, with no fields (see the test of refused requests)
    for b in range(256):
        raw = b"GET /a" + bytes([b]) + b"z HTTP/1.1\r\nHost: x\r\nUser-Agent: u\"a\r\n\r\n"
        with Conn.open(srv.port) as c:
            c.send(raw)
            try:
                resp = c.read_response()
            except AssertionError:
                continue  # closed without an answer: refused
        (refused if resp.status == 400 else accepted).append(b)
    assert 0x22 in accepted or 0x7f in accepted or any(b >= 0x80 for b in accepted), accepted
    answered = len(accepted) + len(refused)
    lines = wait_for(lambda: len(read_lines(log)) >= answered and read_lines(log),
                     f"{answered} access log lines")
    assert len(lines) == answered, "one line per request, whatever bytes it carried"
    agents = []
    for line in lines:
        m = LINE_ESCAPED.match(line)
        assert m, f"a line the format cannot read: {line!r}"
        request, agent = m.group(2), m.group(6)
        assert ESCAPED_FIELD.match(request) and ESCAPED_FIELD.match(agent), line
        agents.append(agent)
    assert sorted(agents) == sorted(['u\\"a'] * len(accepted) + ["-"] * len(refused))


def test_access_log_off_writes_no_file_and_no_lines(start_server, tmp_path):
    # --help shows the default as "off"; saying it must not create a file named "off".
    srv = start_server("hello", "--access-log", "off", cwd=tmp_path)
    with Conn.open(srv.port) as c:
        c.send(request_bytes("GET", "/not-logged"))
        assert c.read_response().status == 200
    srv.stop()
    assert not (tmp_path / "off").exists()
    assert "/not-logged" not in srv.log_text() + srv.stdout_text()


def test_requests_refused_by_the_server_itself_are_in_the_access_log(start_server, tmp_path):
    """Regression: requests the loop refused itself (a bad request line, an unsupported
    version, a head too slow to come) were answered but never logged: an operator counting
    4xx in the access log saw none of them. Each now has its line, with its status and as
    much of its request line as came."""
    log = tmp_path / "access.log"
    srv = start_server("hello", "--access-log", str(log), "--header-timeout", "1")
    with Conn.open(srv.port) as c:
        c.send(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
        assert c.read_response().status == 200
        c.send(b"GET /bad\x01line?q=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert c.read_response().status == 400
    with Conn.open(srv.port) as c:
        c.send(b"GET /v HTTP/2.0\r\nHost: x\r\n\r\n")
        assert c.read_response().status == 505
    with Conn.open(srv.port) as c:
        c.send(b"GET /slow HTTP/1.1\r\nHost: x\r\n")  # and nothing more: 408
        assert c.read_response().status == 408
    lines = wait_for(lambda: len(read_lines(log)) >= 4 and read_lines(log), "four lines")
    parsed = [LINE_ESCAPED.match(line) for line in lines]
    assert all(parsed), lines
    got = [(m[2], m[3]) for m in parsed]
    assert got == [("GET /ok HTTP/1.1", "200"), ("GET /bad\\x01line?q=1 HTTP/1.1", "400"),
                   ("GET /v HTTP/1.1", "505"), ("GET /slow HTTP/1.1", "408")], lines
    # (The protocol field has two values, HTTP/1.0 and HTTP/1.1: a refused request line is
    # logged as 1.1 unless it said 1.0.)
    assert all(m[1] == "127.0.0.1" for m in parsed)
    # The body of each error answer is counted as sent.
    assert all(int(m[4]) > 0 for m in parsed[1:]), lines


def pipe_bytes(fd: int) -> int:
    """Bytes waiting in the pipe whose read end is `fd` (FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


@pytest.mark.parametrize("workers", [(), ("--workers", "1")], ids=["single", "worker"])
def test_a_stop_does_not_wait_for_an_access_log_reader_that_reads_nothing(
        start_server, tmp_path, workers):
    """Regression: a graceful stop waited behind an access log pipe nobody read (17.6 s, and
    for ever with a reader that never reads): the log writer blocked in `write`, and the stop
    in the flush behind it. The stop now gives the writer what is left of the graceful timeout,
    then counts every line it could not write as dropped and says how many. Nothing is lost
    unaccounted: the lines in the pipe and the lines dropped add up to the requests."""
    fifo = tmp_path / "access.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # held open, never read until the end
    try:
        fcntl.fcntl(reader, F_SETPIPE_SZ, 4096)  # one page: a few lines fill it
        srv = start_server("hello", "--access-log", str(fifo), "--graceful-timeout", "1",
                           *workers)
        requests = 200
        with Conn.open(srv.port) as c:
            for i in range(requests):
                c.send(request_bytes("GET", f"/line-{i}-" + "x" * 100))
                assert c.read_response().status == 200
        wait_for(lambda: pipe_bytes(reader) > 0, "the first lines in the pipe")
        srv.signal(signal.SIGTERM)
        assert srv.wait_exit() == 0, srv.log_text()
        m = srv.wait_log(r"the access log took no more lines .*: (\d+) line\(s\) dropped")
        fcntl.fcntl(reader, fcntl.F_SETFL, 0)
        in_pipe = b""
        while pipe_bytes(reader):
            in_pipe += os.read(reader, 65536)
    finally:
        os.close(reader)
    assert in_pipe.endswith(b"\n") and in_pipe.count(b"\n") < requests
    assert in_pipe.count(b"\n") + int(m[1]) == requests, (in_pipe.count(b"\n"), m[0])
